//! Opening a schema-1 store upgrades it in place (`engine::site::migrations`): the fixture
//! `tests/fixtures/schema-v1/content-site.json` (written by the engine before schema 2) reads back
//! through the API, and numbering continues where schema 1 left it.

use engine::{core::keys, Engine, EngineOptions, MemStore, Method, Request, Response, Store};
use serde_json::{json, Value};

const BASE: &str = "http://localhost:8080";
const ADMIN: (&str, &str) = ("Authorization", "Basic YWRtaW46c2VjcmV0"); // admin:secret

/// The key/value pairs of a schema-1 fixture, by file name.
fn fixture(name: &str) -> Vec<(Vec<u8>, Vec<u8>)> {
    let text = match name {
        "content-site.json" => tests::fixtures::SCHEMA_V1_CONTENT_SITE,
        "fresh-site.json" => tests::fixtures::SCHEMA_V1_FRESH_SITE,
        other => panic!("no fixture {other}"),
    };
    tests::fixtures::pairs(text).expect("the fixture decodes")
}

fn get(e: &Engine<MemStore>, path: &str) -> Response {
    e.handle(Request::new(Method::Get, path, BASE).header(ADMIN.0, ADMIN.1))
}

fn ok_json(r: &Response) -> Value {
    assert!(
        (200..300).contains(&r.status),
        "{} {}",
        r.status,
        String::from_utf8_lossy(&r.body)
    );
    r.json_body()
}

fn raw(e: &Engine<MemStore>, key: &[u8]) -> Option<String> {
    let txn = e.store().begin_read().expect("read");
    txn.get(key)
        .expect("get")
        .map(|v| String::from_utf8_lossy(&v).into_owned())
}

fn keys_with_prefix(e: &Engine<MemStore>, prefix: &[u8]) -> Vec<Vec<u8>> {
    let txn = e.store().begin_read().expect("read");
    let mut end = prefix.to_vec();
    *end.last_mut().expect("non-empty prefix") += 1;
    txn.scan(prefix, &end, engine::Direction::Forward, usize::MAX)
        .expect("scan")
        .into_iter()
        .map(|(k, _)| k)
        .collect()
}

fn uid_of(e: &Engine<MemStore>, path: &str) -> String {
    raw(e, &keys::path(path)).unwrap_or_else(|| panic!("no object at {path}"))
}

#[test]
fn content_site_reads_back_after_the_upgrade_and_numbering_continues() {
    let store = MemStore::from_pairs(fixture("content-site.json"));
    let e = Engine::new(store.clone(), EngineOptions::for_tests()).expect("open and migrate");
    let report = e.migration_report();
    assert_eq!(report.from, Some(1));
    assert_eq!(report.to, Some(keys::SCHEMA_VERSION));
    assert_eq!(
        report.steps_run(),
        engine::site::migrations::STEPS.len(),
        "{report:?}"
    );
    assert_eq!(
        raw(&e, keys::SCHEMA),
        Some(keys::SCHEMA_VERSION.to_string())
    );
    // the type registry is data now: every built-in type is stored
    assert!(
        raw(&e, &keys::content_type("Page")).is_some(),
        "types were not written"
    );
    assert!(keys_with_prefix(&e, b"q:").is_empty(), "q: keys remain");
    // The root allowed discussion in schema 1: the discussion control panel's switch is on.
    assert_eq!(
        raw(
            &e,
            &keys::config_record(engine::site::configuration::DISCUSSION_ENABLED)
        ),
        Some("true".to_string())
    );

    // the folder and its pages, in order
    let news = ok_json(&get(&e, "/news"));
    assert_eq!(news["@type"], "Folder");
    let items: Vec<&str> = news["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|i| i["@id"].as_str().expect("@id"))
        .collect();
    assert_eq!(
        items,
        [
            "http://localhost:8080/news/first",
            "http://localhost:8080/news/second-renamed",
            "http://localhost:8080/news/erste"
        ]
    );
    let first = ok_json(&get(&e, "/news/first"));
    assert_eq!(first["title"], "First, edited");
    assert_eq!(first["review_state"], "published");
    assert_eq!(ok_json(&get(&e, "/news/erste"))["language"]["token"], "de");

    // history: newest first, versions and workflow entries interleaved as recorded
    let history = ok_json(&get(&e, "/news/first/@history"));
    let shape: Vec<(String, Value)> = history
        .as_array()
        .expect("history list")
        .iter()
        .map(|h| {
            (
                h["action"].as_str().unwrap_or("").to_string(),
                h["version"].clone(),
            )
        })
        .collect();
    assert_eq!(
        shape,
        [
            ("publish".to_string(), Value::Null),
            ("Edited".to_string(), json!(1)),
            ("Edited".to_string(), json!(0)),
            ("Create".to_string(), Value::Null),
        ]
    );
    assert_eq!(history[1]["comments"], "typo");

    // the comment
    let comments = ok_json(&get(&e, "/news/first/@comments"));
    assert_eq!(comments["items_total"], 1, "{comments}");

    // the translation link
    let tr = ok_json(&get(&e, "/news/first/@translations"));
    let ids: Vec<&str> = tr["items"]
        .as_array()
        .expect("translation items")
        .iter()
        .filter_map(|i| i["@id"].as_str())
        .collect();
    assert_eq!(ids, ["http://localhost:8080/news/erste"], "{tr}");

    // both aliases redirect
    for (alias, target) in [
        ("/news/second", "http://localhost:8080/news/second-renamed"),
        ("/old-news", "http://localhost:8080/news"),
    ] {
        let r = get(&e, alias);
        assert!(
            (300..400).contains(&r.status),
            "{alias}: {} {}",
            r.status,
            String::from_utf8_lossy(&r.body)
        );
        assert_eq!(r.header_value("location"), Some(target), "{alias}");
    }

    // the lock
    let lock = ok_json(&get(&e, "/news/second-renamed/@lock"));
    assert_eq!(lock["locked"], true, "{lock}");

    // the second user can log in
    let r = e.handle(
        Request::new(Method::Post, "/@login", BASE)
            .json(&json!({"login": "editor", "password": "secret12"})),
    );
    assert!(ok_json(&r)["token"].is_string());

    // numbering continues: a new edit is version 2 and the newest history entry
    let uid = uid_of(&e, "/news/first");
    let r = e.handle(
        Request::new(Method::Patch, "/news/first", BASE)
            .header(ADMIN.0, ADMIN.1)
            .json(&json!({"title": "First, again", "changeNote": "after upgrade"})),
    );
    assert_eq!(r.status, 204, "{}", String::from_utf8_lossy(&r.body));
    let history = ok_json(&get(&e, "/news/first/@history"));
    assert_eq!(history[0]["version"], 2, "{history}");
    assert_eq!(history[0]["comments"], "after upgrade");
    assert_eq!(history[1]["action"], "publish");
    assert_eq!(
        ok_json(&get(&e, "/news/first/@history/2"))["title"],
        "First, again"
    );
    assert_eq!(
        ok_json(&get(&e, "/news/first/@history/1"))["title"],
        "First, edited"
    );

    // a new comment takes the next position (1; the fixture's comment is at 0)
    let r = e.handle(
        Request::new(Method::Post, "/news/first/@comments", BASE)
            .header(ADMIN.0, ADMIN.1)
            .json(&json!({"text": "after the upgrade"})),
    );
    assert_eq!(r.status, 204, "{}", String::from_utf8_lossy(&r.body));
    assert!(raw(&e, &keys::comment(&uid, 0)).is_some());
    assert!(raw(&e, &keys::comment(&uid, 1)).is_some());
    assert_eq!(raw(&e, &keys::comment_counter(&uid)), Some("2".into()));
    assert_eq!(raw(&e, &keys::version_counter(&uid)), Some("3".into()));
    // schema 1 had handed out history numbers 1..=4; the edit took 5
    assert_eq!(raw(&e, &keys::history_counter(&uid)), Some("6".into()));
    assert!(keys_with_prefix(&e, b"q:").is_empty());

    // reopening a migrated store runs nothing
    let again = Engine::new(store, EngineOptions::for_tests()).expect("reopen");
    assert_eq!(again.migration_report().steps_run(), 0);
    assert_eq!(again.migration_report().from, Some(keys::SCHEMA_VERSION));
}

#[test]
fn every_object_gets_the_counters_schema_1_implied() {
    let e = Engine::new(
        MemStore::from_pairs(fixture("content-site.json")),
        EngineOptions::for_tests(),
    )
    .expect("open and migrate");
    // (path, history, version, comment): from the fixture's q: values, last versions and comments
    for (path, h, v, m) in [
        ("/news", Some("2"), None, None),
        ("/news/first", Some("5"), Some("2"), Some("1")),
        ("/news/second-renamed", Some("3"), Some("1"), None),
        ("/news/erste", Some("3"), Some("1"), None),
    ] {
        let uid = uid_of(&e, path);
        assert_eq!(
            raw(&e, &keys::history_counter(&uid)).as_deref(),
            h,
            "{path}"
        );
        assert_eq!(
            raw(&e, &keys::version_counter(&uid)).as_deref(),
            v,
            "{path}"
        );
        assert_eq!(
            raw(&e, &keys::comment_counter(&uid)).as_deref(),
            m,
            "{path}"
        );
    }
}

#[test]
fn a_store_of_a_newer_or_unknown_schema_is_refused_and_left_unchanged() {
    let newer = (keys::SCHEMA_VERSION + 1).to_string();
    let newer_words = format!("newer version (schema {newer}");
    for (value, words) in [
        (newer.as_str(), newer_words.as_str()),
        ("x1", "unknown schema version"),
    ] {
        let mut pairs = fixture("fresh-site.json");
        for (k, v) in &mut pairs {
            if k.as_slice() == keys::SCHEMA {
                *v = value.as_bytes().to_vec();
            }
        }
        let store = MemStore::from_pairs(pairs.clone());
        let err = match Engine::new(store.clone(), EngineOptions::for_tests()) {
            Ok(_) => panic!("schema {value} was accepted"),
            Err(e) => e.to_string(),
        };
        assert!(err.contains(words), "{err}");
        let txn = store.begin_read().expect("read");
        let now = txn
            .scan(b"", b"\xff", engine::Direction::Forward, usize::MAX)
            .expect("scan");
        assert_eq!(now, pairs, "the refused store was changed");
    }
}

#[test]
fn a_store_without_a_site_is_left_alone() {
    let store = MemStore::new();
    let e = Engine::new(store.clone(), EngineOptions::for_tests()).expect("open");
    assert_eq!(
        e.migration_report(),
        &engine::site::migrations::Report::default()
    );
    assert!(store.is_empty(), "opening an empty store wrote to it");
}

#[test]
fn fresh_site_fixture_upgrades_and_serves() {
    let e = Engine::new(
        MemStore::from_pairs(fixture("fresh-site.json")),
        EngineOptions::for_tests(),
    )
    .expect("open and migrate");
    assert_eq!(
        e.migration_report().steps_run(),
        engine::site::migrations::STEPS.len()
    );
    // Its root never allowed discussion: the switch has its default (off); every stored record
    // of the configuration registry now has a value.
    assert_eq!(
        raw(
            &e,
            &keys::config_record(engine::site::configuration::DISCUSSION_ENABLED)
        ),
        Some("false".to_string())
    );
    assert_eq!(
        raw(&e, &keys::config_record("plone.smtp_port")),
        Some("25".to_string())
    );
    let r = e.handle(
        Request::new(Method::Post, "/", BASE)
            .header(ADMIN.0, ADMIN.1)
            .json(&json!({"@type": "Page", "title": "New"})),
    );
    assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
    let history = ok_json(&get(&e, "/new/@history"));
    assert_eq!(history.as_array().map(Vec::len), Some(2), "{history}");
    assert_eq!(history[0]["version"], 0);
}

#[test]
fn the_upgrade_builds_the_catalog_of_every_object() {
    let e = Engine::new(
        MemStore::from_pairs(fixture("content-site.json")),
        EngineOptions::for_tests(),
    )
    .expect("open and migrate");
    let objects = keys_with_prefix(&e, b"p:").len();
    assert!(objects > 1);
    assert_eq!(keys_with_prefix(&e, b"x:e:").len(), objects);
    let found = ok_json(&get(&e, "/@search?sort_on=path&b_size=1000"));
    assert_eq!(found["items_total"], objects);
    // A page of the fixture is found by a word of its title.
    let first_page = found["items"]
        .as_array()
        .and_then(|items| items.iter().find(|i| i["@type"] == "Page"))
        .cloned()
        .expect("a page");
    let word = first_page["title"]
        .as_str()
        .and_then(|t| t.split_whitespace().next())
        .expect("a title word")
        .to_string();
    let hits = ok_json(&get(&e, &format!("/@search?SearchableText={word}")));
    assert!(hits["items"]
        .as_array()
        .is_some_and(|items| items.iter().any(|i| i["@id"] == first_page["@id"])));
}

#[test]
fn a_portrait_stored_as_base64_by_schema_7_becomes_a_blob() {
    use base64::Engine as _;
    // A site with user mia, written by this build; then her record is put back in the schema-7
    // form (the image as base64 inside it, no blob) and the store marked schema 7.
    let e = Engine::new(MemStore::new(), EngineOptions::for_tests()).expect("open");
    e.create_site(&engine::SiteSetup::new("secret"))
        .expect("site");
    let r = e.handle(
        Request::new(Method::Post, "/@users", BASE)
            .header(ADMIN.0, ADMIN.1)
            .json(
                &json!({"username": "mia", "password": "mia-password", "email": "mia@example.com"}),
            ),
    );
    assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
    let image = b"GIF89a stands in for an image: schema 7 did not decode portraits".to_vec();
    let txn = e.store().begin_read().expect("read");
    let mut pairs = txn
        .scan(b"", b"\xff", engine::Direction::Forward, usize::MAX)
        .expect("scan");
    drop(txn);
    for (k, v) in &mut pairs {
        if k.as_slice() == keys::SCHEMA {
            *v = b"7".to_vec();
        }
        if k.as_slice() == keys::user("mia").as_slice() {
            let mut user: Value = serde_json::from_slice(v).expect("user record");
            user["portrait"] = json!({
                "content_type": "image/gif",
                "filename": "me.gif",
                "data": base64::engine::general_purpose::STANDARD.encode(&image),
            });
            *v = serde_json::to_vec(&user).expect("encode");
        }
    }
    assert!(
        !pairs.iter().any(|(k, _)| k.starts_with(b"f:")),
        "no blob before the upgrade"
    );
    let old = Engine::new(MemStore::from_pairs(pairs), EngineOptions::for_tests())
        .expect("open and migrate");
    assert_eq!(old.migration_report().from, Some(7));
    assert_eq!(old.migration_report().to, Some(keys::SCHEMA_VERSION));
    let user = raw(&old, &keys::user("mia")).expect("mia");
    assert!(!user.contains("\"data\""), "the base64 stayed: {user}");
    let portrait = old.handle(Request::new(Method::Get, "/@portrait/mia", BASE));
    assert_eq!(portrait.status, 200);
    assert_eq!(portrait.body, image);
    assert_eq!(portrait.header_value("Content-Type"), Some("image/gif"));
    assert!(!keys_with_prefix(&old, b"f:").is_empty());
    // Deleting mia deletes the blob.
    let r = old.handle(Request::new(Method::Delete, "/@users/mia", BASE).header(ADMIN.0, ADMIN.1));
    assert_eq!(r.status, 204, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(keys_with_prefix(&old, b"f:"), Vec::<Vec<u8>>::new());
    assert_eq!(keys_with_prefix(&old, b"F:"), Vec::<Vec<u8>>::new());
}
