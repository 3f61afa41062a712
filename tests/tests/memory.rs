//! Runner 1: every scenario in process, against the engine over the memory store: on a new site,
//! and on a schema-1 site upgraded at open.
//!
//! `SCENARIO=<name>` runs one scenario; `CONTRACT_TRACE=1` prints every request and response.

use engine::{Engine, EngineOptions, MemStore, Request, Response, SiteSetup};
use tests::{run_scenario, Tally, Target};

const BASE: &str = "http://localhost:8080";

/// A fresh deterministic site in memory, and the first request it answered
/// `NotInBuild` (only the engine's lean build does: `--features engine/lean`).
struct Memory(Engine<MemStore>, Moved);

/// Where a scenario met the lean build's `NotInBuild` answer, and whether that was the last
/// answer it got.
#[derive(Default)]
struct Moved {
    first: Option<String>,
    last: bool,
}

impl Memory {
    /// Record `outcome` of scenario `name`; on the lean build, a scenario that failed at its
    /// last request because that request is not in the build counts apart ([`Tally::record_moved`]).
    fn record(&self, tally: &mut Tally, name: &str, outcome: Result<(), String>) {
        match (&outcome, &self.1.first) {
            (Err(_), Some(at)) if self.1.last => tally.record_moved(name, at),
            _ => tally.record(outcome),
        }
    }
}

impl Memory {
    fn new(profiles: &[String]) -> Self {
        let engine = Engine::new(MemStore::new(), EngineOptions::for_tests()).expect("engine");
        let mut setup = SiteSetup::new("secret");
        setup.profiles = profiles.to_vec();
        engine.create_site(&setup).expect("create site");
        Memory(engine, Moved::default())
    }

    /// The schema-1 `fresh-site.json` fixture, upgraded by opening it.
    fn migrated() -> Self {
        let pairs = tests::fixtures::pairs(tests::fixtures::SCHEMA_V1_FRESH_SITE).expect("fixture");
        let engine = Engine::new(MemStore::from_pairs(pairs), EngineOptions::for_tests())
            .expect("engine over the schema-1 fixture");
        assert_eq!(
            engine.migration_report().steps_run(),
            engine::site::migrations::STEPS.len(),
            "the fixture was not migrated: {:?}",
            engine.migration_report()
        );
        Memory(engine, Moved::default())
    }
}

impl Target for Memory {
    async fn send(&mut self, req: Request) -> Response {
        let trace = std::env::var_os("CONTRACT_TRACE").is_some();
        let line = format!("{} {}?{}", req.method.as_str(), req.path, req.query);
        let resp = self.0.handle(req);
        self.1.last = resp.header_value(engine::NOT_IN_BUILD_HEADER).is_some();
        if self.1.last && self.1.first.is_none() {
            self.1.first = Some(line.clone());
        }
        if trace {
            eprintln!(
                ">>> {line}\n<<< {} {:?}\n{}",
                resp.status,
                resp.headers,
                String::from_utf8_lossy(&resp.body)
            );
        }
        resp
    }
    fn base_url(&self) -> String {
        BASE.to_string()
    }
}

#[test]
fn every_scenario_passes_in_memory() {
    let mut tally = Tally::new("memory");
    let only = std::env::var("SCENARIO").ok();
    for s in tally.select(only.as_deref()) {
        let mut target = Memory::new(&s.profiles);
        let outcome = pollster::block_on(run_scenario(&mut target, &s));
        target.record(&mut tally, &s.name, outcome.map_err(|f| f.to_string()));
    }
    eprintln!("{}", tally.summary());
    tally.assert_all_passed();
}

/// The same scenarios on a site that was created at schema 1 (`tests/fixtures/schema-v1`) and
/// upgraded when the engine opened it.
#[test]
fn every_scenario_passes_on_a_migrated_schema_1_site() {
    let mut tally = Tally::new("memory (migrated schema-1 site)");
    let only = std::env::var("SCENARIO").ok();
    for s in tally.select_for_existing_site(only.as_deref()) {
        let mut target = Memory::migrated();
        let outcome = pollster::block_on(run_scenario(&mut target, &s));
        target.record(&mut tally, &s.name, outcome.map_err(|f| f.to_string()));
    }
    eprintln!("{}", tally.summary());
    tally.assert_all_passed();
}
