//! A new Nick site's languages: Nick's three (English, Dutch, Swedish) when the host names none,
//! and the default language the host chose stays the default (offered too when it is another
//! one); languages the host names are taken as they are.

use engine::{Engine, EngineOptions, MemStore, Method, Request, SiteSetup};
use serde_json::json;

const BASE: &str = "http://localhost:8080";

fn site(language: &str, languages: &[&str]) -> Engine<MemStore> {
    let e = Engine::new(MemStore::new(), EngineOptions::for_tests()).unwrap();
    let mut setup = SiteSetup::new("secret");
    setup.profiles = vec!["nick".into()];
    setup.language = language.into();
    setup.languages = languages.iter().map(|l| l.to_string()).collect();
    e.create_site(&setup).unwrap();
    e
}

fn languages(e: &Engine<MemStore>) -> (serde_json::Value, serde_json::Value) {
    let r = e.handle(Request::new(Method::Get, "/@site", BASE));
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    let body = r.json_body();
    (
        body["plone.available_languages"].clone(),
        body["plone.default_language"].clone(),
    )
}

#[test]
fn nicks_three_languages_by_default() {
    assert_eq!(
        languages(&site("en", &[])),
        (json!(["en", "nl", "sv"]), json!("en"))
    );
}

#[test]
fn another_default_language_is_kept_and_offered() {
    assert_eq!(
        languages(&site("de", &[])),
        (json!(["de", "en", "nl", "sv"]), json!("de"))
    );
}

#[test]
fn the_hosts_languages_are_taken_as_they_are() {
    assert_eq!(
        languages(&site("en", &["fr", "en"])),
        (json!(["fr", "en"]), json!("fr"))
    );
}
