//! Contract tests: scenarios as data, one interpreter, one runner per host.
//!
//! A scenario (`tests/scenarios/*.json`, documented in `tests/README.md`) is a sequence of requests
//! and the responses they must get, with placeholders for volatile values. [`run_scenario`] runs one
//! against any [`Target`]: the engine in process (`tests/tests/memory.rs`), the `host-server` binary
//! over HTTP (`tests/tests/server.rs`), or the wasm host in a browser. The scenario files are embedded
//! in this library ([`scenarios::all`]) so that runners without a filesystem get them too.
//!
//! This library has no native-only dependencies; it builds for `wasm32-unknown-unknown`.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod fixtures;
pub mod matcher;
pub mod runner;
pub mod scenario;
pub mod tally;

pub use matcher::{Matcher, Mismatch, Vars};
pub use runner::{load, run_scenario, Failure, Target};
pub use scenario::{Expect, MatchMode, RequestSpec, Scenario, Step};
pub use tally::Tally;

/// The embedded scenario files.
pub mod scenarios {
    include!(concat!(env!("OUT_DIR"), "/scenarios.rs"));

    /// Every embedded scenario, parsed and checked (name equals file name); a malformed file is an
    /// `Err` naming it.
    pub fn parsed() -> Vec<Result<crate::Scenario, crate::Failure>> {
        all()
            .into_iter()
            .map(|(name, text)| crate::load(name, text))
            .collect()
    }
}
