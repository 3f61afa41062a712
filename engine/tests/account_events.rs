//! Account changes announce themselves to the subscribers (content rules trigger on them): users
//! created, changed, logged in and out, removed; groups added, changed, removed; local roles
//! changed by sharing. A request that fails announces nothing.

use std::sync::{Arc, Mutex};

use engine::core::events::Event;
use engine::runtime::context::Ctx;
use engine::runtime::subscriber::Subscriber;
use engine::{Engine, EngineOptions, MemStore, Method, Request, SiteSetup};
use serde_json::json;

const ADMIN: &str = "Basic YWRtaW46c2VjcmV0";
const BASE: &str = "http://localhost:8080";

struct Recorder(Arc<Mutex<Vec<Event>>>);

impl Subscriber for Recorder {
    fn name(&self) -> &'static str {
        "recorder"
    }
    fn on_event(&self, _: &mut Ctx<'_>, event: &Event) -> engine::Result<()> {
        if let Ok(mut seen) = self.0.lock() {
            seen.push(event.clone());
        }
        Ok(())
    }
}

#[test]
fn account_changes_emit_their_events() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let mut e = Engine::new(MemStore::new(), EngineOptions::for_tests()).unwrap();
    e.create_site(&SiteSetup::new("secret")).unwrap();
    e.subscribe(Box::new(Recorder(seen.clone())));
    let send = |m: Method, path: &str, auth: Option<&str>, body: serde_json::Value| {
        let mut r = Request::new(m, path, BASE).json(&body);
        if let Some(a) = auth {
            r = r.header("Authorization", a);
        }
        let resp = e.handle(r);
        let events = std::mem::take(&mut *seen.lock().unwrap());
        (resp.status, events)
    };
    let user = |login: &str| login.to_string();
    let (status, events) = send(
        Method::Post,
        "/@users",
        Some(ADMIN),
        json!({"username": "ann", "password": "ann-password"}),
    );
    assert_eq!(status, 201);
    assert_eq!(events, [Event::UserAdded { login: user("ann") }]);

    let (status, events) = send(
        Method::Post,
        "/@login",
        None,
        json!({"login": "ann", "password": "ann-password"}),
    );
    assert_eq!(status, 200);
    assert_eq!(events, [Event::UserLoggedIn { login: user("ann") }]);

    let (status, events) = send(
        Method::Post,
        "/@login",
        None,
        json!({"login": "ann", "password": "wrong"}),
    );
    assert_eq!(status, 401);
    assert_eq!(events, []);

    let token = {
        let resp = e.handle(
            Request::new(Method::Post, "/@login", BASE)
                .json(&json!({"login": "ann", "password": "ann-password"})),
        );
        resp.json_body()["token"].as_str().unwrap().to_string()
    };
    seen.lock().unwrap().clear();
    let bearer = format!("Bearer {token}");
    let (status, events) = send(Method::Post, "/@logout", Some(&bearer), json!({}));
    assert_eq!(status, 204);
    assert!(events.contains(&Event::UserLoggedOut { login: user("ann") }));

    let (status, events) = send(
        Method::Post,
        "/@groups",
        Some(ADMIN),
        json!({"groupname": "team", "users": ["ann"]}),
    );
    assert_eq!(status, 201);
    assert_eq!(events, [Event::GroupAdded { id: "team".into() }]);

    let (status, events) = send(
        Method::Patch,
        "/@groups/team",
        Some(ADMIN),
        json!({"title": "The team"}),
    );
    assert_eq!(status, 204);
    assert_eq!(events, [Event::GroupModified { id: "team".into() }]);

    let (status, events) = send(
        Method::Patch,
        "/@groups/team",
        Some(ADMIN),
        json!({"groups": ["team"]}),
    );
    assert_eq!(status, 400, "a group containing itself");
    assert_eq!(events, []);

    let (status, events) = send(
        Method::Post,
        "/@sharing",
        Some(ADMIN),
        json!({"entries": [{"id": "team", "roles": {"Reader": true}}]}),
    );
    assert_eq!(status, 204);
    assert!(
        matches!(events.as_slice(), [Event::LocalRolesChanged { path, .. }] if path.is_empty())
    );

    // Removing a user takes it out of its groups too.
    let (status, events) = send(Method::Delete, "/@users/ann", Some(ADMIN), json!({}));
    assert_eq!(status, 204);
    assert_eq!(
        events,
        [
            Event::UserRemoved { login: user("ann") },
            Event::GroupModified { id: "team".into() }
        ]
    );

    let (status, events) = send(Method::Delete, "/@groups/team", Some(ADMIN), json!({}));
    assert_eq!(status, 204);
    assert_eq!(events, [Event::GroupRemoved { id: "team".into() }]);
}
