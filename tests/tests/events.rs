//! Every change to a content record is announced by an event.
//!
//! Runs every scenario in process (engine over the memory store, as `memory.rs` does) with two
//! observers: a commit hook on the store that sees each committed change set, and a subscriber
//! registered on the engine that records every event delivered. For every request that
//! committed, each content record (`o:<uid>`) the commit created, changed or deleted must be named
//! by one of the events delivered in that request ([`engine::core::events::Event::objects`]); otherwise
//! the test fails naming the scenario, the step, the uid and what happened to it. More loosely,
//! a commit that changed any other stored record (the store generation aside) must have been
//! announced by at least one event.
//!
//! Site creation is checked the same way (as step 0). `SCENARIO=<name>` runs one scenario.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

use engine::core::events::Event;
use engine::runtime::context::Ctx;
use engine::runtime::subscriber::Subscriber;
use engine::{Engine, EngineOptions, MemStore, Request, Response, SiteSetup};
use tests::{run_scenario, Tally, Target};

const BASE: &str = "http://localhost:8080";

/// What one commit did to one content record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Effect {
    Created,
    Changed,
    Deleted,
}

/// What one commit did: the content records it touched (uid → effect), and the other keys it
/// changed (besides the store generation).
#[derive(Default)]
struct Touched {
    objects: BTreeMap<String, Effect>,
    other_keys: Vec<String>,
}

/// State shared with the commit hook and the recording subscriber.
#[derive(Default)]
struct Observed {
    /// The committed key/value pairs (kept from every change set, so "changed" can be told from
    /// "written again with the same bytes").
    shadow: BTreeMap<Vec<u8>, Vec<u8>>,
    /// The content records touched by each commit since the last [`Observed::take`].
    commits: Vec<Touched>,
    /// The events delivered since the last [`Observed::take`].
    events: Vec<Event>,
}

/// Records every event delivered (registered after the built-in subscribers, so it also sees the
/// events they emit in later rounds).
struct Recorder(Arc<Mutex<Observed>>);

impl Subscriber for Recorder {
    fn name(&self) -> &'static str {
        "test-recorder"
    }

    fn on_event(&self, _: &mut Ctx<'_>, event: &Event) -> engine::Result<()> {
        if let Ok(mut o) = self.0.lock() {
            o.events.push(event.clone());
        }
        Ok(())
    }
}

/// The engine over a fresh site, observed.
struct Observer {
    engine: Engine<MemStore>,
    observed: Arc<Mutex<Observed>>,
    scenario: String,
    step: usize,
    /// Requests whose events do not account for their commit, described.
    problems: Vec<String>,
}

impl Observer {
    fn new(scenario: &str, profiles: &[String]) -> Self {
        let observed = Arc::new(Mutex::new(Observed::default()));
        let store = MemStore::new();
        let hook_state = observed.clone();
        store.set_commit_hook(Some(Box::new(move |changes| {
            let mut o = hook_state
                .lock()
                .map_err(|_| engine::StoreError::Backend("observer poisoned".into()))?;
            let mut touched = Touched::default();
            for (key, value) in changes {
                let before = o.shadow.get(key).cloned();
                let effect = match (&before, value) {
                    (None, Some(_)) => Some(Effect::Created),
                    (Some(b), Some(v)) if b != v => Some(Effect::Changed),
                    (Some(_), None) => Some(Effect::Deleted),
                    _ => None,
                };
                match (effect, key.strip_prefix(b"o:")) {
                    (Some(effect), Some(uid)) => {
                        let uid = String::from_utf8_lossy(uid).into_owned();
                        touched.objects.insert(uid, effect);
                    }
                    (Some(_), None) if key.as_slice() != b"s:generation" => {
                        touched
                            .other_keys
                            .push(String::from_utf8_lossy(key).into_owned());
                    }
                    _ => {}
                }
                match value {
                    Some(v) => o.shadow.insert(key.clone(), v.clone()),
                    None => o.shadow.remove(key),
                };
            }
            o.commits.push(touched);
            Ok(())
        })));
        let mut engine = Engine::new(store, EngineOptions::for_tests()).expect("engine");
        engine.subscribe(Box::new(Recorder(observed.clone())));
        let mut me = Observer {
            engine,
            observed,
            scenario: scenario.to_string(),
            step: 0,
            problems: Vec::new(),
        };
        let mut setup = SiteSetup::new("secret");
        setup.profiles = profiles.to_vec();
        me.engine.create_site(&setup).expect("create site");
        me.check("create_site");
        me
    }

    /// Compare the commits since the last check with the events delivered since then.
    fn check(&mut self, what: &str) {
        let (commits, events) = {
            let mut o = self.observed.lock().expect("observer");
            (
                std::mem::take(&mut o.commits),
                std::mem::take(&mut o.events),
            )
        };
        let named: BTreeSet<&str> = events.iter().flat_map(Event::objects).collect();
        for touched in &commits {
            if events.is_empty() && !touched.other_keys.is_empty() {
                self.problems.push(format!(
                    "scenario `{}`, step {} ({what}): the commit changed {:?} but no event was \
                     delivered",
                    self.scenario, self.step, touched.other_keys
                ));
            }
            for (uid, effect) in &touched.objects {
                if !named.contains(uid.as_str()) {
                    self.problems.push(format!(
                        "scenario `{}`, step {} ({what}): content record o:{uid} was {effect:?} \
                         by the commit, but no event names it; events delivered: {events:?}",
                        self.scenario, self.step
                    ));
                }
            }
        }
    }
}

impl Target for Observer {
    async fn send(&mut self, req: Request) -> Response {
        self.step += 1;
        let line = format!("{} {}", req.method.as_str(), req.path);
        let resp = self.engine.handle(req);
        self.check(&line);
        resp
    }
    fn base_url(&self) -> String {
        BASE.to_string()
    }
}

#[test]
fn every_committed_change_to_a_content_record_is_announced_by_an_event() {
    let mut tally = Tally::new("events");
    let only = std::env::var("SCENARIO").ok();
    let mut problems = Vec::new();
    let mut scenarios = 0;
    for s in tally.select(only.as_deref()) {
        scenarios += 1;
        let mut target = Observer::new(&s.name, &s.profiles);
        let outcome = pollster::block_on(run_scenario(&mut target, &s));
        // The scenarios themselves must still pass with the recorder subscribed.
        tally.record(outcome.map_err(|f| f.to_string()));
        problems.append(&mut target.problems);
    }
    eprintln!("{}", tally.summary());
    tally.assert_all_passed();
    assert!(scenarios > 0, "no scenario ran");
    assert!(
        problems.is_empty(),
        "{} unannounced change(s):\n{}",
        problems.len(),
        problems.join("\n")
    );
}
