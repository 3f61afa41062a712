//! The keyspace: every key the engine stores, built in one place.
//!
//! | prefix | key | value |
//! |---|---|---|
//! | `s:` | `s:schema` | schema version (decimal text) |
//! | `s:` | `s:site` | site settings (JSON: secret, title, default language) |
//! | `o:` | `o:<uid>` | content record (JSON, [`crate::core::model::ContentRecord`]) |
//! | `p:` | `p:<path>` | uid of the object at `<path>` (root is `p:`; paths start with `/`) |
//! | `c:` | `c:<parent uid>:<position u64 BE>` | uid of the child at that position (folder order) |
//! | `u:` | `u:<login>` | user record (JSON) |
//! | `r:` | `r:<jti>` | revoked token id → expiry (seconds since epoch) |
//! | `v:` | `v:<uid>:<version u32 BE>` | one version of an object (its changed fields only) |
//! | `w:` | `w:<uid>:<seq u32 BE>` | one workflow history entry of an object |
//! | `l:` | `l:<uid>` | the lock on an object |
//! | `a:` | `a:<alias path>` | a URL alias (JSON: target path, datetime, manual) |
//! | `b:` | `b:<target path>\0<alias path>` | reverse index: the aliases that redirect to a path |
//! | `m:` | `m:<uid>:<seq u64 BE>` | one comment on an object |
//! | `n:` | `n:<uid>:h` | next number of the object's combined history of versions and workflow entries (decimal text; [`crate::content::counters`]) |
//! | `n:` | `n:<uid>:v` | next version number of the object (decimal text) |
//! | `n:` | `n:<uid>:m` | next comment position of the object (decimal text) |
//! | `s:` | `s:navigation` | navigation settings (JSON, [`crate::content::navigation::NavigationSettings`]) |
//! | `s:` | `s:multilingual` | language settings and installed profiles (JSON, [`crate::content::multilingual::LanguageSettings`]) |
//! | `t:` | `t:<group>:<language>` | uid of the member of a translation group in that language |
//! | `g:` | `g:<uid>` | the translation group of an object |
//! | `k:` | `k:<record name>` | a configuration registry record's value (JSON; [`crate::site::configuration`]; written with its default when the site is created; absent: the default) |
//! | `s:` | `s:types` | version of the type registry: incremented by every write transaction that changes a `y:` key (decimal text; keys the cached registry, [`crate::runtime::context::Ctx::types`]) |
//! | `y:` | `y:t:<type name>` | a content type of the type registry (JSON, [`crate::core::model::types::TypeData`]) |
//! | `y:` | `y:b:<behavior name>` | a behavior of the type registry (JSON, [`crate::core::model::types::BehaviorData`]) |
//! | `G:` | `G:<group id>` | a group (JSON, [`crate::people::auth::groups::GroupRecord`]); the built-in groups read from their defaults until first changed |
//! | `M:` | `M:<member>` | the ids of the groups a user or group is a direct member of (JSON list): the reverse index of the groups' members, so resolving a caller's groups reads only its own |
//! | `e:` | `e:<sha256 of the token, hex>` | a one-time password reset token (JSON: login, expiry) |
//! | `s:` | `s:security` | security settings (JSON, [`crate::people::accounts::SecuritySettings`]: self-registration, password length, e-mail as login) |
//! | `s:` | `s:userschema` | the fields the site adds to the user forms (JSON list, [`crate::people::accounts::UserField`]) |
//! | `s:` | `s:usergroup` | user and group settings (JSON, [`crate::people::accounts::UserGroupSettings`]) |
//! | `x:` | `x:e:<uid>` | the catalog entry of an object (binary, [`crate::catalog::codec`]; [`crate::catalog::Entry`]: its `allowedRolesAndUsers`, path, position and dates first, then the metadata of a catalog item and the values of the indexes that are not range scans, then the full-text terms it is indexed under and the uids it links to, read when it is reindexed or removed to drop its postings) |
//! | `x:` | `x:c:<parent uid>:<pos u64 BE>` | the listing copy of the catalog entry of the child at that position (the entry without its terms and links, [`crate::catalog::codec::listing_copy`]), written and dropped with the entry: a folder's children with their entries are one range scan beside the `c:` scan, not one read per child |
//! | `x:` | `x:w:<term>\0<uid>` | full-text posting: `<uid>` contains `<term>`; the value ([`crate::catalog::postings::Meta`]) holds what ranking and filtering a match needs without reading the entry: the interned `allowedRolesAndUsers` id, effective and expiration dates, creation time and the term's frequency. One word is one range scan, `word*` one range scan over the prefix |
//! | `x:` | `x:a:<allowedRolesAndUsers as stored>` | the id (u32 big-endian) interned for one `allowedRolesAndUsers` list, as postings name it |
//! | `x:` | `x:A:<id u32 BE>` | the `allowedRolesAndUsers` list (as stored in entries) of an interned id; ids are never reused |
//! | `x:` | `x:k:<subject>\0<uid>` | `Subject` posting: `<uid>` is tagged `<subject>` (empty value) |
//! | `x:` | `x:l:<target uid>\0<source uid>` | reverse link index: `<source>` links to `<target>` (empty value) |
//! | `x:` | `x:i:<index>\0<term>\0<uid>` | field index posting (empty value): `<uid>` has `<term>` in `<index>`: `start` and `end` (an event's dates, as [`crate::catalog::date_term`] writes them, so a date range is one range scan) and `getRawRelatedItems` (a uid of its `relatedItems`) |
//! | `L:` | `L:s:<source uid>\0<relation name>\0<target uid>` | a relation ([`crate::content::relations`]): `f` when it comes from the source's `relatedItems` field, `a` when added through `@relations` |
//! | `L:` | `L:t:<target uid>\0<relation name>\0<source uid>` | the same relation by its target (empty value) |
//! | `z:` | `z:<recycle id>` | an item of the recycle bin (JSON, [`crate::content::recyclebin::BinItem`]: who deleted it and when, the records of the binned subtree, its aliases, the objects that linked into it); the binned objects' versions, workflow history, comments and counters stay under their uids until the item is purged |
//! | `d:` | `d:<uid>:<block id>:<seq u64 BE>` | a stored submission of a form block (JSON, [`crate::automation::forms::Submission`]) |
//! | `n:` | `n:<uid>:f:<block id>` | next submission number of a form block (decimal text) |
//! | `f:` | `f:<blob id>:m` | a blob's metadata (JSON, [`crate::content::blobs::BlobMeta`]: size, chunk size, owner) |
//! | `f:` | `f:<blob id>:c<chunk u32 BE>` | one chunk of a blob's bytes ([`crate::content::blobs::CHUNK_SIZE`] bytes, the last one shorter); a blob is written in the request's transaction and never changed once it belongs to an object |
//! | `f:` | `f:<blob id>:o<owner uid>` | an owner of the blob (empty value): the objects whose fields reference it (a copy shares its original's blobs); the blob is deleted with its last owner |
//! | `F:` | `F:<owner uid>:<blob id>` | index of the blobs an object owns (empty value): its file and image fields and their cached scales; removed with the object. A user's portrait is owned by `@portrait:<login>` ([`crate::people::auth::users::portrait_owner`]), removed with the user |
//! | `T:` | `T:<upload id>` | an unfinished tus upload (JSON, [`crate::content::uploads::Upload`]: its blob, offset, length, target, expiry); its bytes are the blob's chunks |
//! | `R:` | `R:r:<rule id>` | a content rule (JSON, [`crate::automation::rules::Rule`]: title, trigger, flags, conditions, actions, webhook secret) |
//! | `R:` | `R:a:<uid>:<rule id>` | a rule assigned to an object (JSON, [`crate::automation::rules::Assignment`]: enabled, bubbles, position); removed with the object or the rule |
//! | `J:` | `J:j:<job uuid>` | a job (JSON, [`crate::automation::jobs::Job`]): an outbox entry (mail, webhook) with its delivery state, or a run of a scheduled job |
//! | `J:` | `J:q:<due millis u64 BE>:<job uuid>` | the outbox queue: a job due for (another) delivery attempt at that time (empty value) |
//! | `K:` | `K:<scheduled job id>` | a scheduled job (JSON, [`crate::automation::jobs::ScheduledJob`]: action, params, cron schedule, last run) |
//! | `E:` | `E:v:<uid>` | the embedding vector of an object (little-endian `f32`s, [`crate::ai::related`]): of its title, description and text, by the engine's embedding model |
//! | `E:` | `E:model` | the id of the embedding model that made the stored vectors (text); opening the store with another model recomputes them |
//! | `s:` | `s:generation` | store generation: incremented by every write transaction that changes anything (decimal text; [`crate::runtime::cache::GENERATION`]) |
//! | `H:` | `H:config` | a replica site's server (JSON, [`crate::sync::replica::Config`]: server URL, login, token) |
//! | `H:` | `H:sync` | a replica's sync position (JSON, [`crate::sync::replica::SyncState`]: change cursor, download phase, last error) |
//! | `H:` | `H:w:<seq u64 BE>` | a pending write of a replica (JSON, [`crate::sync::replica::PendingWrite`]): the request made locally, the server version it was based on, its idempotency key, replayed in `seq` order |
//! | `H:` | `H:c:<seq u64 BE>` | a write of a replica the server refused (JSON, [`crate::sync::replica::Conflict`]), kept until the user resolves it |
//! | `H:` | `H:local` | the password of a replica's local admin (random, made by the browser host; the local site's own, never the server's) |
//! | `H:` | `H:n` | the next pending write number (decimal text) |
//! | `H:` | `H:v:<local uid>` | the server version (`ETag`) the replica's copy of an object reflects |
//! | `H:` | `H:u:<local uid>` | the server uid of a local object when they differ (the site root) |
//! | `H:` | `H:U:<server uid>` | the local uid of a server object when they differ (the reverse of `H:u:`) |
//! | `H:` | `H:f:<server path>` | an object the replica must (re)fetch from the server (empty value) |
//! | `H:` | `H:l:<server uid>` | during a full download: an object the server listed (empty value); unlisted local objects are removed at its end |
//! | `C:` | `C:n` | the change log's last sequence number (u64 BE; absent: 0) ([`crate::sync::changes`]) |
//! | `C:` | `C:h` | the change log's horizon (u64 BE): cursors below it are expired (a removal after them was dropped) |
//! | `C:` | `C:e:<seq u64 BE>` | a change log entry (JSON, [`crate::sync::changes::Entry`]: uid, the sequence it was added at, when); one per object: a later change of the same object deletes its earlier entry |
//! | `C:` | `C:u:<uid>` | the sequence of the object's entry in the change log (u64 BE), kept for as long as its entry (also after the object is removed, until its removal is dropped) |
//! | `C:` | `C:r:<seq u64 BE>` | removals in the change log, oldest first (empty value): dropped after [`crate::sync::changes::RETENTION_DAYS`] days, moving `C:h` |
//! | `I:` | `I:k:<login>\0<key>` | an idempotency record ([`crate::sync::idempotency`]): the method, path, status, headers and body of the 2xx answer to the caller's request with `Idempotency-Key: <key>` (anonymous callers: empty login), with its expiry |
//! | `I:` | `I:t:<expiry millis u64 BE><login>\0<key>` | the idempotency records by expiry (empty value), oldest first, for cleaning on write |
//!
//! Retired keys: `q:<uid>` (schema 1: the last history sequence number of an object) was replaced
//! by `n:<uid>:h` in schema 2; [`crate::site::migrations`] moves it. `x:t:<uid>` and `x:f:<uid>`
//! (schema 5: an object's terms and links, newline-separated) moved into its entry in schema 7,
//! which rebuilt the catalog.
//!
//! Keys are compared bytewise, so `c:<uid>:` followed by a big-endian position lists a folder's
//! children in order with one range scan, and `p:` lookups resolve a path in one read.

/// Prefix of every recycle bin item.
pub const RECYCLEBIN_PREFIX: &[u8] = b"z:";

/// `z:<recycle id>`: an item of the recycle bin.
pub fn recyclebin_item(recycle_id: &str) -> Vec<u8> {
    cat(RECYCLEBIN_PREFIX, recycle_id.as_bytes())
}

/// Prefix of the stored submissions of the form block `block` of object `uid`.
pub fn form_submissions_prefix(uid: &str, block: &str) -> Vec<u8> {
    let mut k = cat(b"d:", uid.as_bytes());
    k.push(b':');
    k.extend_from_slice(block.as_bytes());
    k.push(b':');
    k
}

/// Prefix of every stored form submission of object `uid`.
pub fn form_data_prefix(uid: &str) -> Vec<u8> {
    let mut k = cat(b"d:", uid.as_bytes());
    k.push(b':');
    k
}

/// `d:<uid>:<block>:<seq>`: one stored submission of a form block.
pub fn form_submission(uid: &str, block: &str, seq: u64) -> Vec<u8> {
    let mut k = form_submissions_prefix(uid, block);
    k.extend_from_slice(&seq.to_be_bytes());
    k
}

/// `n:<uid>:f:<block>`: the next submission number of a form block.
pub fn form_counter(uid: &str, block: &str) -> Vec<u8> {
    let mut k = counters_prefix(uid);
    k.extend_from_slice(b"f:");
    k.extend_from_slice(block.as_bytes());
    k
}

/// `H:config`: a replica site's server and credentials ([`crate::sync::replica`]).
pub const REPLICA_CONFIG: &[u8] = b"H:config";
/// `H:sync`: a replica's sync position.
pub const REPLICA_SYNC: &[u8] = b"H:sync";
/// `H:local`: the password of a replica's local admin.
pub const REPLICA_LOCAL: &[u8] = b"H:local";
/// `H:n`: the next pending write number of a replica.
pub const REPLICA_NEXT: &[u8] = b"H:n";
/// Prefix of a replica's pending writes.
pub const REPLICA_WRITES: &[u8] = b"H:w:";
/// Prefix of a replica's conflicts.
pub const REPLICA_CONFLICTS: &[u8] = b"H:c:";
/// Prefix of the objects a replica must fetch.
pub const REPLICA_FETCH: &[u8] = b"H:f:";
/// Prefix of the objects listed by a replica's full download.
pub const REPLICA_LISTED: &[u8] = b"H:l:";

/// `H:w:<seq>`: a pending write of a replica.
pub fn replica_write(seq: u64) -> Vec<u8> {
    cat(REPLICA_WRITES, &seq.to_be_bytes())
}

/// `H:c:<seq>`: a conflict of a replica.
pub fn replica_conflict(seq: u64) -> Vec<u8> {
    cat(REPLICA_CONFLICTS, &seq.to_be_bytes())
}

/// The sequence number at the end of an `H:w:` or `H:c:` key.
pub fn replica_seq(key: &[u8]) -> Option<u64> {
    child_pos(key)
}

/// `H:v:<local uid>`: the server version the replica's copy of an object reflects.
pub fn replica_version(local_uid: &str) -> Vec<u8> {
    cat(b"H:v:", local_uid.as_bytes())
}

/// `H:u:<local uid>`: the server uid of a local object, when it differs.
pub fn replica_server_uid(local_uid: &str) -> Vec<u8> {
    cat(b"H:u:", local_uid.as_bytes())
}

/// `H:U:<server uid>`: the local uid of a server object, when it differs.
pub fn replica_local_uid(server_uid: &str) -> Vec<u8> {
    cat(b"H:U:", server_uid.as_bytes())
}

/// `H:f:<server path>`: an object the replica must fetch.
pub fn replica_fetch(server_path: &str) -> Vec<u8> {
    cat(REPLICA_FETCH, server_path.as_bytes())
}

/// `H:l:<server uid>`: an object listed by the running full download.
pub fn replica_listed(server_uid: &str) -> Vec<u8> {
    cat(REPLICA_LISTED, server_uid.as_bytes())
}

/// Version of the keyspace layout this engine reads and writes.
pub const SCHEMA_VERSION: u32 = 14;

/// Key holding the schema version.
pub const SCHEMA: &[u8] = b"s:schema";
/// Key holding the site settings.
pub const SITE: &[u8] = b"s:site";

/// `o:<uid>`
pub fn object(uid: &str) -> Vec<u8> {
    cat(b"o:", uid.as_bytes())
}

/// Prefix of every stored embedding vector (`E:v:<uid>`).
pub const VECTOR_PREFIX: &[u8] = b"E:v:";

/// `E:model`: the id of the embedding model that made the stored vectors.
pub const VECTOR_MODEL: &[u8] = b"E:model";

/// `E:v:<uid>`: the embedding vector of an object.
pub fn vector(uid: &str) -> Vec<u8> {
    cat(VECTOR_PREFIX, uid.as_bytes())
}

/// `p:<path>`
pub fn path(path: &str) -> Vec<u8> {
    cat(b"p:", path.as_bytes())
}

/// Prefix of every child entry of `parent_uid`.
pub fn children_prefix(parent_uid: &str) -> Vec<u8> {
    let mut k = cat(b"c:", parent_uid.as_bytes());
    k.push(b':');
    k
}

/// `c:<parent uid>:<pos>`
pub fn child(parent_uid: &str, pos: u64) -> Vec<u8> {
    let mut k = children_prefix(parent_uid);
    k.extend_from_slice(&pos.to_be_bytes());
    k
}

/// The position encoded in a child key, if well-formed.
pub fn child_pos(key: &[u8]) -> Option<u64> {
    let tail: [u8; 8] = key.get(key.len().checked_sub(8)?..)?.try_into().ok()?;
    Some(u64::from_be_bytes(tail))
}

/// `u:<login>`
pub fn user(login: &str) -> Vec<u8> {
    cat(b"u:", login.as_bytes())
}

/// Prefix of every user key.
pub const USER_PREFIX: &[u8] = b"u:";

/// `G:<group id>`
pub fn group(id: &str) -> Vec<u8> {
    cat(b"G:", id.as_bytes())
}

/// Prefix of every group key.
pub const GROUP_PREFIX: &[u8] = b"G:";

/// `M:<member>`: the groups a user or group is a direct member of.
pub fn member_of(member: &str) -> Vec<u8> {
    cat(b"M:", member.as_bytes())
}

/// `e:<digest>`: a password reset token, stored under the hex SHA-256 of the token (the token
/// itself is only mailed).
pub fn reset_token(digest_hex: &str) -> Vec<u8> {
    cat(RESET_TOKEN_PREFIX, digest_hex.as_bytes())
}

/// Prefix of every password reset token key.
pub const RESET_TOKEN_PREFIX: &[u8] = b"e:";

/// Key holding the security settings.
pub const SECURITY: &[u8] = b"s:security";

/// Key holding the fields a site adds to the user forms.
pub const USERSCHEMA: &[u8] = b"s:userschema";

/// Key holding the user and group settings.
pub const USERGROUP: &[u8] = b"s:usergroup";

/// `r:<jti>`
pub fn revoked_token(jti: &str) -> Vec<u8> {
    cat(b"r:", jti.as_bytes())
}

/// Prefix of every version of every object (`v:`).
pub const VERSION_PREFIX: &[u8] = b"v:";

/// Prefix of every workflow history entry of every object (`w:`).
pub const WORKFLOW_HISTORY_PREFIX: &[u8] = b"w:";

/// Prefix of every version of `uid`.
pub fn versions_prefix(uid: &str) -> Vec<u8> {
    let mut k = cat(b"v:", uid.as_bytes());
    k.push(b':');
    k
}

/// `v:<uid>:<version>`
pub fn version(uid: &str, version: u32) -> Vec<u8> {
    let mut k = versions_prefix(uid);
    k.extend_from_slice(&version.to_be_bytes());
    k
}

/// Prefix of every workflow history entry of `uid`.
pub fn workflow_history_prefix(uid: &str) -> Vec<u8> {
    let mut k = cat(b"w:", uid.as_bytes());
    k.push(b':');
    k
}

/// `w:<uid>:<seq>`
pub fn workflow_history(uid: &str, seq: u32) -> Vec<u8> {
    let mut k = workflow_history_prefix(uid);
    k.extend_from_slice(&seq.to_be_bytes());
    k
}

/// `l:<uid>`
pub fn lock(uid: &str) -> Vec<u8> {
    cat(b"l:", uid.as_bytes())
}

/// `a:<alias path>`
pub fn alias(path: &str) -> Vec<u8> {
    cat(b"a:", path.as_bytes())
}

/// Prefix of every alias key.
pub const ALIAS_PREFIX: &[u8] = b"a:";

/// Prefix of the reverse-index entries of aliases redirecting to `target`.
pub fn alias_target_prefix(target: &str) -> Vec<u8> {
    let mut k = cat(b"b:", target.as_bytes());
    k.push(0);
    k
}

/// `b:<target>\0<alias path>`
pub fn alias_target(target: &str, alias_path: &str) -> Vec<u8> {
    let mut k = alias_target_prefix(target);
    k.extend_from_slice(alias_path.as_bytes());
    k
}

/// Prefix of every comment of `uid`.
pub fn comments_prefix(uid: &str) -> Vec<u8> {
    let mut k = cat(b"m:", uid.as_bytes());
    k.push(b':');
    k
}

/// `m:<uid>:<seq>`
pub fn comment(uid: &str, seq: u64) -> Vec<u8> {
    let mut k = comments_prefix(uid);
    k.extend_from_slice(&seq.to_be_bytes());
    k
}

/// Key holding the language settings and installed profiles.
pub const MULTILINGUAL: &[u8] = b"s:multilingual";

/// Key holding the navigation settings.
pub const NAVIGATION: &[u8] = b"s:navigation";

/// Prefix of every member of translation group `group`.
pub fn translation_group_prefix(group: &str) -> Vec<u8> {
    let mut k = cat(b"t:", group.as_bytes());
    k.push(b':');
    k
}

/// `t:<group>:<language>`
pub fn translation(group: &str, language: &str) -> Vec<u8> {
    let mut k = translation_group_prefix(group);
    k.extend_from_slice(language.as_bytes());
    k
}

/// `g:<uid>`
pub fn translation_group_of(uid: &str) -> Vec<u8> {
    cat(b"g:", uid.as_bytes())
}

/// Prefix of every configuration registry record.
pub const CONFIG_PREFIX: &[u8] = b"k:";

/// `k:<name>`: the value of configuration registry record `name`.
pub fn config_record(name: &str) -> Vec<u8> {
    cat(CONFIG_PREFIX, name.as_bytes())
}

/// Version of the type registry (decimal text, absent = 0): moved by every commit that wrote a
/// `y:` key, so a registry read at one version is valid for every request that reads it.
pub const TYPES_VERSION: &[u8] = b"s:types";

/// Prefix of the whole type registry (types and behaviors): one scan reads it.
pub const TYPE_REGISTRY_PREFIX: &[u8] = b"y:";

/// Prefix of every stored content type.
pub const TYPE_PREFIX: &[u8] = b"y:t:";

/// Prefix of every stored behavior.
pub const BEHAVIOR_PREFIX: &[u8] = b"y:b:";

/// `y:t:<type name>`
pub fn content_type(name: &str) -> Vec<u8> {
    cat(TYPE_PREFIX, name.as_bytes())
}

/// `y:b:<behavior name>`
pub fn behavior(name: &str) -> Vec<u8> {
    cat(BEHAVIOR_PREFIX, name.as_bytes())
}

/// Prefix of every schema-1 history sequence key (`q:<uid>`), retired in schema 2.
pub const V1_HISTORY_SEQ_PREFIX: &[u8] = b"q:";

/// `q:<uid>`: the last history sequence number of an object in schema 1 (read only by the
/// migration to schema 2, which replaces it with [`history_counter`]).
pub fn v1_history_seq(uid: &str) -> Vec<u8> {
    cat(V1_HISTORY_SEQ_PREFIX, uid.as_bytes())
}

/// Prefix of every counter of `uid` (`n:<uid>:`).
pub fn counters_prefix(uid: &str) -> Vec<u8> {
    let mut k = cat(b"n:", uid.as_bytes());
    k.push(b':');
    k
}

/// `n:<uid>:h`: the next number of `uid`'s combined history (versions and workflow entries).
pub fn history_counter(uid: &str) -> Vec<u8> {
    let mut k = counters_prefix(uid);
    k.push(b'h');
    k
}

/// `n:<uid>:v`: the next version number of `uid`.
pub fn version_counter(uid: &str) -> Vec<u8> {
    let mut k = counters_prefix(uid);
    k.push(b'v');
    k
}

/// `n:<uid>:m`: the next comment position of `uid`.
pub fn comment_counter(uid: &str) -> Vec<u8> {
    let mut k = counters_prefix(uid);
    k.push(b'm');
    k
}

/// The big-endian u64 at the end of a key (a comment's position), if well-formed.
pub fn trailing_u64(key: &[u8]) -> Option<u64> {
    child_pos(key)
}

/// The big-endian u32 at the end of a key, if well-formed.
pub fn trailing_u32(key: &[u8]) -> Option<u32> {
    let tail: [u8; 4] = key.get(key.len().checked_sub(4)?..)?.try_into().ok()?;
    Some(u32::from_be_bytes(tail))
}

/// Prefix of every catalog key (entries, postings, links).
pub const CATALOG_PREFIX: &[u8] = b"x:";

/// `x:e:<uid>`: the catalog entry of `uid`.
pub fn catalog_entry(uid: &str) -> Vec<u8> {
    cat(b"x:e:", uid.as_bytes())
}

/// Prefix of the listing copies of the catalog entries of the children of `parent_uid`
/// (`x:c:<parent uid>:`).
pub fn catalog_children_prefix(parent_uid: &str) -> Vec<u8> {
    let mut k = cat(b"x:c:", parent_uid.as_bytes());
    k.push(b':');
    k
}

/// `x:c:<parent uid>:<pos u64 BE>`: the listing copy of the catalog entry of the child at
/// `pos` of `parent_uid` (the same position as its `c:` key).
pub fn catalog_child(parent_uid: &str, pos: u64) -> Vec<u8> {
    let mut k = catalog_children_prefix(parent_uid);
    k.extend_from_slice(&pos.to_be_bytes());
    k
}

/// `x:v:<parent uid>`: how many listing copies under `x:c:<parent uid>:` Anonymous may view
/// (a big-endian u64; absent when none), so an anonymous folder listing knows its total without
/// reading every child.
pub fn catalog_anonymous_count(parent_uid: &str) -> Vec<u8> {
    cat(ANONYMOUS_COUNT_PREFIX, parent_uid.as_bytes())
}

/// Prefix of the anonymous counts of listing copies ([`catalog_anonymous_count`]).
pub const ANONYMOUS_COUNT_PREFIX: &[u8] = b"x:v:";

/// The parent uid of a listing copy's key ([`catalog_child`]), if well-formed.
pub fn catalog_child_parent(key: &[u8]) -> Option<&str> {
    let inner = key.strip_prefix(b"x:c:")?;
    let uid = inner.get(..inner.len().checked_sub(9)?)?;
    std::str::from_utf8(uid).ok()
}

/// Prefix of the full-text postings of every term starting with `term` (`x:w:<term>`); with
/// [`TERM_END`] appended, of exactly `term`.
pub fn text_posting_prefix(term: &str) -> Vec<u8> {
    cat(b"x:w:", term.as_bytes())
}

/// The byte that ends a term (or subject) in a posting key, before the uid.
pub const TERM_END: u8 = 0;

/// `x:w:<term>\0<uid>`
pub fn text_posting(term: &str, uid: &str) -> Vec<u8> {
    let mut k = text_posting_prefix(term);
    k.push(TERM_END);
    k.extend_from_slice(uid.as_bytes());
    k
}

/// `x:a:<allowed>`: the interned id of an `allowedRolesAndUsers` list (its stored bytes).
pub fn allowed_id(allowed: &[u8]) -> Vec<u8> {
    cat(b"x:a:", allowed)
}

/// Prefix of the interned `allowedRolesAndUsers` lists by id (`x:A:`).
pub const ALLOWED_BY_ID_PREFIX: &[u8] = b"x:A:";

/// `x:A:<id>`: the `allowedRolesAndUsers` list interned as `id`.
pub fn allowed_by_id(id: u32) -> Vec<u8> {
    cat(ALLOWED_BY_ID_PREFIX, &id.to_be_bytes())
}

/// Prefix of every `Subject` posting (`x:k:`).
pub const SUBJECT_PREFIX: &[u8] = b"x:k:";

/// Prefix of the `Subject` postings of `subject` (`x:k:<subject>\0`).
pub fn subject_posting_prefix(subject: &str) -> Vec<u8> {
    let mut k = cat(SUBJECT_PREFIX, subject.as_bytes());
    k.push(TERM_END);
    k
}

/// `x:k:<subject>\0<uid>`
pub fn subject_posting(subject: &str, uid: &str) -> Vec<u8> {
    let mut k = subject_posting_prefix(subject);
    k.extend_from_slice(uid.as_bytes());
    k
}

/// Prefix of the postings of the field index `index` (`x:i:<index>\0`).
pub fn field_posting_prefix(index: &str) -> Vec<u8> {
    let mut k = cat(b"x:i:", index.as_bytes());
    k.push(TERM_END);
    k
}

/// `x:i:<index>\0<term>\0<uid>`: `<uid>` has `<term>` in the field index `index` (empty value).
pub fn field_posting(index: &str, term: &str, uid: &str) -> Vec<u8> {
    let mut k = field_posting_prefix(index);
    k.extend_from_slice(term.as_bytes());
    k.push(TERM_END);
    k.extend_from_slice(uid.as_bytes());
    k
}

/// Prefix of the reverse-link entries of `target` (`x:l:<target>\0`).
pub fn backlinks_prefix(target: &str) -> Vec<u8> {
    let mut k = cat(b"x:l:", target.as_bytes());
    k.push(TERM_END);
    k
}

/// Prefix of every reverse-link entry (`x:l:`).
pub const BACKLINK_PREFIX: &[u8] = b"x:l:";

/// Prefix of the relations by source (`L:s:`).
pub const RELATION_PREFIX: &[u8] = b"L:s:";

/// Prefix of the relations of `source` (`L:s:<source>\0`).
pub fn relations_of(source: &str) -> Vec<u8> {
    let mut k = cat(RELATION_PREFIX, source.as_bytes());
    k.push(TERM_END);
    k
}

/// `L:s:<source>\0<name>\0<target>`
pub fn relation(source: &str, name: &str, target: &str) -> Vec<u8> {
    let mut k = relations_of(source);
    k.extend_from_slice(name.as_bytes());
    k.push(TERM_END);
    k.extend_from_slice(target.as_bytes());
    k
}

/// Prefix of the relations pointing at `target` (`L:t:<target>\0`).
pub fn relations_to(target: &str) -> Vec<u8> {
    let mut k = cat(b"L:t:", target.as_bytes());
    k.push(TERM_END);
    k
}

/// `L:t:<target>\0<name>\0<source>`
pub fn relation_by_target(target: &str, name: &str, source: &str) -> Vec<u8> {
    let mut k = relations_to(target);
    k.extend_from_slice(name.as_bytes());
    k.push(TERM_END);
    k.extend_from_slice(source.as_bytes());
    k
}

/// `x:l:<target>\0<source>`
pub fn backlink(target: &str, source: &str) -> Vec<u8> {
    let mut k = backlinks_prefix(target);
    k.extend_from_slice(source.as_bytes());
    k
}

/// The uid after the last [`TERM_END`] of a posting key.
pub fn posting_uid(key: &[u8]) -> Option<&str> {
    let i = key.iter().rposition(|b| *b == TERM_END)?;
    std::str::from_utf8(&key[i + 1..]).ok()
}

/// Prefix of every key of blob `id` (metadata and chunks): `f:<id>:`.
pub fn blob_prefix(id: &str) -> Vec<u8> {
    let mut k = cat(b"f:", id.as_bytes());
    k.push(b':');
    k
}

/// `f:<id>:m`: the metadata of blob `id`.
pub fn blob_meta(id: &str) -> Vec<u8> {
    let mut k = blob_prefix(id);
    k.push(b'm');
    k
}

/// `f:<id>:c<n>`: chunk `n` of blob `id`.
pub fn blob_chunk(id: &str, n: u32) -> Vec<u8> {
    let mut k = blob_prefix(id);
    k.push(b'c');
    k.extend_from_slice(&n.to_be_bytes());
    k
}

/// Prefix of every chunk of blob `id` (`f:<id>:c`).
#[cfg(any(test, feature = "internals"))]
pub fn blob_chunks_prefix(id: &str) -> Vec<u8> {
    let mut k = blob_prefix(id);
    k.push(b'c');
    k
}

/// Prefix of the owners of blob `id` (`f:<id>:o`).
pub fn blob_owners_prefix(id: &str) -> Vec<u8> {
    let mut k = blob_prefix(id);
    k.push(b'o');
    k
}

/// `f:<id>:o<uid>`: object `uid` owns blob `id`.
pub fn blob_owner(id: &str, uid: &str) -> Vec<u8> {
    let mut k = blob_owners_prefix(id);
    k.extend_from_slice(uid.as_bytes());
    k
}

/// Prefix of the blob index of object `uid` (`F:<uid>:`).
pub fn owned_blobs_prefix(uid: &str) -> Vec<u8> {
    let mut k = cat(b"F:", uid.as_bytes());
    k.push(b':');
    k
}

/// `F:<uid>:<blob id>`: object `uid` owns blob `id`.
pub fn owned_blob(uid: &str, id: &str) -> Vec<u8> {
    let mut k = owned_blobs_prefix(uid);
    k.extend_from_slice(id.as_bytes());
    k
}

/// Prefix of every unfinished tus upload.
pub const UPLOAD_PREFIX: &[u8] = b"T:";

/// `T:<id>`: an unfinished tus upload.
pub fn upload(id: &str) -> Vec<u8> {
    cat(UPLOAD_PREFIX, id.as_bytes())
}

/// Prefix of every content rule.
pub const RULE_PREFIX: &[u8] = b"R:r:";

/// `R:r:<rule id>`: a content rule.
pub fn rule(id: &str) -> Vec<u8> {
    cat(RULE_PREFIX, id.as_bytes())
}

/// Prefix of every rule assignment.
pub const RULE_ASSIGNMENT_PREFIX: &[u8] = b"R:a:";

/// Prefix of the rules assigned to object `uid`.
pub fn rule_assignments(uid: &str) -> Vec<u8> {
    let mut k = cat(RULE_ASSIGNMENT_PREFIX, uid.as_bytes());
    k.push(b':');
    k
}

/// `R:a:<uid>:<rule id>`: rule `rule` assigned to object `uid`.
pub fn rule_assignment(uid: &str, rule: &str) -> Vec<u8> {
    cat(&rule_assignments(uid), rule.as_bytes())
}

/// Prefix of every job.
pub const JOB_PREFIX: &[u8] = b"J:j:";

/// `J:j:<uuid>`: a job.
pub fn job(uuid: &str) -> Vec<u8> {
    cat(JOB_PREFIX, uuid.as_bytes())
}

/// Prefix of the outbox queue.
pub const OUTBOX_PREFIX: &[u8] = b"J:q:";

/// `J:q:<due millis BE>:<uuid>`: job `uuid` is due for delivery at `due_millis`.
pub fn outbox_entry(due_millis: u64, uuid: &str) -> Vec<u8> {
    let mut k = cat(OUTBOX_PREFIX, &due_millis.to_be_bytes());
    k.push(b':');
    k.extend_from_slice(uuid.as_bytes());
    k
}

/// Prefix of every scheduled job.
pub const SCHEDULED_JOB_PREFIX: &[u8] = b"K:";

/// `K:<id>`: a scheduled job.
pub fn scheduled_job(id: &str) -> Vec<u8> {
    cat(SCHEDULED_JOB_PREFIX, id.as_bytes())
}

/// `C:n`: the change log's last sequence number.
pub const CHANGES_SEQ: &[u8] = b"C:n";

/// `C:h`: the change log's horizon (cursors below it are expired).
pub const CHANGES_HORIZON: &[u8] = b"C:h";

/// Prefix of the change log's entries.
pub const CHANGES_ENTRY_PREFIX: &[u8] = b"C:e:";

/// `C:e:<seq u64 BE>`: one entry of the change log.
pub fn changes_entry(seq: u64) -> Vec<u8> {
    cat(CHANGES_ENTRY_PREFIX, &seq.to_be_bytes())
}

/// `C:u:<uid>`: the sequence of an object's entry in the change log.
pub fn changes_uid(uid: &str) -> Vec<u8> {
    cat(b"C:u:", uid.as_bytes())
}

/// Prefix of the change log's removals by sequence.
pub const CHANGES_REMOVAL_PREFIX: &[u8] = b"C:r:";

/// `C:r:<seq u64 BE>`: a removal in the change log.
pub fn changes_removal(seq: u64) -> Vec<u8> {
    cat(CHANGES_REMOVAL_PREFIX, &seq.to_be_bytes())
}

/// `I:k:<login>\0<key>`: an idempotency record.
pub fn idempotency_record(login: &str, key: &str) -> Vec<u8> {
    let mut k = cat(b"I:k:", login.as_bytes());
    k.push(0);
    k.extend_from_slice(key.as_bytes());
    k
}

/// Prefix of the idempotency records by expiry.
pub const IDEMPOTENCY_EXPIRY_PREFIX: &[u8] = b"I:t:";

/// `I:t:<expiry millis u64 BE><login>\0<key>`: an idempotency record by expiry.
pub fn idempotency_expiry(expires_millis: u64, login: &str, key: &str) -> Vec<u8> {
    let mut k = cat(IDEMPOTENCY_EXPIRY_PREFIX, &expires_millis.to_be_bytes());
    k.extend_from_slice(login.as_bytes());
    k.push(0);
    k.extend_from_slice(key.as_bytes());
    k
}

fn cat(a: &[u8], b: &[u8]) -> Vec<u8> {
    let mut k = Vec::with_capacity(a.len() + b.len());
    k.extend_from_slice(a);
    k.extend_from_slice(b);
    k
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn child_keys_sort_by_position() {
        assert!(child("u", 2) < child("u", 10));
        assert!(child("u", 255) < child("u", 256));
        assert_eq!(child_pos(&child("u", 42)), Some(42));
        assert!(child("u", u64::MAX) < crate::core::store::prefix_end(&children_prefix("u")));
    }
}
