//! The one list of the event subscribers the engine runs ([`builtin`]), above the domain
//! services that define them. Hosts and tests may add their own with [`crate::Engine::subscribe`].

use crate::runtime::subscriber::Subscribers;

/// Every built-in subscriber, in delivery order:
///
/// `Binned` (the recycle bin took an object out of the tree) is not a removal: only the catalog
/// reacts (unindexes it); the others keep their records until the bin item is purged, which
/// announces `Removed`. `Restored` makes the catalog index the object (and the objects that
/// linked to it) again.
///
/// | subscriber | reacts to | owns (and cleans on `Removed`) |
/// |---|---|---|
/// | `workflow` ([`crate::content::workflow::WorkflowSubscriber`]) | `Added`: the creation entry | workflow history `w:<uid>:` |
/// | `versioning` ([`crate::content::versioning::VersioningSubscriber`]) | `Added`, `Modified`: a version | versions `v:<uid>:` |
/// | `locking` ([`crate::content::locking::LockingSubscriber`]) | — | the lock `l:<uid>` |
/// | `comments` ([`crate::content::comments::CommentsSubscriber`]) | — | comments `m:<uid>:` |
/// | `translations` ([`crate::content::multilingual::TranslationSubscriber`]) | `Modified` of `language`: the group slot | `t:<group>:<lang>`, `g:<uid>` |
/// | `counters` ([`crate::content::counters::CountersSubscriber`]) | — | the object's counters `n:<uid>:` |
/// | `forms` ([`crate::automation::forms::FormsSubscriber`]) | — | stored form submissions `d:<uid>:` |
/// | `catalog` ([`crate::catalog::CatalogSubscriber`]) | `Added`, `Modified`, `Transitioned`, `Moved`, `OrderChanged`, `Restored`: reindex; `LocalRolesChanged`: reindex the subtree; `Binned`: unindex | the catalog `x:` (entry, postings, links of the uid, and links pointing at it) |
/// | `relations` ([`crate::content::relations::RelationsSubscriber`]) | `Added`, `Restored`, `Modified` of `relatedItems`: the object's `relatedItems` relations | relations `L:s:<uid>`, `L:t:` (the relations from a removed object go with it) |
/// | `rules` ([`crate::automation::rules::RulesSubscriber`]) | the triggers of content rules: runs the rules (their actions may write content and queue outbox jobs `J:`) | rule assignments `R:a:<uid>:` |
/// | `vectors` ([`crate::ai::related::VectorsSubscriber`]) | `Added`, `Restored`, `Modified` of a text field: the embedding vector (without a model: drops `E:model`); `Binned`: drops it | `E:v:<uid>` |
/// | `changes` ([`crate::sync::changes::ChangesSubscriber`]) | every event naming content records ([`crate::core::events::Event::objects`]): a new change log entry per object; `LocalRolesChanged`: the whole subtree | the change log `C:` (an object's entry outlives it: its removal is kept [`crate::sync::changes::RETENTION_DAYS`] days) |
/// | `blobs` ([`crate::content::blobs::BlobsSubscriber`]) | `Added`: a copy owns the blobs its fields reference | its blob index `F:<uid>:` and ownership `f:<blob>:o<uid>`; a blob `f:<blob>:` goes with its last owner |
pub fn builtin() -> Subscribers {
    let mut r = Subscribers::new();
    r.register(Box::new(crate::content::workflow::WorkflowSubscriber));
    r.register(Box::new(crate::content::versioning::VersioningSubscriber));
    r.register(Box::new(crate::content::locking::LockingSubscriber));
    r.register(Box::new(crate::content::comments::CommentsSubscriber));
    r.register(Box::new(
        crate::content::multilingual::TranslationSubscriber,
    ));
    r.register(Box::new(crate::content::counters::CountersSubscriber));
    r.register(Box::new(crate::automation::forms::FormsSubscriber));
    r.register(Box::new(crate::catalog::CatalogSubscriber));
    r.register(Box::new(crate::content::blobs::BlobsSubscriber));
    r.register(Box::new(crate::content::relations::RelationsSubscriber));
    r.register(Box::new(crate::automation::rules::RulesSubscriber));
    r.register(Box::new(crate::ai::related::VectorsSubscriber));
    r.register(Box::new(crate::sync::changes::ChangesSubscriber));
    r
}
