//! Running every embedded scenario on one host and reporting the outcome: the loop the in-process,
//! server and browser runners share.

use crate::{scenarios, Scenario};

/// The outcome of running the scenarios on one host.
#[derive(Debug)]
pub struct Tally {
    host: &'static str,
    ran: usize,
    failures: Vec<String>,
    /// Scenarios left out because they need a site created with a profile and this host runs on
    /// a site it did not create (an upgraded one): counted in the summary, never silently.
    not_applicable: usize,
    /// Scenarios that stopped at a request the engine's lean build (the browser's first module)
    /// leaves out, every step before it having passed: the browser answers them with the full
    /// module (`web-demo/e2e/split.mjs` checks that move).
    moved: Vec<String>,
}

impl Tally {
    /// An empty tally for `host` (the word the summary line starts with).
    pub fn new(host: &'static str) -> Self {
        Tally {
            host,
            ran: 0,
            failures: Vec::new(),
            not_applicable: 0,
            moved: Vec::new(),
        }
    }

    /// The scenarios to run: every embedded one, or only the one named `only`. Malformed files are
    /// recorded as failures. Panics when nothing is embedded (a runner that runs nothing is broken).
    pub fn select(&mut self, only: Option<&str>) -> Vec<Scenario> {
        let all = scenarios::parsed();
        assert!(!all.is_empty(), "no scenarios embedded");
        let mut out = Vec::new();
        for s in all {
            match s {
                Ok(s) if only.is_none_or(|o| selects(o, &s.name)) => out.push(s),
                Ok(_) => {}
                Err(f) => self.failures.push(f.to_string()),
            }
        }
        if let Some(name) = only {
            assert!(!out.is_empty(), "no scenario is named {name:?}");
        }
        out
    }

    /// [`Tally::select`] for a host whose site was not created by the run (a schema-1 site
    /// upgraded at open, which is a default Plone site): the scenarios that need a site created
    /// with a profile are left out and counted ("N need a site created with a profile").
    pub fn select_for_existing_site(&mut self, only: Option<&str>) -> Vec<Scenario> {
        let (out, left): (Vec<Scenario>, Vec<Scenario>) = self
            .select(only)
            .into_iter()
            .partition(|s| s.profiles.is_empty());
        self.not_applicable += left.len();
        out
    }

    /// Record the outcome of one scenario run.
    pub fn record(&mut self, outcome: Result<(), String>) {
        self.ran += 1;
        if let Err(f) = outcome {
            self.failures.push(f);
        }
    }

    /// Record a scenario that passed every step up to `at`, a request the lean build answered
    /// `NotInBuild` (engine feature `lean`), and stopped there.
    pub fn record_moved(&mut self, name: &str, at: &str) {
        self.ran += 1;
        self.moved.push(format!("{name} (at {at})"));
    }

    /// `"<host>: N scenarios run, P passed, F failed"` (F also counts malformed files).
    /// When scenarios were left out ([`Tally::select_for_existing_site`]), the line says so:
    /// `"; K not run: they need a site created with a profile"`.
    pub fn summary(&self) -> String {
        let mut line = format!(
            "{}: {} scenarios run, {} passed, {} failed",
            self.host,
            self.ran,
            self.ran.saturating_sub(self.failures.len()),
            self.failures.len()
        );
        if self.not_applicable > 0 {
            line.push_str(&format!(
                "; {} not run: they need a site created with a profile",
                self.not_applicable
            ));
        }
        if !self.moved.is_empty() {
            line.push_str(&format!(
                "; {} of the passed stopped, all steps before passing, at a request this build \
                 leaves out (the browser's full module answers it): {}",
                self.moved.len(),
                self.moved.join(", ")
            ));
        }
        line
    }

    /// Panic with every failure unless there were none.
    pub fn assert_all_passed(&self) {
        assert!(
            self.failures.is_empty(),
            "{} scenario(s) failed on {}:\n\n{}",
            self.failures.len(),
            self.host,
            self.failures.join("\n\n")
        );
    }
}

/// Whether `SCENARIO=pattern` names scenario `name`: its exact name, or a prefix ending in `*`
/// (`SCENARIO='i20_*'`).
fn selects(pattern: &str, name: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) => name.starts_with(prefix),
        None => pattern == name,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_are_counted_and_reported() {
        let mut t = Tally::new("here");
        let picked = t.select(Some("siteroot"));
        assert_eq!(picked.len(), 1);
        t.record(Ok(()));
        t.record(Err("boom".into()));
        assert_eq!(t.summary(), "here: 2 scenarios run, 1 passed, 1 failed");
        let caught = std::panic::catch_unwind(|| t.assert_all_passed());
        assert!(caught.is_err());
    }
}
