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

/// Declares the layer folders: private to the crate, or public with the `internals` feature
/// (for the engine's own examples, benchmarks and tests that reach below the host surface;
/// no host enables it).
macro_rules! layers {
    ($($(#[$meta:meta])* $name:ident),* $(,)?) => {
        $(
            $(#[$meta])*
            #[cfg(feature = "internals")]
            pub mod $name;
            $(#[$meta])*
            #[cfg(not(feature = "internals"))]
            pub(crate) mod $name;
        )*
    };
}

layers! {
    /// Plain types and the keyspace (bottom layer).
    core,
    /// What a request runs in: engine-wide state, the request context, the response cache, events.
    runtime,
    /// The content tree and every operation on it.
    content,
    /// Users, groups, authentication, permissions and sharing.
    people,
    /// The catalog: indexes, full-text search, queries, vocabularies.
    catalog,
    /// Related content and the language model.
    ai,
    /// Content rules, jobs, the outbox and mail, form submissions.
    automation,
    /// The change feed, the browser replica and idempotency keys.
    sync,
    /// The site: setup, settings, configuration, control panels, migrations, subscriber wiring.
    site,
    /// The HTTP-shaped surface: the route table, extraction, serialization, one module per family.
    api,
    /// The facade: [`Engine`].
    engine,
}

pub mod host;

pub use crate::host::*;
