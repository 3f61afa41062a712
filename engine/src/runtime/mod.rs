//! What a request runs in: the engine-wide state shared by every request (options, registries,
//! caches), the request context (`Ctx`: the open transaction, the caller, pending events), the
//! response cache, and the delivery of events to subscribers. Above the core, below every domain
//! service.

pub mod cache;
pub mod commit;
pub mod context;
pub mod occ;
pub mod state;
pub mod subscriber;
