//! `jobs::perform`: what a due delivery sends through the host's transports, and which outcome
//! each answer is. The transports here only record what they were given.

use std::cell::RefCell;
use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use engine::automation::jobs::{
    perform, Delivery, DueDelivery, MailError, MailMessage, MailTransport, Outcome, SmtpSettings,
    WebhookPost, WebhookTransport,
};

/// Run a future that never waits (the transports below answer at once).
fn ready<T>(f: impl Future<Output = T>) -> T {
    let mut f = pin!(f);
    match f.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(v) => v,
        Poll::Pending => panic!("the future waited"),
    }
}

/// A webhook call as recorded: URL, headers, body.
type Posted = (String, Vec<(&'static str, String)>, String);

/// A mail as recorded: server, sender, recipients, `Message-ID`, sender's name, `Reply-To`.
type Sent = (
    SmtpSettings,
    String,
    Vec<String>,
    String,
    Option<String>,
    Option<String>,
);

struct Hooks {
    answer: Result<u16, String>,
    seen: RefCell<Vec<Posted>>,
}

impl WebhookTransport for Hooks {
    async fn post(&self, post: &WebhookPost<'_>) -> Result<u16, String> {
        self.seen.borrow_mut().push((
            post.url.to_string(),
            post.headers.clone(),
            post.body.to_string(),
        ));
        self.answer.clone()
    }
}

struct Mails {
    answer: Result<(), MailError>,
    seen: RefCell<Vec<Sent>>,
}

impl MailTransport for Mails {
    async fn send(&self, smtp: &SmtpSettings, mail: &MailMessage<'_>) -> Result<(), MailError> {
        self.seen.borrow_mut().push((
            smtp.clone(),
            mail.from.to_string(),
            mail.to.to_vec(),
            mail.message_id.clone(),
            mail.from_name.map(str::to_string),
            mail.reply_to.map(str::to_string),
        ));
        self.answer.clone()
    }
}

fn hooks(answer: Result<u16, String>) -> Hooks {
    Hooks {
        answer,
        seen: RefCell::new(Vec::new()),
    }
}

fn mails(answer: Result<(), MailError>) -> Mails {
    Mails {
        answer,
        seen: RefCell::new(Vec::new()),
    }
}

fn webhook() -> DueDelivery {
    DueDelivery {
        job: "j-1".into(),
        attempt: 3,
        delivery: Delivery::Webhook {
            url: "http://hook.test/in".into(),
            body: "{\"a\":1}".into(),
            signature: "sha256=ab".into(),
        },
    }
}

fn mail() -> DueDelivery {
    DueDelivery {
        job: "j-2".into(),
        attempt: 1,
        delivery: Delivery::Mail {
            from: "site@example.org".into(),
            from_name: Some("The Site".into()),
            reply_to: Some("visitor@example.net".into()),
            to: vec!["a@example.org".into()],
            subject: "Hi".into(),
            body: "Text".into(),
        },
    }
}

fn smtp(host: &str) -> SmtpSettings {
    SmtpSettings {
        host: host.into(),
        port: 587,
        user: String::new(),
        password: String::new(),
    }
}

#[test]
fn a_webhook_is_posted_with_its_headers_and_delivered_on_2xx_only() {
    let never = || async { Err::<SmtpSettings, _>(String::from("not asked")) };
    let h = hooks(Ok(204));
    let m = mails(Ok(()));
    assert_eq!(
        ready(perform(&webhook(), &h, &m, never())),
        Outcome::Delivered(Some(204))
    );
    assert_eq!(
        h.seen.borrow()[0],
        (
            "http://hook.test/in".to_string(),
            vec![
                ("Content-Type", "application/json".to_string()),
                ("X-Signature-256", "sha256=ab".to_string()),
                ("Idempotency-Key", "j-1".to_string()),
                ("X-Delivery-Attempt", "3".to_string()),
            ],
            "{\"a\":1}".to_string(),
        )
    );
    assert!(m.seen.borrow().is_empty());
    assert_eq!(
        ready(perform(&webhook(), &hooks(Ok(500)), &m, never())),
        Outcome::Failed("the receiver answered 500".into(), Some(500))
    );
    // 408, 429 and 5xx are worth retrying; any other answer is final (redirects are not followed)
    for status in [408, 429, 503] {
        assert_eq!(
            ready(perform(&webhook(), &hooks(Ok(status)), &m, never())),
            Outcome::Failed(format!("the receiver answered {status}"), Some(status))
        );
    }
    for status in [302, 400, 404, 410] {
        assert_eq!(
            ready(perform(&webhook(), &hooks(Ok(status)), &m, never())),
            Outcome::Rejected(
                format!("the receiver answered {status}, which is final"),
                Some(status)
            )
        );
    }
    assert_eq!(
        ready(perform(
            &webhook(),
            &hooks(Err("no answer: refused".into())),
            &m,
            never()
        )),
        Outcome::Failed("no answer: refused".into(), None)
    );
}

#[test]
fn a_mail_goes_to_the_configured_server_with_a_stable_message_id() {
    let h = hooks(Ok(200));
    let m = mails(Ok(()));
    let got = ready(perform(&mail(), &h, &m, async { Ok(smtp("smtp.test")) }));
    assert_eq!(got, Outcome::Delivered(None));
    assert_eq!(
        m.seen.borrow()[0],
        (
            smtp("smtp.test"),
            "site@example.org".to_string(),
            vec!["a@example.org".to_string()],
            "<j-2@outbox>".to_string(),
            Some("The Site".to_string()),
            Some("visitor@example.net".to_string()),
        )
    );
    assert!(h.seen.borrow().is_empty());
    // No server configured, settings unreadable, the server refusing: each a failed attempt.
    let none = mails(Ok(()));
    assert_eq!(
        ready(perform(&mail(), &h, &none, async { Ok(smtp("")) })),
        Outcome::Failed(
            "no SMTP server is configured (mail control panel: smtp_host)".into(),
            None
        )
    );
    assert!(none.seen.borrow().is_empty());
    assert_eq!(
        ready(perform(&mail(), &h, &m, async {
            Err::<SmtpSettings, _>(String::from("store gone"))
        })),
        Outcome::Failed("mail settings: store gone".into(), None)
    );
    assert_eq!(
        ready(perform(
            &mail(),
            &h,
            &mails(Err(MailError::transient("SMTP: refused"))),
            async { Ok(smtp("smtp.test")) }
        )),
        Outcome::Failed("SMTP: refused".into(), None)
    );
    // a permanent refusal (an SMTP 5xx reply) is final
    assert_eq!(
        ready(perform(
            &mail(),
            &h,
            &mails(Err(MailError::permanent("SMTP: 550 no such mailbox"))),
            async { Ok(smtp("smtp.test")) }
        )),
        Outcome::Rejected("SMTP: 550 no such mailbox".into(), None)
    );
}
