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

pub mod accounts;
pub mod actions;
pub mod ai;
pub mod aliases;
pub mod api;
pub mod auth;
pub mod blobs;
pub mod cache;
pub mod calendar;
pub mod catalog;
pub mod changes;
pub mod clock;
pub mod comments;
pub mod configuration;
pub mod content_types;
pub mod context;
pub mod controlpanels;
pub mod copying;
pub mod counters;
pub mod embedding;
pub mod engine;
pub mod error;
pub mod events;
pub mod exports;
pub mod files;
pub mod forms;
pub mod generation;
pub mod health;
pub mod http;
pub mod i18n;
pub mod idempotency;
pub mod inherit;
pub mod jobs;
pub mod keys;
pub mod links;
pub mod llm;
pub mod locking;
pub mod migrations;
pub mod model;
pub mod multilingual;
pub mod navigation;
pub mod permissions;
pub mod recyclebin;
pub mod registry;
pub mod related;
pub mod replace;
pub mod replica;
pub mod rules;
pub mod security;
pub mod setup;
pub mod sharing;
pub mod site;
pub mod state;
pub mod statistics;
pub mod store;
pub mod subscriber;
pub mod tree;
pub mod uploads;
pub mod versioning;
pub mod vocabularies;
pub mod workflow;

pub use crate::engine::Engine;
pub use crate::state::EngineOptions;
pub use clock::{Clock, Entropy, FixedClock, SeededEntropy, SystemClock, SystemEntropy};
pub use error::{EngineError, Result};
pub use http::{
    AnswerKind, BlobStream, BodyKind, BodyStream, Method, Request, Response, RouteInfo,
    ThrottleClass,
};
pub use setup::SiteSetup;
pub use store::{Direction, MemStore, ReadTxn, Store, StoreError, WriteTxn};
