//! The engine's one public surface: everything a host (host-server, host-wasm) needs, and nothing
//! else. The crate root re-exports all of it, so `engine::Engine` and `engine::host::Engine` are
//! the same item.
//!
//! A host builds an [`Engine`] over its [`Store`], hands it every HTTP-shaped [`Request`], and
//! implements the small traits the engine defines for what it cannot do itself: the language
//! model ([`Llm`]), sentence embeddings ([`Embedder`]), image decoding and scaling
//! ([`ImageCodec`]; the Rust codecs by default), and the delivery of the outbox's mail and
//! webhooks ([`WebhookTransport`], [`MailTransport`]; [`deliver`] decides what a due delivery
//! sends and reports an [`Outcome`]). A host asks [`Engine::route`] once per request how to
//! carry it ([`RouteInfo`]: whether it writes, how its body is read, how its answer is sent,
//! whether the login throttle applies) and hands the [`Routed`] request back to
//! [`Engine::handle_routed`]; a request routed as [`AnswerKind::EventStream`] is answered by
//! [`Engine::open_change_stream`] instead, a [`ChangeStream`] the host follows with
//! [`Engine::change_stream_next`] (it only waits for commits, keep-alive ticks and its own
//! shutdown, and sends the bytes the engine gives it). Everything below this surface (the
//! content model, the services, the api) is private to the crate, so a host that reaches past it
//! does not compile.

pub use crate::ai::embedding::{Embedder, StaticEmbedder, TestEmbedder};
pub use crate::ai::llm::{Chunk, Chunks, Llm, Message};
pub use crate::api::change_stream::{
    ChangeStream, KEEP_ALIVE as CHANGE_STREAM_KEEP_ALIVE, MAX_STREAM as CHANGE_STREAM_LIFETIME,
};
pub use crate::automation::jobs::{
    perform as deliver, Delivery, DueDelivery, MailError, MailMessage, MailTransport, NoMail,
    Outcome, SmtpSettings, WebhookPost, WebhookTransport,
};
pub use crate::content::multilingual::is_profile as is_language_profile;
pub use crate::core::clock::{
    Clock, Entropy, FixedClock, SeededEntropy, SystemClock, SystemEntropy,
};
pub use crate::core::error::{EngineError, Result, NOT_IN_BUILD_HEADER};
pub use crate::core::http::{
    AnswerKind, BlobStream, BodyKind, BodyStream, LineStream, Method, Request, Response, RouteInfo,
    ThrottleClass,
};
pub use crate::core::images::{ImageCodec, ImageError, ImageInfo, ImageKind, NoCodec};
pub use crate::core::net::{internal_kind, DestinationPolicy};
pub use crate::core::store::{
    scan_is_empty, Direction, KeyValue, MemStore, Overlay, ReadTxn, Store, StoreError, WriteTxn,
};
pub use crate::engine::{
    Committed, ConflictStats, Engine, Handled, Prepared, Routed, MAX_ATTEMPTS,
};
pub use crate::people::auth::external::ExternalIdentity;
pub use crate::runtime::state::{
    ConflictRetry, EngineOptions, ErrorLog, LoginOptions, LoginProvider,
};
pub use crate::site::migrations::Report as MigrationReport;
pub use crate::site::profile::{is_site_profile, SiteProfile};
pub use crate::site::setup::SiteSetup;

/// The store conformance suite: the properties every [`Store`] backend must have, for the tests
/// of each backend (feature `conformance`).
#[cfg(feature = "conformance")]
pub use crate::core::store::conformance;

/// A tiny embedding model generated in code, for the tests of each host (feature `conformance`).
#[cfg(feature = "conformance")]
pub use crate::ai::embedding::tiny_model;

/// The keyspace facts a host needs: where the schema version is kept, and which version this
/// engine writes (the server's `migrate` command and the browser host's open check read them),
/// and the store generation key an optimistic backend watches for other writers' commits.
pub mod keyspace {
    pub use crate::core::generation::GENERATION;
    pub use crate::core::keys::{SCHEMA, SCHEMA_VERSION};
}

/// The browser replica's types (sans-IO: the host performs the HTTP exchanges the engine asks
/// for and reports them back through the [`Engine`]'s `replica_*` and `sync_*` methods).
pub mod replica {
    pub use crate::sync::replica::{
        server_path, Config, Conflict, Draft, Incoming, Outgoing, PendingWrite, Resolution, Status,
        Sync,
    };
}
