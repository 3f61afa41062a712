//! Domain events: what a request changed in the stored state. The layer that makes a change emits
//! its event ([`crate::runtime::context::Ctx::emit`]): the tree for content objects (added, edited,
//! transitioned, removed, moved, reordered), and each service for its own records (settings,
//! users, locks, comments, translations, aliases, revoked tokens). After the handler, the engine
//! delivers them to the subscribers ([`crate::runtime::subscriber`]) inside the same transaction, so their
//! writes commit or roll back with the request.
//!
//! Events name what changed precisely enough to tell which records were written: every content
//! record (`o:<uid>`) a request creates, changes or deletes is named by one of its events
//! ([`Event::objects`]); `tests/tests/events.rs` checks that for every contract scenario.
//!
//! This module is plain data at the bottom of the engine, so that the request context can queue
//! events without knowing who receives them.

/// Something that happened during a request.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// An object was created (by POST, copy, a language root folder, ...); its parent's child
    /// counters changed with it.
    Added {
        /// Its uid.
        uid: String,
        /// Its path.
        path: String,
        /// Its type.
        type_name: String,
        /// Its parent's uid (`None` for the site root).
        parent: Option<String>,
        /// The change note sent with the creation (`changeNote`), if any.
        change_note: Option<String>,
    },
    /// An object was created as a copy of another (`@copy`, a content rule's copy action): the
    /// top of the copied subtree, announced after its [`Event::Added`].
    Copied {
        /// The copy's uid.
        uid: String,
        /// The copy's path.
        path: String,
        /// The uid of the object it copies.
        source: String,
    },
    /// Fields of an object were edited (also by a revert to an older version).
    Modified {
        /// Its uid.
        uid: String,
        /// Its path.
        path: String,
        /// Names of the fields that were written.
        fields: Vec<String>,
        /// The change note sent with the edit (`changeNote`), if any.
        change_note: Option<String>,
    },
    /// An object was removed (once per object of a deleted subtree, the top first).
    Removed {
        /// Its uid.
        uid: String,
        /// The path it had.
        path: String,
        /// Its type.
        type_name: String,
        /// The uid of the parent it had (for the top of the subtree: the folder whose child
        /// counters changed).
        parent: Option<String>,
    },
    /// An object was moved into the recycle bin ([`crate::content::recyclebin`]; once per object of the
    /// binned subtree, the top first): it left the tree (its record, path and child entries) but
    /// keeps its history, comments and counters until it is purged ([`Event::Removed`] then).
    /// The catalog unindexes it.
    Binned {
        /// Its uid.
        uid: String,
        /// The path it had.
        path: String,
        /// Its type.
        type_name: String,
        /// The uid of the parent it had (for the top: the folder whose child counters changed).
        parent: Option<String>,
    },
    /// An object came back from the recycle bin (once per object of the restored subtree, the
    /// top first). The catalog indexes it again, and reindexes `linked_from` (the objects that
    /// linked to it when it was binned), whose links to it the catalog had dropped.
    Restored {
        /// Its uid.
        uid: String,
        /// The path it has now.
        path: String,
        /// Its type.
        type_name: String,
        /// The uid of its parent (for the top: the folder whose child counters changed).
        parent: Option<String>,
        /// Uids of the objects that linked to it when it was binned.
        linked_from: Vec<String>,
    },
    /// A workflow transition was taken (the object's state, and maybe its dates, changed).
    Transitioned {
        /// The object's uid.
        uid: String,
        /// Its path.
        path: String,
        /// The transition id.
        transition: String,
        /// The state before.
        from: String,
        /// The state after.
        to: String,
    },
    /// The local roles on an object, or whether it inherits roles from above, changed (sharing).
    /// Who may see the object and everything below it may have changed with them.
    LocalRolesChanged {
        /// Its uid.
        uid: String,
        /// Its path.
        path: String,
    },
    /// An object moved or was renamed (once per object of the moved subtree, the top first).
    Moved {
        /// Its uid.
        uid: String,
        /// The path it had.
        old_path: String,
        /// The path it has now.
        new_path: String,
        /// The uid of the parent it had.
        old_parent: Option<String>,
        /// The uid of the parent it has now (the same as `old_parent` for a rename and for the
        /// descendants of the moved object).
        new_parent: Option<String>,
    },
    /// The order of a folder's children changed.
    OrderChanged {
        /// The folder's uid.
        uid: String,
        /// The folder's path.
        path: String,
        /// Uids of the children whose position changed.
        children: Vec<String>,
    },
    /// A comment was added to an object.
    CommentAdded {
        /// The object's uid.
        uid: String,
        /// The object's path.
        path: String,
        /// The comment's id.
        comment_id: String,
    },
    /// A comment's text was edited.
    CommentModified {
        /// The object's uid.
        uid: String,
        /// The object's path.
        path: String,
        /// The comment's id.
        comment_id: String,
    },
    /// A comment (and its replies) was removed.
    CommentRemoved {
        /// The object's uid.
        uid: String,
        /// The object's path.
        path: String,
        /// The comment's id.
        comment_id: String,
    },
    /// A submission of a form block was stored ([`crate::automation::forms`]).
    FormSubmitted {
        /// The uid of the object holding the form.
        uid: String,
        /// Its path.
        path: String,
        /// The form block's id.
        block_id: String,
    },
    /// The stored submissions of a form block were deleted.
    FormDataCleared {
        /// The uid of the object holding the form.
        uid: String,
        /// Its path.
        path: String,
        /// The form block's id.
        block_id: String,
    },
    /// An object was locked.
    Locked {
        /// Its uid.
        uid: String,
        /// Its path.
        path: String,
    },
    /// The lock on an object was refreshed (its timeout starts again).
    LockRefreshed {
        /// Its uid.
        uid: String,
        /// Its path.
        path: String,
    },
    /// An object was unlocked (by its owner, by force, or because its lock had expired).
    Unlocked {
        /// Its uid.
        uid: String,
        /// Its path.
        path: String,
    },
    /// A relation between two objects was stored or dropped ([`crate::content::relations`]):
    /// through `@relations`, or kept in step with a `relatedItems` field.
    RelationChanged {
        /// The uid of the relation's source.
        source: String,
        /// The relation's name (`relatedItems`, `isReferencing`, ...).
        name: String,
        /// The uid of its target.
        target: String,
        /// Stored (`true`) or dropped.
        added: bool,
    },
    /// Site-wide settings changed.
    SettingsChanged {
        /// Which: `"site"` (default language), `"language"` (languages and profiles),
        /// `"navigation"`, or `"registry:<record name>"` (a configuration registry record,
        /// [`crate::site::configuration`]; for records another service owns, that service's event
        /// comes too).
        settings: String,
    },
    /// A user was created.
    UserAdded {
        /// The login.
        login: String,
    },
    /// A user's properties, password or roles changed.
    UserModified {
        /// The login.
        login: String,
    },
    /// A user was removed.
    UserRemoved {
        /// The login.
        login: String,
    },
    /// A user logged in (`@login`: a token was issued).
    UserLoggedIn {
        /// The login.
        login: String,
    },
    /// A user logged out (`@logout`: the token was revoked).
    UserLoggedOut {
        /// The login.
        login: String,
    },
    /// A group was created.
    GroupAdded {
        /// The group's id.
        id: String,
    },
    /// A group's properties, roles or members changed.
    GroupModified {
        /// The group's id.
        id: String,
    },
    /// A group was removed.
    GroupRemoved {
        /// The group's id.
        id: String,
    },
    /// The security or user and group settings changed (`s:security`, `s:usergroup`).
    /// (Other settings announce themselves with [`Event::SettingsChanged`].)
    AccountSettingsChanged,
    /// A password reset was requested: a one-time token was stored for the user (and mailed).
    PasswordResetRequested {
        /// The login.
        login: String,
    },
    /// An alias (a redirect from an old path) was added, by a move or rename or by hand.
    AliasAdded {
        /// The path that redirects.
        path: String,
        /// The path it redirects to.
        redirect_to: String,
    },
    /// An alias was removed.
    AliasRemoved {
        /// The path that no longer redirects.
        path: String,
    },
    /// A login token was revoked (logout).
    TokenRevoked {
        /// The token's id (`jti`).
        jti: String,
    },
    /// An object joined a translation group.
    TranslationLinked {
        /// The object's uid.
        uid: String,
        /// The group.
        group: String,
        /// The language slot it takes.
        language: String,
    },
    /// A content type of the type registry was added, changed (its fields, fieldsets, behaviors
    /// or settings) or removed ([`crate::content::content_types`]).
    TypeChanged {
        /// The type's name.
        name: String,
        /// Whether it was removed.
        removed: bool,
    },
    /// A tus upload was started, received bytes, finished, was cancelled or expired
    /// ([`crate::content::uploads`]).
    UploadChanged {
        /// The upload's id.
        id: String,
        /// Bytes received so far (its length when finished; 0 when cancelled or expired).
        offset: u64,
    },
    /// A job was queued, attempted, finished, aborted, retried or deleted ([`crate::automation::jobs`]: the
    /// outbox of mails and webhooks, runs of scheduled jobs).
    JobChanged {
        /// The job's uuid.
        uuid: String,
        /// Its status now (`deleted` when it was deleted).
        status: String,
    },
    /// A scheduled job was added, changed or removed ([`crate::automation::jobs`]).
    ScheduleChanged {
        /// Its id.
        id: String,
    },
    /// An object left a translation group.
    TranslationUnlinked {
        /// The object's uid.
        uid: String,
        /// The group.
        group: String,
        /// The language slot it had.
        language: String,
    },
}

impl Event {
    /// Uids of the content records (`o:<uid>`) this event says were created, changed or deleted:
    /// the object itself, and for structural changes the parents whose child counters changed
    /// and the children whose positions changed. Empty for events about other records.
    pub fn objects(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        match self {
            Event::Added { uid, parent, .. }
            | Event::Removed { uid, parent, .. }
            | Event::Binned { uid, parent, .. }
            | Event::Restored { uid, parent, .. } => {
                out.push(uid);
                out.extend(parent.as_deref());
            }
            Event::Modified { uid, .. }
            | Event::Transitioned { uid, .. }
            | Event::LocalRolesChanged { uid, .. } => out.push(uid),
            Event::Moved {
                uid,
                old_parent,
                new_parent,
                ..
            } => {
                out.push(uid);
                out.extend(old_parent.as_deref());
                out.extend(new_parent.as_deref());
            }
            Event::OrderChanged { uid, children, .. } => {
                out.push(uid);
                out.extend(children.iter().map(String::as_str));
            }
            Event::Copied { .. }
            | Event::CommentAdded { .. }
            | Event::CommentModified { .. }
            | Event::CommentRemoved { .. }
            | Event::FormSubmitted { .. }
            | Event::FormDataCleared { .. }
            | Event::Locked { .. }
            | Event::LockRefreshed { .. }
            | Event::Unlocked { .. }
            | Event::SettingsChanged { .. }
            | Event::RelationChanged { .. }
            | Event::UserAdded { .. }
            | Event::UserModified { .. }
            | Event::UserRemoved { .. }
            | Event::UserLoggedIn { .. }
            | Event::UserLoggedOut { .. }
            | Event::GroupAdded { .. }
            | Event::GroupModified { .. }
            | Event::GroupRemoved { .. }
            | Event::AccountSettingsChanged
            | Event::PasswordResetRequested { .. }
            | Event::AliasAdded { .. }
            | Event::AliasRemoved { .. }
            | Event::TokenRevoked { .. }
            | Event::TranslationLinked { .. }
            | Event::TranslationUnlinked { .. }
            | Event::TypeChanged { .. }
            | Event::UploadChanged { .. }
            | Event::JobChanged { .. }
            | Event::ScheduleChanged { .. } => {}
        }
        out
    }
}
