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
            ..
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

fn advance(e: &Engine<MemStore>, secs: i64) {
    let r = send(
        e,
        Method::Post,
        "/@test-clock",
        true,
        Some(json!({ "advance": secs })),
    );
    assert_eq!(r.status, 200, "{:?}", r.json_body());
}

fn job(e: &Engine<MemStore>, uuid: &str) -> Value {
    send(e, Method::Get, &format!("/@jobs/{uuid}"), true, None).json_body()
}

fn scheduled_webhook(e: &Engine<MemStore>, id: &str, url: &str) -> String {
    let r = send(
        e,
        Method::Post,
        "/@scheduled-jobs",
        true,
        Some(
            json!({"id": id, "title": id, "action": "webhook", "enabled": false,
            "params": {"url": url, "secret": "k"}, "schedule": "0 8 * * 1"}),
        ),
    );
    assert_eq!(r.status, 201, "{:?}", r.json_body());
    let start = send(
        e,
        Method::Post,
        &format!("/@scheduled-jobs/{id}/start"),
        true,
        None,
    );
    assert_eq!(start.status, 204, "{:?}", start.json_body());
    let jobs = send(e, Method::Get, "/@jobs", true, None).json_body();
    jobs.as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|j| j["params"]["scheduled_job"] == id)
        .unwrap()["uuid"]
        .as_str()
        .unwrap()
        .to_string()
}

fn fail(e: &Engine<MemStore>, uuid: &str) {
    let due = e.claim_deliveries(10).unwrap();
    assert!(due.iter().any(|d| d.job == uuid), "{uuid} not due: {due:?}");
    e.report_deliveries(
        due.iter()
            .map(|d| {
                (
                    d.job.clone(),
                    engine::automation::jobs::Outcome::Failed("could not connect".into(), None),
                )
            })
            .collect(),
    )
    .unwrap();
}

#[test]
fn a_failing_delivery_is_retried_for_a_day_then_dead_letter_and_resumes_with_its_receiver() {
    let e = engine();
    let hook = scheduled_webhook(&e, "a", "https://hooks.example.com/a");
    fail(&e, &hook);
    let j = job(&e, &hook);
    assert_eq!(j["status"], "queued", "a waiting retry is queued: {j}");
    assert!(j["result"]["next_attempt"].is_string(), "{j}");
    // the backoff is capped: an attempt at least every 10 minutes, for 24 hours
    let mut attempts = 1;
    for _ in 0..400 {
        advance(&e, engine::automation::jobs::MAX_BACKOFF_SECS);
        fail(&e, &hook);
        attempts += 1;
        if job(&e, &hook)["status"] != "queued" {
            break;
        }
    }
    let j = job(&e, &hook);
    assert!(attempts > 140, "retried for a day: {attempts} attempts");
    assert_eq!(j["status"], "failed", "{j}");
    assert_eq!(j["result"]["dead_letter"], true, "{j}");
    assert_eq!(j["result"]["error"], "could not connect", "{j}");
    // a dead letter is still probed now and then
    assert!(j["result"]["next_attempt"].is_string(), "{j}");
    assert!(e.claim_deliveries(10).unwrap().is_empty());

    // the receiver is back: another delivery to it succeeds, and the dead letter is due at once
    let other = scheduled_webhook(&e, "b", "https://HOOKS.example.com/b");
    let due = e.claim_deliveries(10).unwrap();
    assert_eq!(due.len(), 1);
    assert_eq!(due[0].job, other);
    e.report_deliveries(vec![(
        other.clone(),
        engine::automation::jobs::Outcome::Delivered(Some(200)),
    )])
    .unwrap();
    let done = job(&e, &other);
    assert_eq!(done["status"], "completed");
    assert!(done["result"].get("next_attempt").is_none(), "{done}");
    let due = e.claim_deliveries(10).unwrap();
    assert_eq!(due.len(), 1, "{due:?}");
    assert_eq!(due[0].job, hook);
    e.report_deliveries(vec![(
        hook.clone(),
        engine::automation::jobs::Outcome::Delivered(Some(204)),
    )])
    .unwrap();
    let j = job(&e, &hook);
    assert_eq!(j["status"], "completed", "{j}");
    for k in ["next_attempt", "dead_letter", "error"] {
        assert!(j["result"].get(k).is_none(), "{k} left in {j}");
    }
}

struct Answer(u16);

impl engine::WebhookTransport for Answer {
    async fn post(&self, _: &engine::WebhookPost<'_>) -> Result<u16, String> {
        Ok(self.0)
    }
}

#[test]
fn a_final_answer_fails_at_once_and_408_429_5xx_are_retried() {
    let e = engine();
    for (status, retried) in [
        (404, false),
        (410, false),
        (301, false),
        (408, true),
        (429, true),
        (503, true),
    ] {
        let hook = scheduled_webhook(&e, &format!("h{status}"), "https://hooks.example.com/x");
        let due = e.claim_deliveries(10).unwrap();
        assert_eq!(due.len(), 1);
        let outcome = ready(engine::deliver(
            &due[0],
            &Answer(status),
            &engine::NoMail,
            async { Err::<engine::SmtpSettings, String>("unused".into()) },
        ));
        e.report_deliveries(vec![(hook.clone(), outcome)]).unwrap();
        let j = job(&e, &hook);
        if retried {
            assert_eq!(j["status"], "queued", "{status}: {j}");
            // out of the way of the next round
            assert_eq!(
                send(&e, Method::Delete, &format!("/@jobs/{hook}"), true, None).status,
                204
            );
        } else {
            assert_eq!(j["status"], "failed", "{status}: {j}");
            assert_eq!(j["result"]["permanent"], true, "{j}");
            assert_eq!(j["result"]["response_status"], status, "{j}");
            assert!(j["result"].get("next_attempt").is_none(), "{j}");
        }
    }
}

/// Poll a future that never waits (the transports above answer at once) to its end.
fn ready<F: std::future::Future>(f: F) -> F::Output {
    let mut f = std::pin::pin!(f);
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    loop {
        if let std::task::Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
    }
}

#[test]
fn a_visitors_message_is_sent_as_the_site_with_the_visitor_in_reply_to() {
    let e = engine();
    let panel = send(
        &e,
        Method::Patch,
        "/@controlpanels/mail",
        true,
        Some(json!({"email_from_address": "site@example.com", "email_from_name": "The Site"})),
    );
    assert_eq!(panel.status, 204, "{:?}", panel.json_body());
    let sent = send(
        &e,
        Method::Post,
        "/@email-notification",
        false,
        Some(json!({"from": "visitor@example.net", "message": "Hello", "name": "Vi"})),
    );
    assert_eq!(sent.status, 204, "{:?}", sent.json_body());
    let due = e.claim_deliveries(10).unwrap();
    assert_eq!(due.len(), 1);
    match &due[0].delivery {
        Delivery::Mail {
            from,
            from_name,
            reply_to,
            to,
            ..
        } => {
            assert_eq!(from, "site@example.com");
            assert_eq!(from_name.as_deref(), Some("The Site"));
            assert_eq!(reply_to.as_deref(), Some("visitor@example.net"));
            assert_eq!(to, &["site@example.com".to_string()]);
        }
        other => panic!("not a mail: {other:?}"),
    }
}

#[test]
fn jobs_are_batched_on_request_and_finished_ones_pruned_after_their_retention() {
    let e = engine();
    let purge = send(
        &e,
        Method::Post,
        "/@scheduled-jobs",
        true,
        Some(
            json!({"id": "purge", "title": "Purge", "action": "purge-recyclebin",
            "enabled": false, "schedule": "0 3 * * *"}),
        ),
    );
    assert_eq!(purge.status, 201, "{:?}", purge.json_body());
    for _ in 0..3 {
        let r = send(&e, Method::Post, "/@scheduled-jobs/purge/start", true, None);
        assert_eq!(r.status, 204);
    }
    let all = send(&e, Method::Get, "/@jobs", true, None).json_body();
    assert_eq!(all.as_array().unwrap().len(), 3);
    assert_eq!(all[0]["kind"], "purge-recyclebin", "{all}");
    let page = send(&e, Method::Get, "/@jobs?b_size=2", true, None).json_body();
    assert_eq!(page["items_total"], 3, "{page}");
    assert_eq!(page["items"].as_array().unwrap().len(), 2, "{page}");
    assert_eq!(
        page["batching"]["next"], "http://localhost:8080/@jobs?b_start=2&b_size=2",
        "{page}"
    );
    let bad = send(&e, Method::Get, "/@jobs?b_size=0", true, None);
    assert_eq!(bad.status, 400);

    // a queued delivery is kept however old it is; finished jobs go after their retention
    let hook = scheduled_webhook(&e, "w", "https://hooks.example.com/w");
    assert_eq!(e.prune_jobs().unwrap(), 0);
    advance(
        &e,
        (engine::automation::jobs::FINISHED_RETENTION_DAYS + 1) * 24 * 3600,
    );
    assert_eq!(e.prune_jobs().unwrap(), 3);
    let left = send(&e, Method::Get, "/@jobs", true, None).json_body();
    assert_eq!(left.as_array().unwrap().len(), 1, "{left}");
    assert_eq!(left[0]["uuid"], hook.as_str());
}

#[test]
fn a_reset_answers_alike_for_any_login_and_mails_a_login_at_most_three_times_an_hour() {
    let e = engine();
    let created = send(
        &e,
        Method::Post,
        "/@users",
        true,
        Some(json!({"username": "rosa", "email": "rosa@example.com", "password": "rosa-password"})),
    );
    assert_eq!(created.status, 201);
    let ghost = send(
        &e,
        Method::Post,
        "/@users/ghost/reset-password",
        false,
        None,
    );
    let known = send(&e, Method::Post, "/@users/rosa/reset-password", false, None);
    assert_eq!((ghost.status, &ghost.body), (known.status, &known.body));
    assert_eq!(known.status, 200);
    for _ in 0..4 {
        let again = send(&e, Method::Post, "/@users/rosa/reset-password", false, None);
        assert_eq!((again.status, &again.body), (known.status, &known.body));
    }
    let mails = |e: &Engine<MemStore>| {
        send(e, Method::Get, "/@jobs", true, None)
            .json_body()
            .as_array()
            .unwrap()
            .iter()
            .filter(|j| j["params"]["via"] == "reset-password")
            .count()
    };
    assert_eq!(
        mails(&e),
        3,
        "at most three reset mails an hour, none for 'ghost'"
    );
    advance(&e, 3601);
    assert_eq!(
        send(&e, Method::Post, "/@users/rosa/reset-password", false, None).status,
        200
    );
    assert_eq!(mails(&e), 4);
}
