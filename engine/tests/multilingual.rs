//! The engine API hosts call for multilingual sites (`SiteSetup::profiles` / `languages`,
//! `Engine::configure_languages`) and the translation-group bookkeeping that scenarios cannot see
//! (cleanup on delete, language changes). The HTTP behaviour is pinned by `tests/scenarios/i6_*`.

use engine::{Engine, EngineOptions, MemStore, Method, Request, Response, SiteSetup};
use serde_json::{json, Value};

const BASE: &str = "http://localhost:8080";
const ADMIN: &str = "Basic YWRtaW46c2VjcmV0";

fn send(e: &Engine<MemStore>, method: Method, path: &str, body: Option<Value>) -> Response {
    let mut req = Request::new(method, path, BASE).header("Authorization", ADMIN);
    if let Some(b) = body {
        req = req.json(&b);
    }
    e.handle(req)
}

fn get(e: &Engine<MemStore>, path: &str) -> Value {
    let r = send(e, Method::Get, path, None);
    assert_eq!(
        r.status,
        200,
        "GET {path}: {}",
        String::from_utf8_lossy(&r.body)
    );
    r.json_body()
}

fn post(e: &Engine<MemStore>, path: &str, body: Value) -> Response {
    send(e, Method::Post, path, Some(body))
}

fn site(setup: SiteSetup) -> Engine<MemStore> {
    let e = Engine::new(MemStore::new(), EngineOptions::for_tests()).unwrap();
    e.create_site(&setup).unwrap();
    e
}

fn multilingual_content_site() -> Engine<MemStore> {
    let mut setup = SiteSetup::new("secret");
    setup.profiles = vec!["multilingual-content".into()];
    setup.languages = vec!["de".into(), "en".into()];
    site(setup)
}

#[test]
fn a_plain_site_is_not_multilingual() {
    let e = site(SiteSetup::new("secret"));
    let addons = get(&e, "/@addons");
    assert!(addons["items"]
        .as_array()
        .unwrap()
        .iter()
        .all(|a| a["is_installed"] == false));
    assert_eq!(get(&e, "/")["items_total"], 0);
    assert_eq!(get(&e, "/@navroot")["navroot"]["@id"], BASE);
}

#[test]
fn site_setup_installs_the_content_profile_with_languages() {
    let e = multilingual_content_site();
    let root = get(&e, "/");
    assert_eq!(root["language"], json!({"token": "de", "title": "Deutsch"}));
    let ids: Vec<&str> = root["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["@id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, vec![format!("{BASE}/de"), format!("{BASE}/en")]);
    assert_eq!(root["layout"], "language-switcher");
    let de = get(&e, "/de");
    assert_eq!(de["@type"], "LRF");
    // Answered in the folder's own language (Plone's content negotiation).
    assert_eq!(de["type_title"], "Basisordner einer Sprache");
    assert_eq!(de["layout"], "folder_listing");
    assert_eq!(de["review_state"], "published");
    assert_eq!(de["exclude_from_nav"], true);
    // The roots are translations of each other, and navigation roots.
    let t = get(&e, "/de/@translations");
    assert_eq!(
        t["items"],
        json!([{"@id": format!("{BASE}/en"), "language": "en"}])
    );
    assert_eq!(
        t["root"],
        json!({"de": format!("{BASE}/de"), "en": format!("{BASE}/en")})
    );
    // The language root's workflow history has its creation entry (events ran at site creation).
    assert_eq!(
        get(&e, "/en/@workflow")["history"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    // Anonymous visitors see the published roots.
    let anon = e.handle(Request::new(Method::Get, "/en", BASE));
    assert_eq!(anon.status, 200);
}

#[test]
fn configure_languages_on_an_existing_site_is_idempotent() {
    let e = site(SiteSetup::new("secret"));
    let profiles = vec!["multilingual-content".to_string()];
    let languages = vec!["en".to_string(), "fr".to_string()];
    e.configure_languages(&profiles, &languages).unwrap();
    e.configure_languages(&profiles, &languages).unwrap();
    let root = get(&e, "/");
    assert_eq!(root["items_total"], 2);
    let panel = get(&e, "/@controlpanels/language");
    assert_eq!(
        panel["data"]["available_languages"],
        json!([{"token": "en", "title": "English"}, {"token": "fr", "title": "Français"}])
    );
    // A language added later gets its root folder, linked to the others.
    e.configure_languages(&[], &["en".into(), "fr".into(), "de".into()])
        .unwrap();
    assert_eq!(get(&e, "/")["items_total"], 3);
    assert_eq!(
        get(&e, "/de/@translations")["items"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    // Unknown profiles and languages are refused and change nothing.
    assert!(e.configure_languages(&["nope".into()], &[]).is_err());
    assert!(e.configure_languages(&[], &["xx".into()]).is_err());
    assert_eq!(get(&e, "/")["items_total"], 3);
}

#[test]
fn an_existing_non_folder_blocks_the_language_root_and_nothing_changes() {
    let e = site(SiteSetup::new("secret"));
    assert_eq!(
        post(
            &e,
            "/",
            json!({"@type": "Page", "id": "de", "title": "Not a folder"})
        )
        .status,
        201
    );
    let r = send(
        &e,
        Method::Patch,
        "/@controlpanels/language",
        Some(json!({"available_languages": ["en", "de"]})),
    );
    assert_eq!(r.status, 204);
    let r = post(&e, "/@addons/multilingual-content/install", json!({}));
    assert_eq!(r.status, 409, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(get(&e, "/")["items_total"], 1);
    assert_eq!(get(&e, "/@addons/multilingual")["is_installed"], false);
}

#[test]
fn deleting_a_translation_unlinks_it() {
    let e = multilingual_content_site();
    let r = post(&e, "/en", json!({"@type": "Page", "title": "Doc"}));
    assert_eq!(r.status, 201);
    let uid = r.json_body()["UID"].as_str().unwrap().to_string();
    let r = post(
        &e,
        "/de",
        json!({"@type": "Page", "title": "Dok", "translation_of": uid}),
    );
    assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(r.json_body()["language"]["token"], "de");
    assert_eq!(
        get(&e, "/en/doc/@translations")["items"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    assert_eq!(send(&e, Method::Delete, "/de/dok", None).status, 204);
    assert_eq!(get(&e, "/en/doc/@translations")["items"], json!([]));
    // The freed language slot can be linked again.
    assert_eq!(
        post(
            &e,
            "/de",
            json!({"@type": "Page", "title": "Neu", "translation_of": uid})
        )
        .status,
        201
    );
    assert_eq!(
        get(&e, "/en/doc/@translations")["items"],
        json!([{"@id": format!("{BASE}/de/neu"), "language": "de"}])
    );
}

#[test]
fn changing_the_language_of_a_translation_moves_or_is_refused() {
    let mut setup = SiteSetup::new("secret");
    setup.profiles = vec!["multilingual-content".into()];
    setup.languages = vec!["en".into(), "de".into(), "fr".into()];
    let e = site(setup);
    let uid = post(&e, "/en", json!({"@type": "Page", "title": "Doc"})).json_body()["UID"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(
        post(
            &e,
            "/de",
            json!({"@type": "Page", "title": "Dok", "translation_of": uid})
        )
        .status,
        201
    );
    // de → en clashes with the English original: refused, nothing changed.
    let r = send(
        &e,
        Method::Patch,
        "/de/dok",
        Some(json!({"language": "en"})),
    );
    assert_eq!(r.status, 400, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(get(&e, "/de/dok")["language"]["token"], "de");
    // de → fr moves the translation to the fr slot.
    let r = send(
        &e,
        Method::Patch,
        "/de/dok",
        Some(json!({"language": "fr"})),
    );
    assert_eq!(r.status, 204);
    assert_eq!(
        get(&e, "/en/doc/@translations")["items"],
        json!([{"@id": format!("{BASE}/de/dok"), "language": "fr"}])
    );
}
