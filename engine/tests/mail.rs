//! Mail leaves the engine only through the outbox ([`engine::mail`]): a password reset queues its
//! mail there (before, it was only logged, so host-server never sent it), and a content rule's
//! mail action accepts only addresses or users' logins as recipients.

use engine::automation::jobs::Delivery;
use engine::{Engine, EngineOptions, MemStore, Method, Request, Response, SiteSetup};
use serde_json::{json, Value};

const ADMIN: &str = "Basic YWRtaW46c2VjcmV0";
const BASE: &str = "http://localhost:8080";

fn engine() -> Engine<MemStore> {
    let e = Engine::new(MemStore::new(), EngineOptions::for_tests()).unwrap();
    e.create_site(&SiteSetup::new("secret")).unwrap();
    e
}

fn send(e: &Engine<MemStore>, m: Method, path: &str, admin: bool, body: Option<Value>) -> Response {
    let mut r = Request::new(m, path, BASE);
    if let Some(b) = body {
        r = r.json(&b);
    }
    if admin {
        r = r.header("Authorization", ADMIN);
    }
    e.handle(r)
}

#[test]
fn a_password_reset_queues_its_mail_in_the_outbox() {
    let e = engine();
    let created = send(
        &e,
        Method::Post,
        "/@users",
        true,
        Some(json!({"username": "rosa", "email": "rosa@example.com", "password": "rosa-password"})),
    );
    assert_eq!(created.status, 201);
    let set_sender = send(
        &e,
        Method::Patch,
        "/@controlpanels/mail",
        true,
        Some(json!({"email_from_address": "site@example.com"})),
    );
    assert_eq!(set_sender.status, 204, "{:?}", set_sender.json_body());
    assert!(e.claim_deliveries(10).unwrap().is_empty());

    let reset = send(&e, Method::Post, "/@users/rosa/reset-password", false, None);
    assert_eq!(reset.status, 200);
    let kept = send(&e, Method::Get, "/@test-mails/rosa@example.com", true, None);
    let token = kept.json_body()["token"].as_str().unwrap().to_string();

    let due = e.claim_deliveries(10).unwrap();
    assert_eq!(due.len(), 1, "{due:?}");
    match &due[0].delivery {
        Delivery::Mail {
            from,
            to,
            subject,
            body,
        } => {
            assert_eq!(from, "site@example.com");
            assert_eq!(to, &["rosa@example.com".to_string()]);
            assert_eq!(subject, "Password reset");
            assert!(body.contains(&token), "{body}");
        }
        other => panic!("not a mail: {other:?}"),
    }
    // once delivered, the stored job keeps no text (the token is no longer in the store)
    e.report_deliveries(vec![(
        due[0].job.clone(),
        engine::automation::jobs::Outcome::Delivered(None),
    )])
    .unwrap();
    let stored = e
        .with_write(|ctx| engine::automation::jobs::get(ctx, &due[0].job))
        .unwrap()
        .unwrap();
    match stored.delivery {
        Some(Delivery::Mail { body, .. }) => assert_eq!(body, ""),
        other => panic!("not a mail: {other:?}"),
    }
    let jobs = send(&e, Method::Get, "/@jobs", true, None).json_body();
    assert_eq!(jobs[0]["title"], "Mail: Password reset");
    assert_eq!(jobs[0]["kind"], "mail");
    assert_eq!(jobs[0]["params"]["to"], json!(["rosa@example.com"]));
}

#[test]
fn a_mail_action_takes_addresses_and_logins_only() {
    let e = engine();
    let rule = send(
        &e,
        Method::Post,
        "/@controlpanels/content-rules",
        true,
        Some(json!({"title": "Announce", "event": "Object added to this container"})),
    );
    assert_eq!(rule.status, 201, "{:?}", rule.json_body());
    let add = |recipients: &str, source: &str| {
        send(
            &e,
            Method::Post,
            "/@controlpanels/content-rules/rule-1/action",
            true,
            Some(
                json!({"type": "plone.actions.Mail", "subject": "New", "source": source,
                "recipients": recipients, "message": "See ${url}"}),
            ),
        )
    };
    let bad = add("editors@example.com, not-an-address", "");
    assert_eq!(bad.status, 400);
    let message = bad.json_body()["message"].as_str().unwrap().to_string();
    assert!(message.contains("not-an-address"), "{message}");
    assert_eq!(add("editors@example.com", "nobody").status, 400);
    assert_eq!(add("editors@example.com, admin", "").status, 201);
    assert_eq!(
        add("a@example.com,b@example.com", "site@example.com").status,
        201
    );

    // a login is checked when the action is saved, not on every later save of the rule
    let bob = send(
        &e,
        Method::Post,
        "/@users",
        true,
        Some(json!({"username": "bob", "email": "bob@example.com", "password": "bob-password"})),
    );
    assert_eq!(bob.status, 201);
    assert_eq!(add("bob", "").status, 201);
    assert_eq!(
        send(&e, Method::Delete, "/@users/bob", true, None).status,
        204
    );
    let rename = send(
        &e,
        Method::Patch,
        "/@controlpanels/content-rules/rule-1",
        true,
        Some(json!({"title": "Announce new items"})),
    );
    assert_eq!(rename.status, 204, "{:?}", rename.json_body());
}

#[test]
fn a_scheduled_mail_needs_an_address() {
    let e = engine();
    let add = |to: &str| {
        send(
            &e,
            Method::Post,
            "/@scheduled-jobs",
            true,
            Some(
                json!({"id": format!("m{}", to.len()), "title": "Weekly", "action": "send-mail",
                "params": {"to": to, "subject": "Week", "message": "Hello"},
                "schedule": "0 8 * * 1"}),
            ),
        )
    };
    let bad = add("editors");
    assert_eq!(bad.status, 400);
    let message = bad.json_body()["message"].as_str().unwrap().to_string();
    assert!(message.contains("'to'"), "{message}");
    assert_eq!(add("editors@example.com").status, 201);
}
