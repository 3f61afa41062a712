//! Single sign-on against a real OpenID provider: the `oidc-provider` npm package, started by
//! `tests/oidc/provider.mjs` (installed with `npm ci` in `tests/oidc` when it is not yet; node
//! and npm missing is a failure, not a skip). The browser's part (the provider's login and
//! consent) is done by the script's `/__test/drive`; the script can also change the ID token it
//! issues (signed with another key, another nonce, expired) to check that each is refused.
//!
//! Covered, against the real binary: `GET @login` lists the providers; a first login creates the
//! user with its mapped name, e-mail and groups, and its token works; a second login updates
//! them and leaves a group it no longer has; `@logout-oidc` points at the provider's logout; a forged, wrongly-nonced or expired ID token, an
//! unknown state, a state from another browser session, a local account's login and a bad body
//! are refused with a clear JSON error and change nothing; a provider that is down is a 502;
//! with `--no-password-login`, `POST @login` is a 403 and HTTP Basic a 401, and single sign-on
//! still works. The provider's discovery document and keys are kept between logins, and a key
//! rotation at the provider is followed (`discovery_is_kept_and_a_key_rotation_is_followed`).
#![cfg(unix)]

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};

use serde_json::{json, Value};

mod common;

use common::TempDir;

const PASSWORD: &str = "oidc-admin-secret";
const REDIRECT: &str = "http://127.0.0.1:3000/login-oidc/test";

/// A child process killed on drop, and its standard output kept open (a process writing to a
/// closed pipe would die of it).
struct Running(
    Child,
    #[allow(dead_code)] std::io::BufReader<std::process::ChildStdout>,
);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn provider_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/oidc")
}

/// `oidc-provider` installed in `tests/oidc` (npm ci from the lockfile when missing).
fn install_provider() {
    for tool in ["node", "npm"] {
        let ok = Command::new(tool)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success());
        assert!(
            ok,
            "{tool} is missing: the single sign-on test needs Node.js and npm to run a real \
             OpenID provider (oidc-provider)"
        );
    }
    // The tests of this file run at once: one `npm ci` at a time in the directory.
    static INSTALLING: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one = INSTALLING.lock().unwrap_or_else(|e| e.into_inner());
    let dir = provider_dir();
    if dir.join("node_modules/oidc-provider/package.json").exists() {
        return;
    }
    let status = Command::new("npm")
        .args(["ci", "--no-audit", "--no-fund", "--loglevel=error"])
        .current_dir(&dir)
        .status()
        .expect("npm ci");
    assert!(status.success(), "npm ci in {} failed", dir.display());
}

/// Start the provider; its issuer URL.
fn start_provider(log: &Path) -> (Running, String) {
    start_provider_with(log, &[])
}

/// Start the provider with `env` (`PORT`, `KEY_ID`); its issuer URL.
fn start_provider_with(log: &Path, env: &[(&str, &str)]) -> (Running, String) {
    install_provider();
    let listening = common::spawn_listening(
        Command::new("node")
            .arg("provider.mjs")
            .current_dir(provider_dir())
            .env("REDIRECT_URI", REDIRECT)
            .envs(env.iter().copied()),
        log,
    );
    (Running(listening.child, listening.stdout), listening.base)
}

/// A port nothing listens on.
fn dead_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

fn write_config(dir: &Path, issuer: &str) -> PathBuf {
    write_config_with(dir, issuer, "")
}

/// The configuration with `extra` lines in the `test` provider's table.
fn write_config_with(dir: &Path, issuer: &str, extra: &str) -> PathBuf {
    let path = dir.join("oidc.toml");
    let text = format!(
        r#"
[[provider]]
id = "test"
title = "Test provider"
issuer = "{issuer}"
client_id = "cms"
client_secret_env = "OIDC_TEST_SECRET"
scopes = ["profile", "email", "groups"]
redirect_uri = "{REDIRECT}"
{extra}

[provider.claims]
login = "preferred_username"
groups = "groups"

[[provider]]
id = "down"
title = "A provider that is down"
issuer = "http://127.0.0.1:{port}"
client_id = "cms"
client_secret = "unused"
"#,
        port = dead_port()
    );
    std::fs::write(&path, text).unwrap();
    path
}

fn start_server(dir: &TempDir, config: &Path, extra: &[&str], log: &str) -> (Running, String) {
    let listening = common::spawn_listening(
        Command::new(common::server_bin())
            .args(["--listen", "127.0.0.1:0", "--data"])
            .arg(dir.data())
            .arg("--oidc-config")
            .arg(config)
            .args(extra)
            .env("ADMIN_PASSWORD", PASSWORD)
            .env("OIDC_TEST_SECRET", "cms-secret"),
        &dir.0.join(log),
    );
    (Running(listening.child, listening.stdout), listening.base)
}

/// An answer: status, `Set-Cookie` values, body as JSON (`null` when not JSON).
struct Answer {
    status: u16,
    cookies: Vec<String>,
    body: Value,
}

fn call(url: &str, method: &str, headers: &[(&str, &str)], body: Option<&Value>) -> Answer {
    let mut resp = common::send(&common::agent(), url, method, headers, body);
    let cookies = resp
        .headers()
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .map(str::to_string)
        .collect();
    let status = resp.status().as_u16();
    let text = resp.body_mut().read_to_string().unwrap();
    Answer {
        status,
        cookies,
        body: serde_json::from_str(&text).unwrap_or(Value::Null),
    }
}

fn admin() -> String {
    use base64::Engine as _;
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("admin:{PASSWORD}"))
    )
}

/// The account the provider logs in as next, and how it changes its ID token.
fn provider_account(issuer: &str, sub: &str, claims: Value) {
    let a = call(
        &format!("{issuer}/__test/account"),
        "POST",
        &[],
        Some(&json!({"sub": sub, "claims": claims})),
    );
    assert_eq!(a.status, 200, "{}", a.body);
}

/// How often the provider's discovery document and keys were read: `(discovery, jwks)`.
fn provider_counts(issuer: &str) -> (u64, u64) {
    let a = call(&format!("{issuer}/__test/counts"), "GET", &[], None);
    assert_eq!(a.status, 200, "{}", a.body);
    (
        a.body["discovery"].as_u64().unwrap(),
        a.body["jwks"].as_u64().unwrap(),
    )
}

fn provider_mode(issuer: &str, mode: &str) {
    let a = call(
        &format!("{issuer}/__test/mode"),
        "POST",
        &[],
        Some(&json!({ "mode": mode })),
    );
    assert_eq!(a.status, 200, "{}", a.body);
}

/// A login started and brought back from the provider, not yet finished.
struct Started {
    /// The `oidc_session` cookie (`name=value`).
    cookie: String,
    /// The query string the provider sent the browser back with.
    qs: String,
}

/// `GET @login-oidc/test`, then the browser's part at the provider.
fn start_login(base: &str, issuer: &str) -> Started {
    start_login_at(base, issuer, "@login-oidc/test")
}

/// `GET <endpoint>`, then the browser's part at the provider.
fn start_login_at(base: &str, issuer: &str, endpoint: &str) -> Started {
    let a = call(&format!("{base}/{endpoint}"), "GET", &[], None);
    assert_eq!(a.status, 200, "{}", a.body);
    let next = a.body["next_url"].as_str().expect("next_url").to_string();
    assert!(next.starts_with(&format!("{issuer}/auth?")), "{next}");
    for part in [
        "code_challenge_method=S256",
        "nonce=",
        "state=",
        "scope=openid",
    ] {
        assert!(next.contains(part), "{part} missing from {next}");
    }
    let cookie = a
        .cookies
        .iter()
        .find(|c| c.starts_with("oidc_session="))
        .and_then(|c| c.split(';').next())
        .expect("the oidc_session cookie")
        .to_string();
    assert_eq!(
        cookie,
        format!("oidc_session={}", a.body["session"].as_str().unwrap())
    );
    let drive = format!(
        "{issuer}/__test/drive?url={}",
        url::form_urlencoded::byte_serialize(next.as_bytes()).collect::<String>()
    );
    let d = call(&drive, "GET", &[], None);
    assert_eq!(d.status, 200, "{}", d.body);
    let callback = d.body["callback"].as_str().unwrap();
    let (at, qs) = callback.split_once('?').unwrap();
    assert_eq!(at, REDIRECT);
    Started {
        cookie,
        qs: format!("?{qs}"),
    }
}

/// `POST @login-oidc/test` with the cookie and `qs`.
fn finish_login(base: &str, cookie: Option<&str>, qs: &str) -> Answer {
    let headers: Vec<(&str, &str)> = cookie.map(|c| ("Cookie", c)).into_iter().collect();
    call(
        &format!("{base}/@login-oidc/test"),
        "POST",
        &headers,
        Some(&json!({"qs": qs, "session": null})),
    )
}

fn login(base: &str, issuer: &str) -> Answer {
    let s = start_login(base, issuer);
    finish_login(base, Some(&s.cookie), &s.qs)
}

fn user(base: &str, login: &str) -> Answer {
    call(
        &format!("{base}/@users/{login}"),
        "GET",
        &[("Authorization", &admin())],
        None,
    )
}

/// The group ids `login` is a direct member of, as `@users` shows them.
fn groups_of(base: &str, login: &str) -> Vec<String> {
    let u = user(base, login);
    assert_eq!(u.status, 200, "{}", u.body);
    let mut ids: Vec<String> = u.body["groups"]["items"]
        .as_array()
        .unwrap_or_else(|| panic!("no groups in {}", u.body))
        .iter()
        .map(|g| g["id"].as_str().unwrap().to_string())
        .filter(|g| g != "AuthenticatedUsers")
        .collect();
    ids.sort();
    ids
}

fn user_count(base: &str) -> usize {
    let a = call(
        &format!("{base}/@users"),
        "GET",
        &[("Authorization", &admin())],
        None,
    );
    assert_eq!(a.status, 200, "{}", a.body);
    a.body["items_total"]
        .as_u64()
        .unwrap_or_else(|| panic!("no items_total: {}", a.body)) as usize
}

/// A refusal: the status, a JSON error whose message contains `says`.
fn assert_refused(a: &Answer, status: u16, says: &str) {
    assert_eq!(a.status, status, "{}", a.body);
    let message = a.body["message"].as_str().unwrap_or_default();
    assert!(
        message.contains(says),
        "expected a message with {says:?}: {}",
        a.body
    );
}

#[test]
fn single_sign_on_with_a_real_openid_provider() {
    let dir = TempDir::new("oidc");
    let (mut provider, issuer) = start_provider(&dir.0.join("provider.log"));
    let config = write_config(&dir.0, &issuer);
    let (server, base) = start_server(&dir, &config, &[], "server.log");

    // The login options, as volto-authomatic reads them.
    let options = call(&format!("{base}/@login"), "GET", &[], None);
    assert_eq!(options.status, 200, "{}", options.body);
    assert_eq!(
        options.body,
        json!({"options": [
            {"id": "test", "plugin": "oidc", "title": "Test provider",
             "url": format!("{base}/@login-oidc/test")},
            {"id": "down", "plugin": "oidc", "title": "A provider that is down",
             "url": format!("{base}/@login-oidc/down")},
        ]})
    );
    // Password login stays on by default.
    let pw = call(
        &format!("{base}/@login"),
        "POST",
        &[],
        Some(&json!({"login": "admin", "password": PASSWORD})),
    );
    assert_eq!(pw.status, 200, "{}", pw.body);
    let users_before = user_count(&base);

    // A first login creates the user, with its name, e-mail and groups.
    provider_account(
        &issuer,
        "sub-alice",
        json!({"preferred_username": "alice", "name": "Alice Liddell",
               "email": "alice@example.org", "groups": ["Reviewers", "editors"]}),
    );
    let first = login(&base, &issuer);
    assert_eq!(first.status, 200, "{}", first.body);
    let token = first.body["token"].as_str().expect("a token").to_string();
    assert!(
        first
            .cookies
            .iter()
            .any(|c| c.starts_with("oidc_session=;")),
        "the session cookie is cleared: {:?}",
        first.cookies
    );
    let me = call(
        &format!("{base}/@users/alice"),
        "GET",
        &[("Authorization", &format!("Bearer {token}"))],
        None,
    );
    assert_eq!(me.status, 200, "{}", me.body);
    assert_eq!(me.body["fullname"], "Alice Liddell");
    assert_eq!(me.body["email"], "alice@example.org");
    assert_eq!(user_count(&base), users_before + 1);
    assert_eq!(groups_of(&base, "alice"), ["Reviewers", "editors"]);

    // A second login updates it and leaves the group it no longer has.
    provider_account(
        &issuer,
        "sub-alice",
        json!({"preferred_username": "alice", "name": "Alice L.",
               "email": "alice@example.net", "groups": ["editors"]}),
    );
    let second = login(&base, &issuer);
    assert_eq!(second.status, 200, "{}", second.body);
    let u = user(&base, "alice");
    assert_eq!(u.body["fullname"], "Alice L.");
    assert_eq!(u.body["email"], "alice@example.net");
    assert_eq!(groups_of(&base, "alice"), ["editors"]);
    assert_eq!(user_count(&base), users_before + 1);

    // The same endpoints under pas.plugins.authomatic's name, as volto-authomatic 2.0.1's login
    // button calls them (with the site's public URL, and its session id in the body).
    let s = start_login_at(
        &base,
        &issuer,
        "@login-authomatic/test?publicUrl=http://volto",
    );
    let session = s.cookie.trim_start_matches("oidc_session=").to_string();
    let a = call(
        &format!("{base}/@login-authomatic/test"),
        "POST",
        &[],
        Some(&json!({"qs": s.qs, "session": session, "publicUrl": "http://volto"})),
    );
    assert_eq!(a.status, 200, "{}", a.body);
    assert!(a.body["token"].is_string(), "{}", a.body);
    assert_eq!(user_count(&base), users_before + 1);
    // A provider that is not configured, or none named: 404 with a JSON error, as
    // pas.plugins.authomatic answers ("Provider unknown is not available.").
    for path in ["@login-authomatic/unknown", "@login-authomatic"] {
        let missing = call(&format!("{base}/{path}"), "GET", &[], None);
        assert_eq!(missing.status, 404, "{path}: {}", missing.body);
        assert_eq!(missing.body["type"], "NotFound", "{path}: {}", missing.body);
    }
    let missing = call(
        &format!("{base}/@login-authomatic/unknown"),
        "POST",
        &[],
        Some(&json!({"qs": s.qs, "session": "x"})),
    );
    assert_eq!(missing.status, 404, "{}", missing.body);
    assert_eq!(user_count(&base), users_before + 1);

    // Logging out at the provider (what volto-authomatic's logout asks for).
    let out = call(&format!("{base}/@logout-oidc"), "GET", &[], None);
    assert_eq!(out.status, 200, "{}", out.body);
    let next = out.body["next_url"].as_str().unwrap();
    assert!(
        next.starts_with(&format!(
            "{issuer}/session/end?client_id=cms&post_logout_redirect_uri="
        )),
        "{next}"
    );
    assert_eq!(out.body["came_from"], base.as_str());

    // Tampered ID tokens are refused, and nothing changes.
    provider_account(
        &issuer,
        "sub-alice",
        json!({"preferred_username": "alice", "name": "Mallory", "groups": ["Administrators"]}),
    );
    for (mode, says) in [
        ("forge", "ID token was refused"),
        ("nonce", "ID token was refused"),
        ("expired", "ID token was refused"),
    ] {
        provider_mode(&issuer, mode);
        let a = login(&base, &issuer);
        assert_refused(&a, 401, says);
        let u = user(&base, "alice");
        assert_eq!(u.body["fullname"], "Alice L.", "after {mode}");
        assert_eq!(groups_of(&base, "alice"), ["editors"], "after {mode}");
    }
    provider_mode(&issuer, "normal");

    // A state this server did not issue, or from another browser session, is refused; the
    // real one still works afterwards (a refusal does not use it up).
    provider_account(
        &issuer,
        "sub-alice",
        json!({"preferred_username": "alice", "name": "Alice L.", "email": "alice@example.net",
               "groups": ["editors"]}),
    );
    let s = start_login(&base, &issuer);
    let forged_state = s.qs.replace("state=", "state=x");
    assert_refused(
        &finish_login(&base, Some(&s.cookie), &forged_state),
        401,
        "state is unknown",
    );
    assert_refused(&finish_login(&base, None, &s.qs), 401, "state is unknown");
    let other_issuer = s.qs.replace("iss=http", "iss=https");
    assert!(other_issuer != s.qs, "the provider names itself: {}", s.qs);
    assert_refused(
        &finish_login(&base, Some(&s.cookie), &other_issuer),
        401,
        "names the issuer",
    );
    assert_refused(
        &finish_login(&base, Some("oidc_session=someone-else"), &s.qs),
        401,
        "state is unknown",
    );
    let ok = finish_login(&base, Some(&s.cookie), &s.qs);
    assert_eq!(ok.status, 200, "{}", ok.body);
    // ... and a state is used once.
    assert_refused(
        &finish_login(&base, Some(&s.cookie), &s.qs),
        401,
        "state is unknown",
    );

    // Bad requests.
    let bad = call(
        &format!("{base}/@login-oidc/test"),
        "POST",
        &[],
        Some(&json!({"code": "x"})),
    );
    assert_refused(&bad, 400, "unknown field `code`");
    assert_refused(&finish_login(&base, None, "?state=x"), 400, "'code'");
    let unknown = call(&format!("{base}/@login-oidc/nope"), "GET", &[], None);
    assert_eq!(unknown.status, 404, "{}", unknown.body);

    // A local account with a password is not taken over by the provider's login.
    let created = call(
        &format!("{base}/@users"),
        "POST",
        &[("Authorization", &admin())],
        Some(&json!({"username": "bob", "password": "bob-secret-1234", "fullname": "Bob"})),
    );
    assert_eq!(created.status, 201, "{}", created.body);
    provider_account(
        &issuer,
        "sub-bob",
        json!({"preferred_username": "bob", "name": "Not Bob", "groups": ["Administrators"]}),
    );
    assert_refused(&login(&base, &issuer), 403, "local account 'bob'");
    assert_eq!(user(&base, "bob").body["fullname"], "Bob");
    assert_eq!(groups_of(&base, "bob"), Vec::<String>::new());

    // A provider that cannot be reached: a 502 with a JSON error.
    let down = call(&format!("{base}/@login-oidc/down"), "GET", &[], None);
    assert_refused(&down, 502, "cannot be reached");
    // The provider goes down between the start of a login and its end: a 502, nothing written.
    provider_account(
        &issuer,
        "sub-carol",
        json!({"preferred_username": "carol", "name": "Carol"}),
    );
    let s = start_login(&base, &issuer);
    let _ = provider.0.kill();
    let _ = provider.0.wait();
    let users = user_count(&base);
    assert_refused(
        &finish_login(&base, Some(&s.cookie), &s.qs),
        502,
        "cannot be reached",
    );
    assert_eq!(user(&base, "carol").status, 404);
    assert_eq!(user_count(&base), users);
    drop(server);

    // Password login turned off: POST @login is a 403, HTTP Basic a 401, with a clear message;
    // single sign-on still works.
    let (_provider, issuer) = start_provider(&dir.0.join("provider2.log"));
    let config = write_config(&dir.0, &issuer);
    let (_server, base) = start_server(&dir, &config, &["--no-password-login"], "server2.log");
    let pw = call(
        &format!("{base}/@login"),
        "POST",
        &[],
        Some(&json!({"login": "admin", "password": PASSWORD})),
    );
    assert_refused(&pw, 403, "Password login is turned off");
    let basic = call(
        &format!("{base}/@users"),
        "GET",
        &[("Authorization", &admin())],
        None,
    );
    assert_refused(&basic, 401, "Password login is turned off");
    provider_account(
        &issuer,
        "sub-alice",
        json!({"preferred_username": "alice", "name": "Alice L.", "groups": ["editors"]}),
    );
    let again = login(&base, &issuer);
    assert_eq!(again.status, 200, "{}", again.body);
    let token = again.body["token"].as_str().unwrap();
    let me = call(
        &format!("{base}/@users/alice"),
        "GET",
        &[("Authorization", &format!("Bearer {token}"))],
        None,
    );
    assert_eq!(me.status, 200, "{}", me.body);
}

/// The provider's discovery document and keys are read once and kept (not at every login);
/// when the provider rotates its keys (started again on its port with a new key under a new key
/// id), the first ID token naming the new key makes the server read the keys again, once, and
/// the login works; a token under a key id the provider never published costs one more read and
/// is refused; with `discovery_cache_seconds`, both are read again once that time passed.
#[test]
fn discovery_is_kept_and_a_key_rotation_is_followed() {
    let dir = TempDir::new("oidc-keys");
    let (provider, issuer) = start_provider(&dir.0.join("provider.log"));
    let port = issuer.rsplit(':').next().unwrap().to_string();
    let config = write_config(&dir.0, &issuer);
    let (server, base) = start_server(&dir, &config, &[], "server.log");
    let dora = || {
        provider_account(
            &issuer,
            "sub-dora",
            json!({"preferred_username": "dora", "name": "Dora"}),
        )
    };
    dora();
    for _ in 0..3 {
        let a = login(&base, &issuer);
        assert_eq!(a.status, 200, "{}", a.body);
    }
    let out = call(&format!("{base}/@logout-oidc"), "GET", &[], None);
    assert_eq!(out.status, 200, "{}", out.body);
    assert_eq!(
        provider_counts(&issuer),
        (1, 1),
        "three logins and a logout"
    );

    // The provider rotates its keys: same issuer, a new key under a new key id.
    drop(provider);
    let (_provider, again) = start_provider_with(
        &dir.0.join("provider-rotated.log"),
        &[("PORT", &port), ("KEY_ID", "k2")],
    );
    assert_eq!(again, issuer);
    dora();
    let a = login(&base, &issuer);
    assert_eq!(a.status, 200, "{}", a.body);
    assert_eq!(
        provider_counts(&issuer),
        (0, 1),
        "the kept discovery document, the keys read again once"
    );
    let a = login(&base, &issuer);
    assert_eq!(a.status, 200, "{}", a.body);
    assert_eq!(provider_counts(&issuer), (0, 1), "the new keys are kept");

    // A token under a key id the provider never published: read once more, then refused.
    provider_mode(&issuer, "unknown-kid");
    assert_refused(&login(&base, &issuer), 401, "ID token was refused");
    assert_eq!(provider_counts(&issuer), (0, 2));
    provider_mode(&issuer, "normal");
    let a = login(&base, &issuer);
    assert_eq!(a.status, 200, "{}", a.body);
    assert_eq!(provider_counts(&issuer), (0, 2));
    drop(server);

    // A provider kept for one second is read again once it passed.
    let config = write_config_with(&dir.0, &issuer, "discovery_cache_seconds = 1");
    let (_server, base) = start_server(&dir, &config, &[], "server-short.log");
    let a = login(&base, &issuer);
    assert_eq!(a.status, 200, "{}", a.body);
    let (d0, j0) = provider_counts(&issuer);
    std::thread::sleep(std::time::Duration::from_millis(1200));
    let a = login(&base, &issuer);
    assert_eq!(a.status, 200, "{}", a.body);
    let (d1, j1) = provider_counts(&issuer);
    assert!(
        d1 > d0 && j1 > j0,
        "read again after a second: {d0},{j0} then {d1},{j1}"
    );
}
