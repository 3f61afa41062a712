//! The content engine: a Plone-REST-API-compatible content service that runs on any [`Store`].
//!
//! Hosts move bytes; the engine does everything a client can observe. A host builds an [`Engine`]
//! over its store, creates the site once ([`Engine::create_site`]), and then hands every HTTP request
//! to [`Engine::handle`], which runs it inside one store transaction and returns the response.
//!
//! ```
//! use engine::{Engine, EngineOptions, MemStore, Method, Request, SiteSetup};
//! let engine = Engine::new(MemStore::new(), EngineOptions::for_tests()).unwrap();
//! engine.create_site(&SiteSetup::new("secret")).unwrap();
//! let resp = engine.handle(Request::new(Method::Get, "/", "http://localhost:8080"));
//! assert_eq!(resp.status, 200);
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]
// The lean build (feature `lean`, the browser's first module) leaves the rare families out; the
// domain code only they call is then unused, and left out of the module by the linker.
#![cfg_attr(feature = "lean", allow(dead_code, unused_imports))]

// The layer folders: private to the crate, or public with the feature `internals` (for the
// engine's own examples, benchmarks and tests that reach below the host surface; no host enables
// it). Each is declared twice rather than through a macro, so that rustfmt sees every file.
/// Related content and the language model.
#[cfg(feature = "internals")]
pub mod ai;
/// Related content and the language model.
#[cfg(not(feature = "internals"))]
pub(crate) mod ai;
/// The HTTP-shaped surface: the route table, extraction, serialization, one module per family.
#[cfg(feature = "internals")]
pub mod api;
/// The HTTP-shaped surface: the route table, extraction, serialization, one module per family.
#[cfg(not(feature = "internals"))]
pub(crate) mod api;
/// Content rules, jobs, the outbox and mail, form submissions.
#[cfg(feature = "internals")]
pub mod automation;
/// Content rules, jobs, the outbox and mail, form submissions.
#[cfg(not(feature = "internals"))]
pub(crate) mod automation;
/// The catalog: indexes, full-text search, queries, vocabularies.
#[cfg(feature = "internals")]
pub mod catalog;
/// The catalog: indexes, full-text search, queries, vocabularies.
#[cfg(not(feature = "internals"))]
pub(crate) mod catalog;
/// The content tree and every operation on it.
#[cfg(feature = "internals")]
pub mod content;
/// The content tree and every operation on it.
#[cfg(not(feature = "internals"))]
pub(crate) mod content;
/// Plain types and the keyspace (bottom layer).
#[cfg(feature = "internals")]
pub mod core;
/// Plain types and the keyspace (bottom layer).
#[cfg(not(feature = "internals"))]
pub(crate) mod core;
/// The facade: [`Engine`].
#[cfg(feature = "internals")]
pub mod engine;
/// The facade: [`Engine`].
#[cfg(not(feature = "internals"))]
pub(crate) mod engine;
/// Users, groups, authentication, permissions and sharing.
#[cfg(feature = "internals")]
pub mod people;
/// Users, groups, authentication, permissions and sharing.
#[cfg(not(feature = "internals"))]
pub(crate) mod people;
/// What a request runs in: engine-wide state, the request context, the response cache, events.
#[cfg(feature = "internals")]
pub mod runtime;
/// What a request runs in: engine-wide state, the request context, the response cache, events.
#[cfg(not(feature = "internals"))]
pub(crate) mod runtime;
/// The site: setup, settings, configuration, control panels, migrations, subscriber wiring.
#[cfg(feature = "internals")]
pub mod site;
/// The site: setup, settings, configuration, control panels, migrations, subscriber wiring.
#[cfg(not(feature = "internals"))]
pub(crate) mod site;
/// The change feed, the browser replica and idempotency keys.
#[cfg(feature = "internals")]
pub mod sync;
/// The change feed, the browser replica and idempotency keys.
#[cfg(not(feature = "internals"))]
pub(crate) mod sync;

pub mod host;

pub use crate::host::*;
