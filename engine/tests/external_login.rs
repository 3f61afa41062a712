//! Logging in through an external identity provider (`Engine::log_in_external`, what host-server
//! calls once it verified a provider's ID token) and the operator's login options: `GET @login`
//! lists the providers, the user is created and then kept in step (name, e-mail, groups), a
//! local account with a password is not taken over, and password login can be turned off.
//! host-server/tests/oidc_process.rs runs the same through a real OpenID provider.

use engine::{
    Engine, EngineOptions, ExternalIdentity, LoginOptions, LoginProvider, MemStore, Method,
    Request, Response, SiteSetup,
};
use serde_json::{json, Value};

const BASE: &str = "http://localhost:8080";
const ADMIN: &str = "Basic YWRtaW46c2VjcmV0"; // admin:secret

fn engine(password: bool) -> Engine<MemStore> {
    let options = EngineOptions {
        login: LoginOptions {
            password,
            providers: vec![LoginProvider {
                id: "staff".into(),
                title: "Staff account".into(),
            }],
        },
        ..EngineOptions::for_tests()
    };
    let engine = Engine::new(MemStore::new(), options).unwrap();
    engine.create_site(&SiteSetup::new("secret")).unwrap();
    engine
}

fn get(engine: &Engine<MemStore>, path: &str, auth: &str) -> Response {
    engine.handle(Request::new(Method::Get, path, BASE).header("Authorization", auth))
}

fn alice(groups: Option<&[&str]>, fullname: &str) -> ExternalIdentity {
    ExternalIdentity {
        provider: "staff".into(),
        login: "alice".into(),
        fullname: Some(fullname.into()),
        email: Some("alice@example.org".into()),
        groups: groups.map(|g| g.iter().map(|s| s.to_string()).collect()),
        link_existing: false,
    }
}

fn groups_of(engine: &Engine<MemStore>, login: &str) -> Vec<String> {
    let body: Value = get(engine, &format!("/@users/{login}"), ADMIN).json_body();
    let mut ids: Vec<String> = body["groups"]["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["id"].as_str().unwrap().to_string())
        .filter(|g| g != "AuthenticatedUsers")
        .collect();
    ids.sort();
    ids
}

#[test]
fn a_provider_login_creates_then_updates_the_user_and_its_groups() {
    let engine = engine(true);
    let options = engine.handle(Request::new(Method::Get, "/@login", BASE));
    assert_eq!(options.status, 200);
    assert_eq!(
        options.json_body(),
        json!({"options": [{"id": "staff", "plugin": "oidc", "title": "Staff account",
                            "url": "http://localhost:8080/@login-oidc/staff"}]})
    );

    let token = engine
        .log_in_external(&alice(Some(&["Reviewers", "editors"]), "Alice"))
        .unwrap();
    let me = get(&engine, "/@users/alice", &format!("Bearer {token}"));
    assert_eq!(me.status, 200);
    assert_eq!(me.json_body()["fullname"], "Alice");
    // Member, and Reviewer through the Reviewers group the provider put it in.
    assert_eq!(me.json_body()["roles"], json!(["Member", "Reviewer"]));
    assert_eq!(groups_of(&engine, "alice"), ["Reviewers", "editors"]);
    // The new group holds its member.
    let editors = get(&engine, "/@groups/editors", ADMIN);
    assert_eq!(editors.status, 200);

    // A second login: name and groups follow the provider; the first token still works.
    engine
        .log_in_external(&alice(Some(&["editors"]), "Alice L."))
        .unwrap();
    assert_eq!(
        get(&engine, "/@users/alice", ADMIN).json_body()["fullname"],
        "Alice L."
    );
    assert_eq!(groups_of(&engine, "alice"), ["editors"]);
    assert_eq!(
        get(&engine, "/@users/alice", &format!("Bearer {token}")).status,
        200
    );
    // Groups not mapped: left alone.
    engine.log_in_external(&alice(None, "Alice L.")).unwrap();
    assert_eq!(groups_of(&engine, "alice"), ["editors"]);
}

#[test]
fn refusals_change_nothing() {
    let engine = engine(true);
    let users = || get(&engine, "/@users", ADMIN).json_body()["items_total"].clone();
    let before = users();
    // A local account with a password is not taken over...
    let mut admin = alice(Some(&["Administrators"]), "Mallory");
    admin.login = "admin".into();
    let err = engine.log_in_external(&admin).unwrap_err();
    assert_eq!(err.status(), 403, "{err}");
    // ... unless the operator allows it.
    admin.link_existing = true;
    admin.groups = None;
    engine.log_in_external(&admin).unwrap();
    assert_eq!(
        get(&engine, "/@users/admin", ADMIN).json_body()["fullname"],
        "Mallory"
    );
    // An unknown provider, an unusable login or group.
    let mut other = alice(None, "A");
    other.provider = "nope".into();
    assert_eq!(engine.log_in_external(&other).unwrap_err().status(), 404);
    let mut bad = alice(None, "A");
    bad.login = "a/b".into();
    assert_eq!(engine.log_in_external(&bad).unwrap_err().status(), 401);
    let bad_group = alice(Some(&["ok", ""]), "A");
    assert_eq!(
        engine.log_in_external(&bad_group).unwrap_err().status(),
        401
    );
    assert_eq!(users(), before);
    assert_eq!(get(&engine, "/@users/alice", ADMIN).status, 404);
    assert_eq!(get(&engine, "/@groups/ok", ADMIN).status, 404);
}

#[test]
fn the_groups_claim_cannot_take_away_the_last_manager() {
    let engine = engine(true);
    // Alice becomes a Manager through the provider's Administrators group...
    let token = engine
        .log_in_external(&alice(Some(&["Administrators"]), "Alice"))
        .unwrap();
    let alice_auth = format!("Bearer {token}");
    // ... and removes the local admin: she is the site's only Manager now.
    let removed = engine.handle(
        Request::new(Method::Delete, "/@users/admin", BASE).header("Authorization", &alice_auth),
    );
    assert_eq!(removed.status, 204, "{}", removed.json_body());
    let admins = || {
        let g = get(&engine, "/@groups/Administrators", &alice_auth);
        assert_eq!(g.status, 200, "{}", g.json_body());
        g.json_body()["users"]["items"].clone()
    };
    let before = admins();
    // The provider no longer lists the group: the same rule as every other path refuses it,
    // and nothing changes (not her name either).
    let err = engine
        .log_in_external(&alice(Some(&["editors"]), "Alice Renamed"))
        .unwrap_err();
    assert_eq!(err.status(), 400, "{err}");
    assert!(err.to_string().contains("last Manager"), "{err}");
    assert_eq!(admins(), before);
    let me = get(&engine, "/@users/alice", &alice_auth).json_body();
    assert_eq!(me["fullname"], "Alice");
    assert_eq!(get(&engine, "/@groups/editors", &alice_auth).status, 404);
    // With another Manager, she may leave it.
    let bob = ExternalIdentity {
        login: "bob".into(),
        ..alice(Some(&["Administrators"]), "Bob")
    };
    engine.log_in_external(&bob).unwrap();
    engine
        .log_in_external(&alice(Some(&["editors"]), "Alice"))
        .unwrap();
    let bob_token = engine.log_in_external(&bob).unwrap();
    let g = get(&engine, "/@users/alice", &format!("Bearer {bob_token}"));
    assert_eq!(g.json_body()["roles"], json!(["Member"]));
}

#[test]
fn password_login_can_be_turned_off() {
    let engine = engine(false);
    let login = engine.handle(
        Request::new(Method::Post, "/@login", BASE)
            .json(&json!({"login": "admin", "password": "secret"})),
    );
    assert_eq!(login.status, 403);
    assert!(login.json_body()["message"]
        .as_str()
        .unwrap()
        .contains("Password login is turned off"));
    let basic = get(&engine, "/@users", ADMIN);
    assert_eq!(basic.status, 401);
    // The provider's users still log in.
    let token = engine.log_in_external(&alice(None, "Alice")).unwrap();
    assert_eq!(
        get(&engine, "/@users/alice", &format!("Bearer {token}")).status,
        200
    );
}

#[test]
fn without_providers_get_login_is_plone_s_405() {
    let engine = Engine::new(MemStore::new(), EngineOptions::for_tests()).unwrap();
    engine.create_site(&SiteSetup::new("secret")).unwrap();
    let r = engine.handle(Request::new(Method::Get, "/@login", BASE));
    assert_eq!(r.status, 405);
}
