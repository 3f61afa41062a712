//! The bottom layer: plain types and the keyspace. Clock and entropy, the HTTP-shaped request
//! and response, the error type, the `Store` trait and its backends' shared machinery, the
//! keyspace, the image codec trait, the store generation, domain events, the content model (records, the type registry,
//! fields, blocks, ids) and the security vocabulary (roles, permissions, principals). Nothing here
//! looks up at a request, a service or the api.

pub mod clock;
pub mod error;
pub mod events;
pub mod generation;
pub mod http;
pub mod images;
pub mod keys;
pub mod model;
pub mod net;
pub mod security;
pub mod store;
