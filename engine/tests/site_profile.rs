//! The site profile is chosen when a site is created and stored with it: a site created with
//! `nick` stays Nick's, a default site is Plone's, and asking an existing Plone site for the
//! Nick profile is refused (the data it holds is written in Plone's names).

use engine::{Engine, EngineError, EngineOptions, MemStore, SiteProfile, SiteSetup};

fn site(profiles: &[&str]) -> Engine<MemStore> {
    let e = Engine::new(MemStore::new(), EngineOptions::for_tests()).unwrap();
    let mut setup = SiteSetup::new("secret");
    setup.profiles = profiles.iter().map(|p| p.to_string()).collect();
    e.create_site(&setup).unwrap();
    e
}

#[test]
fn a_default_site_is_plones() {
    assert_eq!(site(&[]).site_profile().unwrap(), SiteProfile::Plone);
    assert_eq!(
        site(&["multilingual"]).site_profile().unwrap(),
        SiteProfile::Plone
    );
}

#[test]
fn a_site_created_with_nick_stays_nicks() {
    let e = site(&["nick", "multilingual-content"]);
    assert_eq!(e.site_profile().unwrap(), SiteProfile::Nick);
    // Starting again with the same profiles (what a host does on every start) is accepted.
    e.configure_languages(&["nick".into()], &[]).unwrap();
    // And without the flag the site keeps its profile.
    e.configure_languages(&[], &["en".into()]).unwrap();
    assert_eq!(e.site_profile().unwrap(), SiteProfile::Nick);
}

#[test]
fn nick_cannot_be_added_to_an_existing_plone_site() {
    let e = site(&[]);
    let err = e
        .configure_languages(&["nick".into()], &[])
        .expect_err("a Plone site refuses the nick profile");
    assert!(matches!(err, EngineError::Conflict(_)), "{err:?}");
    assert_eq!(e.site_profile().unwrap(), SiteProfile::Plone);
}
