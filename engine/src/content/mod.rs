//! The content domain: the tree of content objects and every operation on it, with the
//! services that own their records. `tree` is the one writer of objects; content types, workflow,
//! versions, locks, aliases, links, the recycle bin, comments, files and uploads, translations,
//! navigation and exports build on it.

pub mod aliases;
pub mod blobs;
pub mod calendar;
pub mod comments;
pub mod content_types;
pub mod counters;
pub mod exports;
pub mod files;
pub mod inherit;
pub mod links;
pub mod locking;
pub mod multilingual;
pub mod navigation;
pub mod operations;
pub mod recyclebin;
pub mod relations;
pub mod replace;
pub mod tree;
pub mod undo;
pub mod uploads;
pub mod versioning;
pub mod workflow;
