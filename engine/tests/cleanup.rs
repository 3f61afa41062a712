//! Removing an object removes every record about it: each subscriber of the registry cleans its
//! own (versions, workflow history, lock, comments, translation entries), and together they leave
//! no key that names the removed uid.

use engine::{Direction, Engine, EngineOptions, MemStore, Method, Request, Response, SiteSetup};
use serde_json::{json, Value};

const BASE: &str = "http://localhost:8080";
const ADMIN: &str = "Basic YWRtaW46c2VjcmV0";

fn call(
    e: &Engine<MemStore>,
    m: Method,
    path: &str,
    body: Value,
    extra: &[(&str, &str)],
) -> Response {
    let mut r = Request::new(m, path, BASE)
        .header("Authorization", ADMIN)
        .json(&body);
    for (k, v) in extra {
        r = r.header(k, v);
    }
    e.handle(r)
}

/// Every stored key that contains `uid`, as text, except the change log's (`C:`): it keeps a
/// removal for `engine::sync::changes::RETENTION_DAYS` days by design, so clients following the feed
/// learn of it (see `the_change_log_forgets_a_removal_after_its_retention`).
fn keys_naming(e: &Engine<MemStore>, uid: &str) -> Vec<String> {
    all_keys_naming(e, uid)
        .into_iter()
        .filter(|k| !k.starts_with("C:"))
        .collect()
}

/// Every stored key that contains `uid`, as text.
fn all_keys_naming(e: &Engine<MemStore>, uid: &str) -> Vec<String> {
    use engine::Store as _;
    let txn = e.store().begin_read().unwrap();
    txn.scan(b"", &[0xff; 4], Direction::Forward, usize::MAX)
        .unwrap()
        .into_iter()
        .map(|(k, _)| String::from_utf8_lossy(&k).into_owned())
        .filter(|k| k.contains(uid))
        .collect()
}

#[test]
fn the_registry_lists_one_subscriber_per_owner_of_records() {
    let e = Engine::new(MemStore::new(), EngineOptions::for_tests()).unwrap();
    assert_eq!(
        e.subscriber_names(),
        [
            "workflow",
            "versioning",
            "locking",
            "comments",
            "translations",
            "counters",
            "forms",
            "catalog",
            "blobs",
            "relations",
            "rules",
            "vectors",
            "changes"
        ]
    );
}

#[test]
fn deleting_an_object_leaves_no_record_about_it() {
    let mut setup = SiteSetup::new("secret");
    setup.profiles = vec!["multilingual".into()];
    setup.languages = vec!["en".into(), "de".into()];
    let e = Engine::new(MemStore::new(), EngineOptions::for_tests()).unwrap();
    e.create_site(&setup).unwrap();

    let page = call(
        &e,
        Method::Post,
        "/",
        json!({"@type": "Page", "title": "Doc"}),
        &[],
    );
    assert_eq!(page.status, 201);
    let uid = page.json_body()["UID"].as_str().unwrap().to_string();
    // A second version, a workflow entry, a comment, a translation and a lock.
    let edit = call(&e, Method::Patch, "/doc", json!({"title": "Doc 2"}), &[]);
    assert_eq!(edit.status, 204);
    let publish = call(&e, Method::Post, "/doc/@workflow/publish", json!({}), &[]);
    assert_eq!(publish.status, 200);
    let on = json!({"allow_discussion": true});
    let site_wide = json!({"globally_enabled": true});
    assert_eq!(
        call(
            &e,
            Method::Patch,
            "/@controlpanels/discussion",
            site_wide,
            &[]
        )
        .status,
        204
    );
    assert_eq!(call(&e, Method::Patch, "/doc", on, &[]).status, 204);
    let comment = call(
        &e,
        Method::Post,
        "/doc/@comments",
        json!({"text": "hi"}),
        &[],
    );
    assert_eq!(
        comment.status,
        204,
        "{}",
        String::from_utf8_lossy(&comment.body)
    );
    let de = json!({"@type": "Page", "title": "Dok", "language": "de", "translation_of": uid});
    let translation = call(&e, Method::Post, "/", de, &[]);
    assert_eq!(translation.status, 201);
    let lock = call(&e, Method::Post, "/doc/@lock", json!({}), &[]);
    assert_eq!(lock.status, 200);
    let token = lock.json_body()["token"].as_str().unwrap().to_string();

    let before = keys_naming(&e, &uid);
    for prefix in ["o:", "v:", "w:", "l:", "m:", "g:", "E:"] {
        assert!(
            before.iter().any(|k| k.starts_with(prefix)),
            "expected a {prefix} key about the page before deleting it: {before:?}"
        );
    }

    let deleted = call(
        &e,
        Method::Delete,
        "/doc",
        json!({}),
        &[("Lock-Token", &token)],
    );
    assert_eq!(deleted.status, 204);
    // The recycle bin is on by default: the page left the tree, but its history, comments and
    // counters wait in the bin with it.
    let binned = keys_naming(&e, &uid);
    assert!(!binned.iter().any(|k| k.starts_with("o:")), "{binned:?}");
    for prefix in ["v:", "w:", "m:"] {
        assert!(
            binned.iter().any(|k| k.starts_with(prefix)),
            "expected the binned page to keep its {prefix} keys: {binned:?}"
        );
    }
    let bin = call(&e, Method::Get, "/@recyclebin", json!({}), &[]).json_body();
    let rid = bin["items"][0]["recycle_id"].as_str().unwrap().to_string();
    // Purging it leaves nothing about it.
    let purged = call(
        &e,
        Method::Delete,
        &format!("/@recyclebin/{rid}"),
        json!({}),
        &[],
    );
    assert_eq!(purged.status, 204);
    assert_eq!(keys_naming(&e, &uid), Vec::<String>::new());
}

#[test]
fn purging_expired_bin_items_leaves_no_record_about_them() {
    let e = Engine::new(MemStore::new(), EngineOptions::for_tests()).unwrap();
    e.create_site(&SiteSetup::new("secret")).unwrap();
    let page = call(
        &e,
        Method::Post,
        "/",
        json!({"@type": "Page", "title": "Old"}),
        &[],
    );
    let uid = page.json_body()["UID"].as_str().unwrap().to_string();
    assert_eq!(call(&e, Method::Delete, "/old", json!({}), &[]).status, 204);
    assert!(!keys_naming(&e, &uid).is_empty());
    // Not yet expired: nothing is purged.
    assert_eq!(e.purge_expired_recyclebin().unwrap(), 0);
    let clock = json!({"advance": 31 * 24 * 3600});
    assert_eq!(
        call(&e, Method::Post, "/@test-clock", clock, &[]).status,
        200
    );
    assert_eq!(e.purge_expired_recyclebin().unwrap(), 1);
    assert_eq!(keys_naming(&e, &uid), Vec::<String>::new());
    let bin = call(&e, Method::Get, "/@recyclebin", json!({}), &[]).json_body();
    assert_eq!(bin["items_total"], 0);
}

#[test]
fn with_the_recycle_bin_off_deleting_leaves_no_record() {
    let e = Engine::new(MemStore::new(), EngineOptions::for_tests()).unwrap();
    e.create_site(&SiteSetup::new("secret")).unwrap();
    let off = json!({"recycling_enabled": false});
    assert_eq!(
        call(&e, Method::Patch, "/@controlpanels/recyclebin", off, &[]).status,
        204
    );
    let page = call(
        &e,
        Method::Post,
        "/",
        json!({"@type": "Page", "title": "Gone"}),
        &[],
    );
    let uid = page.json_body()["UID"].as_str().unwrap().to_string();
    assert_eq!(
        call(&e, Method::Delete, "/gone", json!({}), &[]).status,
        204
    );
    assert_eq!(keys_naming(&e, &uid), Vec::<String>::new());
}

#[test]
fn purging_a_page_drops_its_form_submissions() {
    let e = Engine::new(MemStore::new(), EngineOptions::for_tests()).unwrap();
    e.create_site(&SiteSetup::new("secret")).unwrap();
    let form = json!({"@type": "schemaForm", "store": true,
        "schema": {"properties": {"name": {"type": "string"}}, "required": ["name"]}});
    let page = call(
        &e,
        Method::Post,
        "/",
        json!({"@type": "Page", "title": "Form", "blocks": {"f": form}, "blocks_layout": {"items": ["f"]}}),
        &[],
    );
    let uid = page.json_body()["UID"].as_str().unwrap().to_string();
    let sent = json!({"block_id": "f", "data": {"name": "Ann"}});
    assert_eq!(
        call(&e, Method::Post, "/form/@schemaform-data", sent, &[]).status,
        204
    );
    assert!(keys_naming(&e, &uid).iter().any(|k| k.starts_with("d:")));
    assert_eq!(
        call(&e, Method::Delete, "/form", json!({}), &[]).status,
        204
    );
    assert_eq!(
        call(&e, Method::Delete, "/@recyclebin", json!({}), &[]).status,
        204
    );
    assert_eq!(keys_naming(&e, &uid), Vec::<String>::new());
}

/// Every key under `prefix`, as text.
fn keys_under(e: &Engine<MemStore>, prefix: &[u8]) -> Vec<String> {
    use engine::Store as _;
    let txn = e.store().begin_read().unwrap();
    txn.scan(
        prefix,
        &engine::core::store::prefix_end(prefix),
        Direction::Forward,
        usize::MAX,
    )
    .unwrap()
    .into_iter()
    .map(|(k, _)| String::from_utf8_lossy(&k).into_owned())
    .collect()
}

/// A 40x20 PNG.
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAACgAAAAUCAIAAABwJOjsAAAAJElEQVR42mM4ISc3IIhh1OJRi0ctHrV41OJRi0ctHrV45FgMAFLhLK5O4QWwAAAAAElFTkSuQmCC";

#[test]
fn deleting_files_and_images_leaves_no_blob_behind() {
    let e = Engine::new(MemStore::new(), EngineOptions::for_tests()).unwrap();
    e.create_site(&SiteSetup::new("secret")).unwrap();
    // A file larger than one chunk, and an image with scales.
    let big = vec![7u8; engine::content::blobs::CHUNK_SIZE * 2 + 5];
    use base64::Engine as _;
    let data = base64::engine::general_purpose::STANDARD.encode(&big);
    let file = json!({"@type": "File", "id": "f", "title": "F",
        "file": {"data": data, "encoding": "base64", "filename": "f.bin"}});
    assert_eq!(call(&e, Method::Post, "/", file, &[]).status, 201);
    let image = json!({"@type": "Image", "id": "i", "title": "I",
        "image": {"data": PNG, "encoding": "base64", "filename": "i.png"}});
    assert_eq!(call(&e, Method::Post, "/", image, &[]).status, 201);
    // The file: metadata, three chunks, its owner; the image and its two scales (icon and
    // listing): metadata, a chunk and an owner each.
    let blobs = keys_under(&e, b"f:");
    assert_eq!(blobs.len(), 5 + 3 * 3, "{blobs:?}");
    assert_eq!(keys_under(&e, b"F:").len(), 4);
    // Replacing the image keeps the old one and its scales: version 0 names them.
    let again = json!({"image": {"data": PNG, "encoding": "base64", "filename": "j.png"}});
    assert_eq!(call(&e, Method::Patch, "/i", again, &[]).status, 204);
    assert_eq!(keys_under(&e, b"f:").len(), 5 + 3 * 3 + 3 * 3);
    assert_eq!(keys_under(&e, b"F:").len(), 4 + 3);
    // Reverting to it finds its file.
    let revert = call(&e, Method::Patch, "/i/@history", json!({"version": 0}), &[]);
    assert_eq!(
        revert.status,
        200,
        "{}",
        String::from_utf8_lossy(&revert.body)
    );
    let got = call(&e, Method::Get, "/i", json!({}), &[]).json_body();
    assert_eq!(got["image"]["filename"], "i.png");
    let old = call(&e, Method::Get, "/i/@@images/image/icon", json!({}), &[]);
    assert_eq!(old.status, 200);
    // A copy shares the file's blob: it outlives the original, and goes with the copy.
    let copy = call(
        &e,
        Method::Post,
        "/@copy",
        json!({"source": [format!("{BASE}/f")]}),
        &[],
    );
    assert_eq!(copy.status, 200, "{}", String::from_utf8_lossy(&copy.body));
    let copied = copy.json_body()[0]["target"]
        .as_str()
        .unwrap()
        .strip_prefix(BASE)
        .unwrap()
        .to_string();
    assert_eq!(keys_under(&e, b"F:").len(), 4 + 3 + 1);
    assert_eq!(call(&e, Method::Delete, "/f", json!({}), &[]).status, 204);
    let download = call(
        &e,
        Method::Get,
        &format!("{copied}/@@download/file"),
        json!({}),
        &[],
    );
    assert_eq!(download.status, 200);
    assert_eq!(download.body, big);
    for path in [copied.as_str(), "/i"] {
        assert_eq!(call(&e, Method::Delete, path, json!({}), &[]).status, 204);
    }
    // Deleted objects wait in the recycle bin with their blobs; purging it removes them.
    assert!(!keys_under(&e, b"f:").is_empty());
    assert_eq!(
        call(&e, Method::Delete, "/@recyclebin", json!({}), &[]).status,
        204
    );
    assert_eq!(keys_under(&e, b"f:"), Vec::<String>::new());
    assert_eq!(keys_under(&e, b"F:"), Vec::<String>::new());
}

#[test]
fn abandoned_and_cancelled_uploads_leave_no_chunks() {
    let e = Engine::new(MemStore::new(), EngineOptions::for_tests()).unwrap();
    e.create_site(&SiteSetup::new("secret")).unwrap();
    let start = |len: &str| {
        let r = e.handle(
            Request::new(Method::Post, "/@tus-upload", BASE)
                .header("Authorization", ADMIN)
                .header("Upload-Length", len),
        );
        assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
        let loc = r.header_value("Location").unwrap().to_string();
        loc.strip_prefix(BASE).unwrap().to_string()
    };
    let abandoned = start("600000");
    let mut piece = Request::new(Method::Patch, &abandoned, BASE)
        .header("Authorization", ADMIN)
        .header("Upload-Offset", "0")
        .header("Content-Type", "application/offset+octet-stream");
    piece.body = vec![1u8; 300_000];
    assert_eq!(e.handle(piece).status, 204);
    assert!(keys_under(&e, b"f:").len() >= 3, "two chunks and metadata");
    assert_eq!(keys_under(&e, b"T:").len(), 1);
    // A day passes; the next upload to start removes the abandoned one.
    assert_eq!(
        call(
            &e,
            Method::Post,
            "/@test-clock",
            json!({"advance": 90_000}),
            &[]
        )
        .status,
        200
    );
    let cancelled = start("10");
    assert_eq!(keys_under(&e, b"T:").len(), 1);
    let r = e.handle(Request::new(Method::Delete, &cancelled, BASE).header("Authorization", ADMIN));
    assert_eq!(r.status, 204);
    assert_eq!(keys_under(&e, b"T:"), Vec::<String>::new());
    assert_eq!(keys_under(&e, b"f:"), Vec::<String>::new());
}

#[test]
fn the_change_log_forgets_a_removal_after_its_retention() {
    let e = Engine::new(MemStore::new(), EngineOptions::for_tests()).unwrap();
    e.create_site(&SiteSetup::new("secret")).unwrap();
    let off = json!({"recycling_enabled": false});
    assert_eq!(
        call(&e, Method::Patch, "/@controlpanels/recyclebin", off, &[]).status,
        204
    );
    let page = |title: &str| {
        let r = call(
            &e,
            Method::Post,
            "/",
            json!({"@type": "Page", "title": title}),
            &[],
        );
        assert_eq!(r.status, 201);
        r.json_body()["UID"].as_str().unwrap().to_string()
    };
    let uid = page("Gone");
    assert_eq!(
        call(&e, Method::Delete, "/gone", json!({}), &[]).status,
        204
    );
    let kept = all_keys_naming(&e, &uid);
    assert!(kept.iter().all(|k| k.starts_with("C:")), "{kept:?}");
    assert!(!kept.is_empty(), "the removal is in the change log");
    let clock = json!({"advance": (engine::sync::changes::RETENTION_DAYS + 1) * 24 * 3600});
    assert_eq!(
        call(&e, Method::Post, "/@test-clock", clock, &[]).status,
        200
    );
    // The next removal drops the expired ones.
    page("Next");
    assert_eq!(
        call(&e, Method::Delete, "/next", json!({}), &[]).status,
        204
    );
    assert_eq!(all_keys_naming(&e, &uid), Vec::<String>::new());
}
