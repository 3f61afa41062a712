//! Runner 1: every scenario in process, against the engine over the memory store.
//!
//! `SCENARIO=<name>` runs one scenario; `CONTRACT_TRACE=1` prints every request and response.

use engine::{Engine, EngineOptions, MemStore, Request, Response, SiteSetup};
use tests::{run_scenario, Tally, Target};

const BASE: &str = "http://localhost:8080";

/// A fresh deterministic site in memory.
struct Memory(Engine<MemStore>);

impl Memory {
    fn new() -> Self {
        let engine = Engine::new(MemStore::new(), EngineOptions::for_tests()).expect("engine");
        engine
            .create_site(&SiteSetup::new("secret"))
            .expect("create site");
        Memory(engine)
    }
}

impl Target for Memory {
    async fn send(&mut self, req: Request) -> Response {
        let trace = std::env::var_os("CONTRACT_TRACE").is_some();
        let line = format!("{} {}?{}", req.method.as_str(), req.path, req.query);
        let resp = self.0.handle(req);
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
        let outcome = pollster::block_on(run_scenario(&mut Memory::new(), &s));
        tally.record(outcome.map_err(|f| f.to_string()));
    }
    eprintln!("{}", tally.summary());
    tally.assert_all_passed();
}
