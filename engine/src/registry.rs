//! The one list of the event subscribers the engine runs ([`builtin`]), above the domain
//! services that define them. Hosts and tests may add their own with [`crate::Engine::subscribe`].

use crate::subscriber::Subscribers;

/// Every built-in subscriber, in delivery order:
///
/// `Binned` (the recycle bin took an object out of the tree) is not a removal: only the catalog
/// reacts (unindexes it); the others keep their records until the bin item is purged, which
/// announces `Removed`. `Restored` makes the catalog index the object (and the objects that
/// linked to it) again.
///
/// | subscriber | reacts to | owns (and cleans on `Removed`) |
/// |---|---|---|
/// | `workflow` ([`crate::workflow::WorkflowSubscriber`]) | `Added`: the creation entry | workflow history `w:<uid>:` |
/// | `versioning` ([`crate::versioning::VersioningSubscriber`]) | `Added`, `Modified`: a version | versions `v:<uid>:` |
/// | `locking` ([`crate::locking::LockingSubscriber`]) | — | the lock `l:<uid>` |
/// | `comments` ([`crate::comments::CommentsSubscriber`]) | — | comments `m:<uid>:` |
/// | `translations` ([`crate::multilingual::TranslationSubscriber`]) | `Modified` of `language`: the group slot | `t:<group>:<lang>`, `g:<uid>` |
/// | `counters` ([`crate::counters::CountersSubscriber`]) | — | the object's counters `n:<uid>:` |
/// | `forms` ([`crate::forms::FormsSubscriber`]) | — | stored form submissions `d:<uid>:` |
/// | `catalog` ([`crate::catalog::CatalogSubscriber`]) | `Added`, `Modified`, `Transitioned`, `Moved`, `OrderChanged`, `Restored`: reindex; `LocalRolesChanged`: reindex the subtree; `Binned`: unindex | the catalog `x:` (entry, postings, links of the uid, and links pointing at it) |
/// | `rules` ([`crate::rules::RulesSubscriber`]) | the triggers of content rules: runs the rules (their actions may write content and queue outbox jobs `J:`) | rule assignments `R:a:<uid>:` |
/// | `vectors` ([`crate::related::VectorsSubscriber`]) | `Added`, `Restored`, `Modified` of a text field: the embedding vector (without a model: drops `E:model`); `Binned`: drops it | `E:v:<uid>` |
/// | `changes` ([`crate::changes::ChangesSubscriber`]) | every event naming content records ([`crate::events::Event::objects`]): a new change log entry per object; `LocalRolesChanged`: the whole subtree | the change log `C:` (an object's entry outlives it: its removal is kept [`crate::changes::RETENTION_DAYS`] days) |
/// | `blobs` ([`crate::blobs::BlobsSubscriber`]) | `Added`: a copy owns the blobs its fields reference | its blob index `F:<uid>:` and ownership `f:<blob>:o<uid>`; a blob `f:<blob>:` goes with its last owner |
pub fn builtin() -> Subscribers {
    let mut r = Subscribers::new();
    r.register(Box::new(crate::workflow::WorkflowSubscriber));
    r.register(Box::new(crate::versioning::VersioningSubscriber));
    r.register(Box::new(crate::locking::LockingSubscriber));
    r.register(Box::new(crate::comments::CommentsSubscriber));
    r.register(Box::new(crate::multilingual::TranslationSubscriber));
    r.register(Box::new(crate::counters::CountersSubscriber));
    r.register(Box::new(crate::forms::FormsSubscriber));
    r.register(Box::new(crate::catalog::CatalogSubscriber));
    r.register(Box::new(crate::blobs::BlobsSubscriber));
    r.register(Box::new(crate::rules::RulesSubscriber));
    r.register(Box::new(crate::related::VectorsSubscriber));
    r.register(Box::new(crate::changes::ChangesSubscriber));
    r
}
