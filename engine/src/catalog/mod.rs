//! The catalog: an index of every content object, kept by an event subscriber
//! ([`CatalogSubscriber`]) inside the write transaction that changes the object, so it is never
//! stale and is the same on every host.
//!
//! Each object has one entry (`x:e:<uid>`, [`Entry`]): the metadata a search result shows (the
//! spec's "Catalog item"), the values of the field indexes (`portal_type`, `review_state`,
//! `UID`, `Creator`, `language`, dates, `sortable_title`, `getObjPositionInParent`,
//! `is_folderish`, `exclude_from_nav`) and its `allowedRolesAndUsers`
//! ([`crate::people::permissions::allowed_roles_and_users`]), so a result page and the permission filter
//! need no object loads. Range-scanned postings serve the selective queries: full text
//! (`x:w:<term>\0<uid>`, [`text`]), `Subject` (`x:k:<subject>\0<uid>`), the path index is the
//! tree's own path and child keys (a folder listing in position order is one range scan of its
//! children), field postings (`x:i:<index>\0<term>\0<uid>`) serve an event's `start` and `end`
//! (a date range is one range scan) and `getRawRelatedItems`, and the reverse link index
//! (`x:l:<target>\0<source>`) answers link integrity.
//!
//! A search ([`search`]) picks the most selective source of candidates (UIDs, full text,
//! subjects, a folder's children, a subtree), reads their entries, keeps those the caller may
//! view (its [`crate::core::security::Principal::search_tokens`] meet the entry's
//! `allowedRolesAndUsers`) and that match every criterion, and sorts them.

pub mod codec;
pub mod postings;
pub mod querystring;
pub mod text;
pub mod textquery;
pub mod vocabularies;

use std::borrow::Cow;
use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet, HashSet};

use chrono::{DateTime, Utc};
use serde_json::{Map, Value};

use crate::content::tree;
use crate::core::error::{EngineError, Result};
use crate::core::events::Event;
use crate::core::keys;
use crate::core::model::fields::parse_datetime;
use crate::core::model::{ContentRecord, LISTING_FIELDS};
use crate::core::store::{prefix_end, Direction};
use crate::runtime::context::Ctx;
use crate::runtime::subscriber::Subscriber;

/// The catalog entry of one object (`x:e:<uid>`).
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// Uid.
    pub uid: String,
    /// Id within the parent.
    pub id: String,
    /// Site path (`""` for the root).
    pub path: String,
    /// Parent's uid.
    pub parent: Option<String>,
    /// Content type.
    pub type_name: String,
    /// Position in the parent (`getObjPositionInParent`).
    pub pos: u64,
    /// Creation time.
    pub created: DateTime<Utc>,
    /// Modification time.
    pub modified: DateTime<Utc>,
    /// Owner's login.
    pub owner: String,
    /// Workflow state.
    pub review_state: Option<String>,
    /// Whether the type is folderish.
    pub folderish: bool,
    /// Size of the object's field values as JSON (`getObjSize`).
    pub size: usize,
    /// The field values listings read ([`LISTING_FIELDS`]) and the indexes read
    /// ([`INDEX_FIELDS`]), those that are set.
    pub fields: Map<String, Value>,
    /// `allowedRolesAndUsers`: the roles and `user:<id>` tokens that may view the object.
    pub allowed: Allowed,
}

/// `allowedRolesAndUsers` of an entry, kept in its stored form ([`codec::list_items`]): reading
/// an entry copies it in one piece, and its tokens are read when they are used.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Allowed(Vec<u8>);

impl Allowed {
    /// The tokens.
    pub fn new<'s>(tokens: impl ExactSizeIterator<Item = &'s str>) -> Self {
        let mut w = codec::Writer::bare();
        w.strs(tokens);
        Allowed(w.finish())
    }

    /// Each token.
    #[cfg(any(test, feature = "internals"))]
    pub fn iter(&self) -> impl Iterator<Item = &str> {
        codec::list_items(&self.0).filter_map(|b| std::str::from_utf8(b).ok())
    }

    /// Whether `token` is one of them.
    #[cfg(any(test, feature = "internals"))]
    pub fn contains(&self, token: &str) -> bool {
        codec::list_items(&self.0).any(|b| b == token.as_bytes())
    }
}

impl Entry {
    /// The stored form of the entry ([`codec`]), with the full-text terms and the uids it links
    /// to (kept with the entry, to drop its postings when it is reindexed or removed).
    pub fn encode<'s>(
        &self,
        terms: impl ExactSizeIterator<Item = &'s str>,
        links: impl ExactSizeIterator<Item = &'s str>,
    ) -> Vec<u8> {
        let mut w = codec::Writer::new();
        w.raw(&self.allowed.0);
        w.str(&self.path);
        w.varint(self.pos);
        w.opt_time(self.date_field("effective").as_ref());
        w.opt_time(self.date_field("expires").as_ref());
        w.str(&self.uid);
        w.str(&self.id);
        w.opt_str(self.parent.as_deref());
        w.str(&self.type_name);
        w.time(&self.created);
        w.time(&self.modified);
        w.str(&self.owner);
        w.opt_str(self.review_state.as_deref());
        w.byte(u8::from(self.folderish));
        w.varint(self.size as u64);
        w.map(&self.fields);
        w.strs(terms);
        w.strs(links);
        w.finish()
    }

    /// Decode a stored entry ([`Entry::encode`]).
    pub fn decode(bytes: &[u8]) -> Result<Entry> {
        let mut r = codec::Reader::new(bytes)?;
        let head = r.head()?;
        let rest = r.rest()?;
        Ok(Entry::from_parts(
            Allowed(head.allowed_raw().to_vec()),
            head.path.to_string(),
            head.pos,
            rest,
        ))
    }

    fn from_parts(allowed: Allowed, path: String, pos: u64, rest: codec::Rest) -> Entry {
        Entry {
            uid: rest.uid,
            id: rest.id,
            path,
            parent: rest.parent,
            type_name: rest.type_name,
            pos,
            created: rest.created,
            modified: rest.modified,
            owner: rest.owner,
            review_state: rest.review_state,
            folderish: rest.folderish,
            size: rest.size,
            fields: rest.fields,
            allowed,
        }
    }

    /// The entry as a record decoded for a listing (structural data and the listing fields;
    /// no local roles, no other field values): what summaries read. Never save it.
    pub fn record(&self) -> ContentRecord {
        ContentRecord {
            uid: self.uid.clone(),
            id: self.id.clone(),
            path: self.path.clone(),
            parent: self.parent.clone(),
            type_name: self.type_name.clone(),
            pos: self.pos,
            created: self.created,
            modified: self.modified,
            owner: self.owner.clone(),
            review_state: self.review_state.clone(),
            child_count: 0,
            next_pos: 0,
            local_roles: BTreeMap::new(),
            block_local_roles: false,
            fields: self.fields.clone(),
            rev: 0,
        }
    }

    /// [`Entry::record`], without copying.
    pub fn into_record(self) -> ContentRecord {
        ContentRecord {
            uid: self.uid,
            id: self.id,
            path: self.path,
            parent: self.parent,
            type_name: self.type_name,
            pos: self.pos,
            created: self.created,
            modified: self.modified,
            owner: self.owner,
            review_state: self.review_state,
            child_count: 0,
            next_pos: 0,
            local_roles: BTreeMap::new(),
            block_local_roles: false,
            fields: self.fields,
            rev: 0,
        }
    }

    fn str_field(&self, name: &str) -> &str {
        self.fields.get(name).and_then(Value::as_str).unwrap_or("")
    }

    fn date_field(&self, name: &str) -> Option<DateTime<Utc>> {
        self.fields
            .get(name)
            .and_then(Value::as_str)
            .and_then(parse_datetime)
    }

    /// The title.
    pub fn title(&self) -> &str {
        self.str_field("title")
    }

    /// The subjects (tags).
    pub fn subjects(&self) -> Vec<&str> {
        match self.fields.get("subjects") {
            Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        }
    }

    /// `Creator`: the first creator, else the owner.
    pub fn creator(&self) -> &str {
        match self.fields.get("creators") {
            Some(Value::Array(a)) => a.first().and_then(Value::as_str).unwrap_or(&self.owner),
            _ => &self.owner,
        }
    }

    /// Whether a caller with `tokens` may view the object.
    pub fn visible_to(&self, tokens: &[String]) -> bool {
        codec::list_items(&self.allowed.0).any(|a| tokens.iter().any(|t| t.as_bytes() == a))
    }

    /// Whether the object is active at `now`: effective (or no effective date) and not expired.
    pub fn active_at(&self, now: DateTime<Utc>) -> bool {
        self.date_field("effective").is_none_or(|e| e <= now)
            && self.date_field("expires").is_none_or(|x| x > now)
    }
}

/// Field values an entry keeps besides [`LISTING_FIELDS`], for the indexes that read them: an
/// event's `start` and `end` (the indexes `start`, `end`) and `relatedItems`
/// (`getRawRelatedItems`). Each set value also has a field posting (`x:i:`, [`field_terms`]).
pub const INDEX_FIELDS: &[&str] = &["start", "end", "relatedItems"];

/// The field postings of `start` (an event's start; the field and the index share the name).
const START_POSTINGS: &str = "start";
/// The field postings of `end`.
const END_POSTINGS: &str = "end";
/// The field postings of `getRawRelatedItems` (the uids of `relatedItems`).
const RELATED_POSTINGS: &str = "getRawRelatedItems";

/// The uids of a `relatedItems` value among `fields`.
fn related_items(fields: &Map<String, Value>) -> Vec<&str> {
    match fields.get("relatedItems") {
        Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

/// A date as the term of a field posting: the seconds since the epoch, offset to be positive,
/// in 20 digits, so that terms sort as their dates do and a date range is one range scan.
pub fn date_term(d: &DateTime<Utc>) -> String {
    format!("{:020}", i128::from(d.timestamp()) - i128::from(i64::MIN))
}

/// The field postings (`x:i:<index>\0<term>`) of an entry with `fields`: its `start` and `end`
/// dates ([`date_term`]) and the uids of its `relatedItems`.
fn field_terms(fields: &Map<String, Value>) -> BTreeSet<(&'static str, String)> {
    let mut out = BTreeSet::new();
    // Each date field has the name of its index.
    for name in [START_POSTINGS, END_POSTINGS] {
        if let Some(d) = fields
            .get(name)
            .and_then(Value::as_str)
            .and_then(parse_datetime)
        {
            out.insert((name, date_term(&d)));
        }
    }
    for uid in related_items(fields) {
        out.insert((RELATED_POSTINGS, uid.to_string()));
    }
    out
}

/// The uids with a field posting of `index` whose term lies from `from` to `to` (inclusive;
/// `None`: open).
fn field_posting_uids(
    ctx: &Ctx<'_>,
    index: &str,
    from: Option<&str>,
    to: Option<&str>,
) -> Result<BTreeSet<String>> {
    let prefix = keys::field_posting_prefix(index);
    let mut start = prefix.clone();
    if let Some(f) = from {
        start.extend_from_slice(f.as_bytes());
    }
    let end = match to {
        Some(t) => {
            let mut k = prefix.clone();
            k.extend_from_slice(t.as_bytes());
            k.push(keys::TERM_END + 1);
            k
        }
        None => prefix_end(&prefix),
    };
    Ok(ctx
        .scan(&start, &end, Direction::Forward, usize::MAX)?
        .into_iter()
        .filter_map(|(k, _)| keys::posting_uid(&k).map(str::to_string))
        .collect())
}

/// `sortable_title`: the title folded (case and accents), numbers padded to 6 digits so that
/// "Page 10" sorts after "Page 9".
pub fn sortable_title(title: &str) -> String {
    let folded = text::fold(title.trim());
    let mut out = String::with_capacity(folded.len() + 8);
    let mut digits = String::new();
    for c in folded.chars() {
        if c.is_ascii_digit() {
            digits.push(c);
            continue;
        }
        if !digits.is_empty() {
            out.push_str(&format!("{digits:0>6}"));
            digits.clear();
        }
        out.push(c);
    }
    if !digits.is_empty() {
        out.push_str(&format!("{digits:0>6}"));
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Indexes

/// The catalog's indexes, as queries and `sort_on` name them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Index {
    /// `path` (with `depth`).
    Path,
    /// `portal_type`.
    PortalType,
    /// `review_state`.
    ReviewState,
    /// `UID`.
    Uid,
    /// `Subject` (keywords).
    Subject,
    /// `Creator`.
    Creator,
    /// `Language`.
    Language,
    /// `getId` / `id`.
    Id,
    /// `sortable_title`.
    SortableTitle,
    /// `created`.
    Created,
    /// `modified`.
    Modified,
    /// `effective` (also `Date`).
    Effective,
    /// `expires`.
    Expires,
    /// `getObjPositionInParent`.
    Position,
    /// `is_folderish`.
    IsFolderish,
    /// `exclude_from_nav`.
    ExcludeFromNav,
    /// `SearchableText` (full text).
    SearchableText,
    /// `Title` (the words of the title).
    Title,
    /// `Description` (the words of the description).
    Description,
    /// `start`: an event's start (postings `x:i:start`).
    Start,
    /// `end`: an event's end (postings `x:i:end`).
    End,
    /// `effectiveRange`: the window from `effective` (none: always) to `expires` (none:
    /// never); a date is in it when `effective <= date < expires` (Plone's DateRangeIndex,
    /// the same test as [`Entry::active_at`]).
    EffectiveRange,
    /// `getRawRelatedItems`: the uids of the object's `relatedItems` (postings
    /// `x:i:getRawRelatedItems`).
    RelatedItems,
}

/// The kind of values an index holds, which decides the queries it answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IndexKind {
    /// The path index.
    Path,
    /// One or several strings per object (field and keyword indexes).
    Strings,
    /// A timestamp.
    Date,
    /// An integer.
    Int,
    /// A boolean.
    Bool,
    /// Words (full text).
    Text,
    /// A window of time, queried with one date (the objects whose window holds it).
    DateRange,
}

impl Index {
    /// Every index with the names queries use (the first name of each is canonical).
    pub const NAMES: &'static [(&'static str, Index)] = &[
        ("path", Index::Path),
        ("portal_type", Index::PortalType),
        ("review_state", Index::ReviewState),
        ("UID", Index::Uid),
        ("Subject", Index::Subject),
        ("Creator", Index::Creator),
        ("Language", Index::Language),
        ("language", Index::Language),
        ("getId", Index::Id),
        ("id", Index::Id),
        ("sortable_title", Index::SortableTitle),
        ("created", Index::Created),
        ("modified", Index::Modified),
        ("effective", Index::Effective),
        ("Date", Index::Effective),
        ("expires", Index::Expires),
        ("getObjPositionInParent", Index::Position),
        ("is_folderish", Index::IsFolderish),
        ("isFolderish", Index::IsFolderish),
        ("exclude_from_nav", Index::ExcludeFromNav),
        ("SearchableText", Index::SearchableText),
        ("Title", Index::Title),
        ("Description", Index::Description),
        ("start", Index::Start),
        ("end", Index::End),
        ("effectiveRange", Index::EffectiveRange),
        ("getRawRelatedItems", Index::RelatedItems),
    ];

    /// The index a query parameter names, if any.
    pub fn from_name(name: &str) -> Option<Index> {
        Self::NAMES
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, i)| *i)
    }

    /// The kind of values it holds.
    pub fn kind(self) -> IndexKind {
        match self {
            Index::Path => IndexKind::Path,
            Index::PortalType
            | Index::ReviewState
            | Index::Uid
            | Index::Subject
            | Index::Creator
            | Index::Language
            | Index::Id
            | Index::SortableTitle
            | Index::RelatedItems => IndexKind::Strings,
            Index::Created
            | Index::Modified
            | Index::Effective
            | Index::Expires
            | Index::Start
            | Index::End => IndexKind::Date,
            Index::EffectiveRange => IndexKind::DateRange,
            Index::Position => IndexKind::Int,
            Index::IsFolderish | Index::ExcludeFromNav => IndexKind::Bool,
            Index::SearchableText | Index::Title | Index::Description => IndexKind::Text,
        }
    }

    /// Whether results can be sorted on it.
    pub fn sortable(self) -> bool {
        !matches!(
            self,
            Index::Subject
                | Index::SearchableText
                | Index::Title
                | Index::Description
                | Index::EffectiveRange
                | Index::RelatedItems
        )
    }

    /// The name of its postings (`x:i:<name>`), for the indexes kept in postings of their own.
    fn posting_name(self) -> Option<&'static str> {
        match self {
            Index::Start => Some(START_POSTINGS),
            Index::End => Some(END_POSTINGS),
            Index::RelatedItems => Some(RELATED_POSTINGS),
            _ => None,
        }
    }

    fn strings(self, e: &Entry) -> Vec<Cow<'_, str>> {
        match self {
            Index::PortalType => vec![Cow::Borrowed(e.type_name.as_str())],
            Index::ReviewState => e
                .review_state
                .iter()
                .map(|s| Cow::Borrowed(s.as_str()))
                .collect(),
            Index::Uid => vec![Cow::Borrowed(e.uid.as_str())],
            Index::Subject => e.subjects().into_iter().map(Cow::Borrowed).collect(),
            Index::Creator => vec![Cow::Borrowed(e.creator())],
            Index::Language => vec![Cow::Borrowed(e.str_field("language"))],
            Index::Id => vec![Cow::Borrowed(e.id.as_str())],
            Index::SortableTitle => vec![Cow::Owned(sortable_title(e.title()))],
            Index::Path => vec![Cow::Borrowed(e.path.as_str())],
            Index::RelatedItems => related_items(&e.fields)
                .into_iter()
                .map(Cow::Borrowed)
                .collect(),
            _ => Vec::new(),
        }
    }

    fn date(self, e: &Entry) -> Option<DateTime<Utc>> {
        match self {
            Index::Created => Some(e.created),
            Index::Modified => Some(e.modified),
            Index::Effective => e.date_field("effective"),
            Index::Expires => e.date_field("expires"),
            Index::Start => e.date_field("start"),
            Index::End => e.date_field("end"),
            _ => None,
        }
    }

    fn boolean(self, e: &Entry) -> bool {
        match self {
            Index::IsFolderish => e.folderish,
            Index::ExcludeFromNav => e
                .fields
                .get("exclude_from_nav")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            _ => false,
        }
    }

    fn sort_value(self, e: &Entry) -> SortValue<'_> {
        match self.kind() {
            // As in Plone, an object without an effective date sorts as the floor (its publishing
            // date is "always"), one without an expiry date as the ceiling ("never"); so "newest
            // first" lists the undated last.
            IndexKind::Date => match (self, self.date(e)) {
                (_, Some(d)) => SortValue::Date(d),
                (Index::Effective, None) => SortValue::Date(DateTime::<Utc>::MIN_UTC),
                (Index::Expires, None) => SortValue::Date(DateTime::<Utc>::MAX_UTC),
                (_, None) => SortValue::Missing,
            },
            IndexKind::Int => SortValue::Int(e.pos as i64),
            IndexKind::Bool => SortValue::Int(i64::from(self.boolean(e))),
            IndexKind::Path => SortValue::Str(Cow::Borrowed(e.path.as_str())),
            _ => self
                .strings(e)
                .into_iter()
                .next()
                .map_or(SortValue::Missing, SortValue::Str),
        }
    }
}

#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
enum SortValue<'a> {
    Int(i64),
    Date(DateTime<Utc>),
    Str(Cow<'a, str>),
    /// Missing values sort after every value.
    Missing,
}

// ---------------------------------------------------------------------------------------------
// Queries

/// A bound of a range query.
#[derive(Debug, Clone, PartialEq)]
pub enum Bound {
    /// A timestamp (date indexes).
    Date(DateTime<Utc>),
    /// An integer (`getObjPositionInParent`).
    Int(i64),
    /// A string (field indexes).
    Str(String),
}

/// One condition of a query.
#[derive(Debug, Clone, PartialEq)]
pub enum Criterion {
    /// The object has any of the values.
    Any(Index, Vec<String>),
    /// The object has every one of the values.
    All(Index, Vec<String>),
    /// The object has none of the values.
    NoneOf(Index, Vec<String>),
    /// The value lies within the bounds (inclusive; a missing bound is open).
    Range(Index, Option<Bound>, Option<Bound>),
    /// The boolean index has this value.
    Bool(Index, bool),
    /// Every word of the text (full-text syntax: `word*` prefixes) occurs.
    Text(Index, String),
    /// The window of the range index holds the date (`effectiveRange`).
    Holds(Index, DateTime<Utc>),
    /// Values given as patterns: one ending in `*` matches the values starting with what
    /// precedes it, another only itself (the querystring widget's "use * to autocomplete").
    Glob(Index, Glob, Vec<String>),
}

/// How the patterns of a [`Criterion::Glob`] must match.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Glob {
    /// Some value matches some pattern.
    Any,
    /// Every pattern matches some value.
    All,
    /// No value matches any pattern.
    None,
}

/// Whether `value` matches `pattern` (a trailing `*`: a prefix).
fn glob_matches(pattern: &str, value: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) => value.starts_with(prefix),
        None => value == pattern,
    }
}

/// One sort key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sort {
    /// The index.
    pub index: Index,
    /// Descending.
    pub reverse: bool,
}

/// A catalog query.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Query {
    /// Site paths to search under (`""` is the root); empty: the whole site.
    pub paths: Vec<String>,
    /// How deep below each path: `None` the path and everything below it, `Some(0)` the path
    /// itself, `Some(1)` its children, `Some(n)` the path and the objects up to n levels below
    /// it (Plone's path index).
    pub depth: Option<u32>,
    /// Every one must hold.
    pub criteria: Vec<Criterion>,
    /// Sort keys, most significant first; none: path order (a folder's children: their order).
    pub sort: Vec<Sort>,
    /// Also objects not yet effective or already expired (otherwise only callers who may
    /// access inactive content see them).
    pub show_inactive: bool,
    /// Keep at most this many results (after sorting).
    pub limit: Option<usize>,
}

/// Every entry matching `q` the caller may view, sorted.
pub fn search(ctx: &Ctx<'_>, q: &Query) -> Result<Vec<Entry>> {
    search_page(ctx, q, 0, usize::MAX)?
        .0
        .iter()
        .map(StoredEntry::decode)
        .collect()
}

/// The entries matching `q` the caller may view, sorted, from the `start`th and at most `size`
/// of them, and how many match in all. When the query needs nothing but the path, the full text,
/// the permissions and the dates of an entry (and sorts on nothing else), the candidates are
/// filtered by decoding only those ([`Head`]), and only the page's entries are decoded whole.
pub fn search_page(
    ctx: &Ctx<'_>,
    q: &Query,
    start: usize,
    size: usize,
) -> Result<(Vec<StoredEntry>, usize)> {
    search_page_in(ctx, q, start, size, None)
}

/// [`search_page`] where the query was made on `context` (the object whose `@search` it is): a
/// listing of its children in their order for a caller who may view every one of them reads
/// only the page ([`children_page`]); any other query is answered as by [`search_page`].
pub fn search_page_in(
    ctx: &Ctx<'_>,
    q: &Query,
    start: usize,
    size: usize,
    context: Option<&ContentRecord>,
) -> Result<(Vec<StoredEntry>, usize)> {
    let tokens = ctx.principal.search_tokens();
    let now = ctx.now();
    let inactive_ok = q.show_inactive || sees_inactive(ctx);
    if let Some(folder) = context.filter(|_| inactive_ok) {
        if let Some(page) = children_page(ctx, q, start, size, folder, &tokens)? {
            return Ok(page);
        }
    }
    let has_text = q.criteria.iter().any(|c| matches!(c, Criterion::Text(..)));
    let analyzer = if has_text {
        query_analyzer(ctx)?
    } else {
        text::Analyzer::new([])
    };
    // A full-text criterion: its matches and their relevance, found once.
    let hits = match q.criteria.iter().find_map(|c| match c {
        Criterion::Text(Index::SearchableText, t) => Some(t),
        _ => None,
    }) {
        Some(t) => Some(text_matches(ctx, &analyzer, t)?),
        None => None,
    };
    if let Some(hits) = &hits {
        let whole_site =
            q.depth.is_none() && q.paths.iter().all(|p| p.trim_end_matches('/').is_empty());
        if q.criteria.len() == 1 && whole_site && q.sort.is_empty() {
            if let Some(page) =
                ranked_from_postings(ctx, hits, &tokens, inactive_ok, now, q.limit, start, size)?
            {
                return Ok(page);
            }
        }
    }
    let (candidates, ordered, unique) = candidates(ctx, q, hits.as_ref())?;
    // A candidate's stored entry: read with the candidates (a folder's children), else now.
    let entry_of = |uid: &str, read: Option<Option<StoredEntry>>| -> Result<Option<Vec<u8>>> {
        match read {
            Some(e) => Ok(e.map(|e| e.0)),
            None => ctx.get(&keys::catalog_entry(uid)),
        }
    };
    // Without sort keys, full-text results come by relevance.
    let relevance = |a: &str, b: &str| match &hits {
        Some(h) => match (h.get(a), h.get(b)) {
            (Some(x), Some(y)) => by_relevance((a, x), (b, y)),
            _ => Ordering::Equal,
        },
        None => Ordering::Equal,
    };
    let light = q
        .criteria
        .iter()
        .all(|c| matches!(c, Criterion::Text(Index::SearchableText, _)))
        && q.sort
            .iter()
            .all(|s| matches!(s.index, Index::Path | Index::Position));
    let mut seen = HashSet::new();
    let mut first_time = |uid: &str| unique || seen.insert(uid.to_string());
    if light {
        // The children of one folder have distinct positions: no path needed to order them.
        let one_folder = q.paths.len() <= 1 && q.depth == Some(1);
        let need_path = !(one_folder
            && (q.sort.is_empty() && ordered
                || q.sort.len() == 1 && q.sort[0].index == Index::Position));
        let mut heads = Vec::new();
        for (uid, read) in candidates {
            if !first_time(&uid) {
                continue;
            }
            let Some(bytes) = entry_of(&uid, read)? else {
                continue;
            };
            let h = codec::light_head(&bytes)?;
            if !h.visible_to(&tokens)
                || (!inactive_ok && !h.active_at(now))
                || !path_within(h.path, q)
            {
                continue;
            }
            let path = if need_path {
                h.path.to_string()
            } else {
                String::new()
            };
            let pos = h.pos;
            heads.push((path, pos, bytes, uid));
        }
        if !q.sort.is_empty() {
            heads.sort_by(|a, b| {
                for s in &q.sort {
                    let o = match s.index {
                        Index::Position => a.1.cmp(&b.1),
                        _ => a.0.cmp(&b.0),
                    };
                    let o = if s.reverse { o.reverse() } else { o };
                    if o != Ordering::Equal {
                        return o;
                    }
                }
                a.0.cmp(&b.0)
            });
        } else if hits.is_some() {
            heads.sort_by(|a, b| relevance(&a.3, &b.3));
        } else if !ordered {
            heads.sort_by(|a, b| a.0.cmp(&b.0));
        }
        if let Some(l) = q.limit {
            heads.truncate(l);
        }
        let total = heads.len();
        let page = heads
            .into_iter()
            .skip(start)
            .take(size)
            .map(|(_, _, bytes, _)| StoredEntry(bytes))
            .collect();
        return Ok((page, total));
    }
    let mut out = Vec::new();
    for (uid, read) in candidates {
        if !first_time(&uid) {
            continue;
        }
        let Some(bytes) = entry_of(&uid, read)? else {
            continue;
        };
        let e = Entry::decode(&bytes)?;
        if !e.visible_to(&tokens) || (!inactive_ok && !e.active_at(now)) {
            continue;
        }
        if !within_paths(&e, q) {
            continue;
        }
        if q.criteria
            .iter()
            .all(|c| matches(&analyzer, hits.as_ref(), &e, c))
        {
            out.push((e, bytes));
        }
    }
    if !q.sort.is_empty() {
        out.sort_by(|(a, _), (b, _)| {
            for s in &q.sort {
                let o = s.index.sort_value(a).cmp(&s.index.sort_value(b));
                let o = if s.reverse { o.reverse() } else { o };
                if o != Ordering::Equal {
                    return o;
                }
            }
            a.path.cmp(&b.path)
        });
    } else if hits.is_some() {
        out.sort_by(|(a, _), (b, _)| relevance(&a.uid, &b.uid));
    } else if !ordered {
        out.sort_by(|(a, _), (b, _)| a.path.cmp(&b.path));
    }
    if let Some(l) = q.limit {
        out.truncate(l);
    }
    let total = out.len();
    let page = out
        .into_iter()
        .skip(start)
        .take(size)
        .map(|(_, bytes)| StoredEntry(bytes))
        .collect();
    Ok((page, total))
}

/// The page of a query for the children of `folder` in their order (`path.depth=1` on its
/// path, no criterion, no sort key but the position ascending), inactive ones included, when
/// the caller may view every child: as a role granted View on every object
/// ([`crate::core::security::granted_everywhere`]), or because Anonymous may view them all (the
/// catalog's count of them, [`anonymous_child_count`], is the folder's `child_count`). The
/// total is then the folder's `child_count` and only the page's entries are read. `None` when
/// that does not hold, or when an entry of the page is missing or not visible (the full query
/// answers then).
fn children_page(
    ctx: &Ctx<'_>,
    q: &Query,
    start: usize,
    size: usize,
    folder: &ContentRecord,
    tokens: &[String],
) -> Result<Option<(Vec<StoredEntry>, usize)>> {
    let one_level = q.depth == Some(1)
        && q.criteria.is_empty()
        && matches!(q.paths.as_slice(), [p] if *p == folder.path);
    let by_position = match q.sort.as_slice() {
        [] => true,
        [s] => s.index == Index::Position && !s.reverse,
        _ => false,
    };
    if !one_level || !by_position {
        return Ok(None);
    }
    let children = usize::try_from(folder.child_count).unwrap_or(usize::MAX);
    let all_visible = crate::core::security::granted_everywhere(
        &ctx.principal,
        crate::core::security::Permission::View,
        &ctx.core.workflows,
    ) || anonymous_child_count(ctx, &folder.uid)? == children;
    if !all_visible {
        return Ok(None);
    }
    let total = q.limit.map_or(children, |l| l.min(children));
    let want = size.min(total.saturating_sub(start));
    if want == 0 {
        return Ok(Some((Vec::new(), total)));
    }
    let kids = child_entries(ctx, &folder.uid, start, want)?;
    if kids.len() != want {
        return Ok(None);
    }
    let mut page = Vec::with_capacity(want);
    for (_, entry) in kids {
        let Some(entry) = entry else {
            return Ok(None);
        };
        // Read through the folder's children, the entry is one of a child (below the folder);
        // its visibility is read from the entry's front only.
        if !entry.visible_to(tokens)? {
            return Ok(None);
        }
        page.push(entry);
    }
    Ok(Some((page, total)))
}

/// A whole-site full-text search with no other criterion, answered from the postings: the
/// visible, active matches counted and ranked without reading their entries, then only the
/// batch's entries read. `None` when some match has a posting without [`postings::Meta`] (a
/// store not yet migrated): then the entries decide.
#[allow(clippy::too_many_arguments)]
fn ranked_from_postings(
    ctx: &Ctx<'_>,
    hits: &Hits,
    tokens: &[String],
    inactive_ok: bool,
    now: DateTime<Utc>,
    limit: Option<usize>,
    start: usize,
    size: usize,
) -> Result<Option<(Vec<StoredEntry>, usize)>> {
    let mut visibility = postings::Visibility::new(tokens);
    let mut ranked: Vec<(&str, &Hit)> = Vec::with_capacity(hits.len());
    for (uid, hit) in &hits.0 {
        let Some(meta) = &hit.meta else {
            return Ok(None);
        };
        if (inactive_ok || meta.active_at(now)) && visibility.visible(ctx, meta.allowed)? {
            ranked.push((uid.as_str(), hit));
        }
    }
    let total = limit.map_or(ranked.len(), |l| l.min(ranked.len()));
    let want = start.saturating_add(size).min(total);
    if want == 0 {
        return Ok(Some((Vec::new(), total)));
    }
    if want < ranked.len() {
        ranked.select_nth_unstable_by(want - 1, |a, b| by_relevance(*a, *b));
        ranked.truncate(want);
    }
    ranked.sort_unstable_by(|a, b| by_relevance(*a, *b));
    let mut page = Vec::with_capacity(want.saturating_sub(start));
    for (uid, _) in ranked.into_iter().skip(start) {
        if let Some(e) = stored_entry(ctx, uid)? {
            page.push(e);
        }
    }
    Ok(Some((page, total)))
}

/// Whether the caller may see inactive content everywhere (Manager, Site Administrator).
fn sees_inactive(ctx: &Ctx<'_>) -> bool {
    match &ctx.principal {
        crate::core::security::Principal::User(u) => u
            .roles
            .iter()
            .any(|r| r == "Manager" || r == "Site Administrator"),
        crate::core::security::Principal::Anonymous => false,
    }
}

/// A catalog entry as stored, decoded only as far as it is used (listings read it in place of
/// the object's record: [`stored_entry`]).
#[derive(Clone)]
pub struct StoredEntry(Vec<u8>);

impl StoredEntry {
    /// Whether a caller with search `tokens` ([`crate::core::security::Principal::search_tokens`])
    /// may view the object: its `allowedRolesAndUsers` meet them, which holds exactly when the
    /// caller holds View on it (`security`'s tests check that). Reads the front only.
    pub fn visible_to(&self, tokens: &[String]) -> Result<bool> {
        codec::visible_to(&self.0, tokens)
    }

    /// The entry read in place ([`codec::View`]).
    pub fn view(&self) -> Result<codec::View<'_>> {
        codec::view(&self.0)
    }

    /// The entry decoded.
    pub fn decode(&self) -> Result<Entry> {
        Entry::decode(&self.0)
    }

    /// The object as a record decoded for a listing ([`Entry::record`]): what summaries read,
    /// the same values as [`ContentRecord::from_json_for_listing`] gives for them.
    pub fn record(&self) -> Result<ContentRecord> {
        Ok(Entry::decode(&self.0)?.into_record())
    }

    /// The whole entry.
    #[cfg(any(test, feature = "internals"))]
    pub fn entry(&self) -> Result<Entry> {
        Entry::decode(&self.0)
    }
}

/// The catalog entry of `uid` as stored, if it has one.
pub fn stored_entry(ctx: &Ctx<'_>, uid: &str) -> Result<Option<StoredEntry>> {
    Ok(ctx.get(&keys::catalog_entry(uid))?.map(StoredEntry))
}

/// The children of `parent_uid` in order (skipping `skip`, at most `limit` of them), each with
/// its catalog entry as a listing reads it (`None`: the child has no entry). Two range scans:
/// the children (`c:`) and the listing copies of their entries at the same positions (`x:c:`);
/// a child whose copy is missing or names another uid (an index behind the tree) has its entry
/// read from `x:e:`.
pub fn child_entries(
    ctx: &Ctx<'_>,
    parent_uid: &str,
    skip: usize,
    limit: usize,
) -> Result<Vec<(String, Option<StoredEntry>)>> {
    let kids = tree::child_slots(ctx, parent_uid, skip, limit)?;
    let (Some(first), Some(last)) = (kids.first(), kids.last()) else {
        return Ok(Vec::new());
    };
    let start = keys::catalog_child(parent_uid, first.0);
    let end = match last.0.checked_add(1) {
        Some(after) => keys::catalog_child(parent_uid, after),
        None => prefix_end(&keys::catalog_children_prefix(parent_uid)),
    };
    let mut copies = ctx
        .scan(&start, &end, Direction::Forward, usize::MAX)?
        .into_iter()
        .peekable();
    let mut out = Vec::with_capacity(kids.len());
    for (pos, uid) in kids {
        let mut copy = None;
        while let Some(p) = copies.peek().and_then(|(k, _)| keys::child_pos(k)) {
            if p > pos {
                break;
            }
            if let Some((_, v)) = copies.next() {
                if p == pos {
                    copy = Some(v);
                    break;
                }
            }
        }
        let entry = match copy {
            Some(v) if codec::entry_uid(&v)? == uid => Some(StoredEntry(v)),
            _ => stored_entry(ctx, &uid)?,
        };
        out.push((uid, entry));
    }
    Ok(out)
}

/// The listing copies (`x:c:`) of the children of `parent_uid`, in their order: one range scan,
/// without the children's own keys (`c:`). Only where the catalog is committed (a read
/// transaction): the catalog's subscriber writes a child's copy at the child's position in the
/// transaction that places the child, but a write request runs the subscribers after its
/// handler, so there the copies may be behind the tree ([`child_entries`] reads both).
pub fn child_copies(ctx: &Ctx<'_>, parent_uid: &str) -> Result<Vec<StoredEntry>> {
    let prefix = keys::catalog_children_prefix(parent_uid);
    Ok(ctx
        .scan_prefix(&prefix)?
        .into_iter()
        .map(|(_, v)| StoredEntry(v))
        .collect())
}

/// The catalog entry of `uid`.
pub fn entry(ctx: &Ctx<'_>, uid: &str) -> Result<Option<Entry>> {
    ctx.get(&keys::catalog_entry(uid))?
        .map(|b| Entry::decode(&b))
        .transpose()
}

/// The candidates of a query (each uid with its stored entry when it was read with it: `Some`,
/// holding `None` when it has none), whether they come in the default order already (path order,
/// or a folder's order for a one-level listing), and whether each comes once.
#[allow(clippy::type_complexity)]
fn candidates(
    ctx: &Ctx<'_>,
    q: &Query,
    hits: Option<&Hits>,
) -> Result<(Vec<(String, Option<Option<StoredEntry>>)>, bool, bool)> {
    let unread = |uids: Vec<String>| uids.into_iter().map(|u| (u, None)).collect::<Vec<_>>();
    for c in &q.criteria {
        if let Criterion::Any(Index::Uid, uids) = c {
            return Ok((unread(uids.clone()), false, false));
        }
    }
    if let Some(hits) = hits {
        return Ok((
            hits.0.iter().map(|(u, _)| (u.clone(), None)).collect(),
            false,
            true,
        ));
    }
    for c in &q.criteria {
        match c {
            Criterion::Any(Index::Subject, subjects) => {
                let mut out = BTreeSet::new();
                for s in subjects {
                    out.extend(subject_uids(ctx, s)?);
                }
                return Ok((unread(out.into_iter().collect()), false, true));
            }
            Criterion::All(Index::Subject, subjects) if !subjects.is_empty() => {
                let mut sets = subjects.iter().map(|s| subject_uids(ctx, s));
                let mut acc: BTreeSet<String> = match sets.next() {
                    Some(first) => first?,
                    None => BTreeSet::new(),
                };
                for s in sets {
                    let s = s?;
                    acc.retain(|u| s.contains(u));
                }
                return Ok((unread(acc.into_iter().collect()), false, true));
            }
            Criterion::Any(Index::RelatedItems, targets) => {
                let mut out = BTreeSet::new();
                for t in targets {
                    out.extend(field_posting_uids(ctx, RELATED_POSTINGS, Some(t), Some(t))?);
                }
                return Ok((unread(out.into_iter().collect()), false, true));
            }
            Criterion::Range(i @ (Index::Start | Index::End), min, max)
                if min.is_some() || max.is_some() =>
            {
                let term = |b: &Option<Bound>| match b {
                    Some(Bound::Date(d)) => Ok(Some(date_term(d))),
                    None => Ok(None),
                    Some(_) => Err(()),
                };
                if let (Ok(from), Ok(to), Some(name)) = (term(min), term(max), i.posting_name()) {
                    let uids = field_posting_uids(ctx, name, from.as_deref(), to.as_deref())?;
                    return Ok((unread(uids.into_iter().collect()), false, true));
                }
            }
            _ => {}
        }
    }
    let paths: Vec<String> = if q.paths.is_empty() {
        vec![String::new()]
    } else {
        q.paths.clone()
    };
    let mut out = Vec::new();
    for p in &paths {
        match q.depth {
            Some(0) => out.extend(tree::uid_at(ctx, p)?.map(|u| (u, None))),
            Some(1) => {
                if let Some(uid) = tree::uid_at(ctx, p)? {
                    out.extend(
                        child_entries(ctx, &uid, 0, usize::MAX)?
                            .into_iter()
                            .map(|(u, e)| (u, Some(e))),
                    );
                }
            }
            _ => out.extend(unread(tree::subtree_uids(ctx, p)?)),
        }
    }
    Ok((out, paths.len() == 1, paths.len() == 1))
}

fn subject_uids(ctx: &Ctx<'_>, subject: &str) -> Result<BTreeSet<String>> {
    let prefix = keys::subject_posting_prefix(subject);
    Ok(ctx
        .scan_prefix(&prefix)?
        .into_iter()
        .filter_map(|(k, _)| keys::posting_uid(&k).map(str::to_string))
        .collect())
}

/// Most postings read of one query word before it counts as frequent: the words of an AND
/// query under it give the candidates, and the frequent ones are checked per candidate.
const FREQUENT: usize = 2048;

/// One object's match of a full-text query.
#[derive(Debug, Clone)]
pub struct Hit {
    /// Relevance: for each query word, its weight ([`postings::idf_weight`]) times the weight of
    /// its frequency in the object ([`postings::tf_weight`]).
    pub score: u64,
    /// What the object's postings say (permissions, dates, creation), when stored.
    pub meta: Option<postings::Meta>,
}

/// The matches of a full-text query, by uid (sorted, each once): merged and looked up without
/// hashing, since postings come in uid order.
#[derive(Debug, Default)]
pub struct Hits(Vec<(String, Hit)>);

impl Hits {
    /// The match of `uid`, if it matched.
    fn get(&self, uid: &str) -> Option<&Hit> {
        self.0
            .binary_search_by(|(u, _)| u.as_str().cmp(uid))
            .ok()
            .map(|i| &self.0[i].1)
    }

    /// How many objects matched.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether nothing matched.
    #[cfg(any(test, feature = "internals"))]
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// One posting read: the uid, how often the word occurs, what the posting says.
type Posting = (String, u32, Option<postings::Meta>);

/// The postings of one query word, by uid (sorted, each once, frequencies of several terms of
/// the word added up), reading at most `cap` postings (`None`: more than that).
fn word_postings(ctx: &Ctx<'_>, w: &text::QueryWord, cap: usize) -> Result<Option<Vec<Posting>>> {
    let prefixes: Vec<Vec<u8>> = match w {
        text::QueryWord::Exact(terms) => terms
            .iter()
            .map(|t| {
                let mut p = keys::text_posting_prefix(t);
                p.push(keys::TERM_END);
                p
            })
            .collect(),
        text::QueryWord::Prefix(ps) => ps.iter().map(|p| keys::text_posting_prefix(p)).collect(),
    };
    let mut found: Vec<Posting> = Vec::new();
    let several = prefixes.len() > 1 || matches!(w, text::QueryWord::Prefix(_));
    for prefix in prefixes {
        let limit = cap.saturating_add(1);
        let rows = ctx.scan(&prefix, &prefix_end(&prefix), Direction::Forward, limit)?;
        if rows.len() > cap {
            return Ok(None);
        }
        found.reserve(rows.len());
        for (k, v) in rows {
            if let Some(u) = keys::posting_uid(&k) {
                let meta = postings::Meta::decode(&v);
                let tf = meta.as_ref().map_or(1, |m| m.tf);
                found.push((u.to_string(), tf, meta));
            }
        }
        if found.len() > cap && !several {
            return Ok(None);
        }
    }
    if several {
        // Several terms (stems, or the words a prefix covers): one entry per uid.
        found.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        let mut merged: Vec<Posting> = Vec::with_capacity(found.len());
        for p in found {
            match merged.last_mut() {
                Some(last) if last.0 == p.0 => last.1 = last.1.saturating_add(p.1),
                _ => merged.push(p),
            }
        }
        found = merged;
        if found.len() > cap {
            return Ok(None);
        }
    }
    Ok(Some(found))
}

/// How often `uid` has the query word `w` (0: not at all; a point read per term; a prefix
/// reads the object's terms and counts each matching term once).
fn word_frequency(ctx: &Ctx<'_>, w: &text::QueryWord, uid: &str) -> Result<u32> {
    match w {
        text::QueryWord::Exact(terms) => {
            let mut tf = 0u32;
            for t in terms {
                if let Some(v) = ctx.get(&keys::text_posting(t, uid))? {
                    tf = tf.saturating_add(postings::Meta::decode(&v).map_or(1, |m| m.tf));
                }
            }
            Ok(tf)
        }
        text::QueryWord::Prefix(ps) => Ok(stored_terms(ctx, uid)?
            .iter()
            .filter(|t| ps.iter().any(|p| t.starts_with(p.as_str())))
            .count() as u32),
    }
}

/// Add the postings of one more word to the matches so far (`None`: it is the first word): a
/// merge of two uid-ordered lists, keeping the uids in both.
fn add_word(acc: Option<Vec<(String, Hit)>>, found: Vec<Posting>) -> Vec<(String, Hit)> {
    let weight = postings::idf_weight(found.len());
    match acc {
        None => found
            .into_iter()
            .map(|(uid, tf, meta)| {
                let score = weight * postings::tf_weight(tf);
                (uid, Hit { score, meta })
            })
            .collect(),
        Some(a) => {
            let mut out = Vec::with_capacity(a.len().min(found.len()));
            let mut f = found.into_iter().peekable();
            for (uid, mut hit) in a {
                while f.peek().is_some_and(|p| p.0 < uid) {
                    f.next();
                }
                if let Some(p) = f.peek() {
                    if p.0 == uid {
                        hit.score += weight * postings::tf_weight(p.1);
                        out.push((uid, hit));
                    }
                }
            }
            out
        }
    }
}

/// The objects whose full text matches `query` ([`textquery`]: words, phrases, `AND`, `OR`,
/// `NOT`, groups, `word*` prefixes), with their relevance (the weights of the matched words
/// added up). A query that does not parse matches nothing, as in Plone.
fn text_matches(ctx: &Ctx<'_>, analyzer: &text::Analyzer, query: &str) -> Result<Hits> {
    match textquery::parse(analyzer, query) {
        Ok(Some(tree)) => Ok(Hits(eval_text(ctx, &tree)?)),
        Ok(None) | Err(_) => Ok(Hits::default()),
    }
}

/// The matches of one node of a full-text query, by uid.
fn eval_text(ctx: &Ctx<'_>, q: &textquery::TextQuery) -> Result<Vec<(String, Hit)>> {
    use textquery::TextQuery;
    match q {
        TextQuery::Word(w) => Ok(match word_postings(ctx, w, usize::MAX)? {
            Some(found) => add_word(None, found),
            None => Vec::new(),
        }),
        TextQuery::Phrase(ws) => eval_and(ctx, std::slice::from_ref(q), &[], ws.len()),
        TextQuery::And { all, none } => eval_and(ctx, all, none, all.len()),
        TextQuery::Or(any) => {
            let mut acc: Vec<(String, Hit)> = Vec::new();
            for q in any {
                acc = union_hits(acc, eval_text(ctx, q)?);
            }
            Ok(acc)
        }
    }
}

/// The matches of every one of `all` and none of `none`. The words of `all` (and of its
/// phrases) are matched together, rare ones first ([`and_words`]), on the matches of its
/// groups; phrases are then checked against the text of each remaining object, and what
/// `none` matches is taken out.
fn eval_and(
    ctx: &Ctx<'_>,
    all: &[textquery::TextQuery],
    none: &[textquery::TextQuery],
    hint: usize,
) -> Result<Vec<(String, Hit)>> {
    use textquery::TextQuery;
    let mut words: Vec<&text::QueryWord> = Vec::with_capacity(hint);
    let mut phrases: Vec<&[text::QueryWord]> = Vec::new();
    let mut seed: Option<Vec<(String, Hit)>> = None;
    for q in all {
        match q {
            TextQuery::Word(w) => words.push(w),
            TextQuery::Phrase(ws) => {
                words.extend(ws.iter());
                phrases.push(ws);
            }
            group => {
                let found = eval_text(ctx, group)?;
                let s = match seed.take() {
                    Some(s) => intersect_hits(s, found),
                    None => found,
                };
                if s.is_empty() {
                    return Ok(s);
                }
                seed = Some(s);
            }
        }
    }
    let mut acc = and_words(ctx, &words, seed)?;
    if !phrases.is_empty() && !acc.is_empty() {
        let mut keep = Vec::with_capacity(acc.len());
        for (uid, hit) in acc {
            if has_phrases(ctx, &uid, &phrases)? {
                keep.push((uid, hit));
            }
        }
        acc = keep;
    }
    for q in none {
        if acc.is_empty() {
            break;
        }
        if let TextQuery::Word(w) = q {
            // A word with more postings than there are matches is checked per match.
            match word_postings(ctx, w, acc.len())? {
                Some(found) => {
                    let mut found = found.into_iter().map(|p| p.0).peekable();
                    acc.retain(|(uid, _)| {
                        while found.peek().is_some_and(|u| u < uid) {
                            found.next();
                        }
                        found.peek() != Some(uid)
                    });
                }
                None => {
                    let mut keep = Vec::with_capacity(acc.len());
                    for (uid, hit) in acc {
                        if word_frequency(ctx, w, &uid)? == 0 {
                            keep.push((uid, hit));
                        }
                    }
                    acc = keep;
                }
            }
            continue;
        }
        let out = eval_text(ctx, q)?;
        acc = minus_hits(acc, &out);
    }
    Ok(acc)
}

/// Whether the text of `uid` holds every one of `phrases` (its words analysed as when it was
/// indexed: [`object_analyzer`]).
fn has_phrases(ctx: &Ctx<'_>, uid: &str, phrases: &[&[text::QueryWord]]) -> Result<bool> {
    let Some(obj) = tree::load(ctx, uid)? else {
        return Ok(false);
    };
    let positions = object_analyzer(ctx, &obj)?.positions(&searchable_text(&obj));
    Ok(phrases
        .iter()
        .all(|ws| textquery::phrase_at(ws, &positions)))
}

/// The uids in both lists, their scores added up.
fn intersect_hits(a: Vec<(String, Hit)>, b: Vec<(String, Hit)>) -> Vec<(String, Hit)> {
    let mut out = Vec::with_capacity(a.len().min(b.len()));
    let mut b = b.into_iter().peekable();
    for (uid, mut hit) in a {
        while b.peek().is_some_and(|p| p.0 < uid) {
            b.next();
        }
        if let Some(p) = b.peek() {
            if p.0 == uid {
                hit.score += p.1.score;
                out.push((uid, hit));
            }
        }
    }
    out
}

/// The uids in either list, the scores of those in both added up.
fn union_hits(a: Vec<(String, Hit)>, b: Vec<(String, Hit)>) -> Vec<(String, Hit)> {
    let mut out = Vec::with_capacity(a.len().max(b.len()));
    let mut a = a.into_iter().peekable();
    let mut b = b.into_iter().peekable();
    loop {
        let next = match (a.peek(), b.peek()) {
            (Some(x), Some(y)) => match x.0.cmp(&y.0) {
                Ordering::Less => a.next(),
                Ordering::Greater => b.next(),
                Ordering::Equal => {
                    let (uid, mut hit) = a.next().expect("peeked");
                    let (_, other) = b.next().expect("peeked");
                    hit.score += other.score;
                    hit.meta = hit.meta.or(other.meta);
                    Some((uid, hit))
                }
            },
            (Some(_), None) => a.next(),
            (None, Some(_)) => b.next(),
            (None, None) => None,
        };
        match next {
            Some(h) => out.push(h),
            None => return out,
        }
    }
}

/// The uids of `a` not in `b`.
fn minus_hits(a: Vec<(String, Hit)>, b: &[(String, Hit)]) -> Vec<(String, Hit)> {
    let mut b = b.iter().peekable();
    let mut out = Vec::with_capacity(a.len());
    for (uid, hit) in a {
        while b.peek().is_some_and(|p| p.0 < uid) {
            b.next();
        }
        if b.peek().is_none_or(|p| p.0 != uid) {
            out.push((uid, hit));
        }
    }
    out
}

/// The objects having every one of `words` (among `seed` when given), with their relevance.
/// The rare words give the candidates (their postings intersected); the frequent ones are
/// checked on those candidates only, so a common word in an AND query costs no scan of its
/// postings (it is weighed as if found `cap` times).
fn and_words(
    ctx: &Ctx<'_>,
    words: &[&text::QueryWord],
    seed: Option<Vec<(String, Hit)>>,
) -> Result<Vec<(String, Hit)>> {
    if words.is_empty() {
        return Ok(seed.unwrap_or_default());
    }
    let mut acc: Option<Vec<(String, Hit)>> = seed;
    let mut frequent = Vec::new();
    for w in words {
        match word_postings(ctx, w, FREQUENT)? {
            Some(found) => {
                let a = add_word(acc.take(), found);
                if a.is_empty() {
                    return Ok(a);
                }
                acc = Some(a);
            }
            None => frequent.push(*w),
        }
    }
    let mut cap = FREQUENT;
    let mut acc = match acc {
        Some(a) => a,
        None => {
            // Every word is frequent: the candidates are the postings of the least frequent one,
            // found by reading at most `cap` postings of each word, the cap growing eightfold.
            loop {
                cap = cap.saturating_mul(8);
                let mut found = None;
                for (i, w) in frequent.iter().enumerate() {
                    if let Some(set) = word_postings(ctx, w, cap)? {
                        found = Some((i, set));
                        break;
                    }
                }
                if let Some((i, set)) = found {
                    frequent.remove(i);
                    break add_word(None, set);
                }
            }
        }
    };
    for w in frequent {
        let weight = postings::idf_weight(cap);
        let mut keep = Vec::with_capacity(acc.len());
        for (uid, mut hit) in acc {
            let tf = word_frequency(ctx, w, &uid)?;
            if tf > 0 {
                hit.score += weight * postings::tf_weight(tf);
                keep.push((uid, hit));
            }
        }
        acc = keep;
    }
    Ok(acc)
}

/// Relevance order: the higher score first, then the newer object, then by uid (the same order
/// on every host).
fn by_relevance(a: (&str, &Hit), b: (&str, &Hit)) -> Ordering {
    let created = |h: &Hit| h.meta.as_ref().map_or(i64::MIN, |m| m.created);
    b.1.score
        .cmp(&a.1.score)
        .then_with(|| created(b.1).cmp(&created(a.1)))
        .then_with(|| a.0.cmp(b.0))
}

fn within_paths(e: &Entry, q: &Query) -> bool {
    path_within(&e.path, q)
}

fn path_within(path: &str, q: &Query) -> bool {
    if q.paths.is_empty() && q.depth.is_none() {
        return true;
    }
    let paths: &[String] = if q.paths.is_empty() {
        std::slice::from_ref(&EMPTY)
    } else {
        &q.paths
    };
    paths.iter().any(|p| {
        let rest = if p.is_empty() {
            Some(path)
        } else if path == p.as_str() {
            Some("")
        } else {
            path.strip_prefix(p.as_str()).filter(|r| r.starts_with('/'))
        };
        let Some(rest) = rest else { return false };
        let level = rest.matches('/').count() as u32;
        // As Plone's path index: depth 1 is the children alone, a larger depth also takes the
        // path itself (its recorded `@search?path.query=..&path.depth=2` lists the folders).
        match q.depth {
            None => true,
            Some(0) => level == 0,
            Some(1) => level == 1,
            Some(d) => level <= d,
        }
    })
}

static EMPTY: String = String::new();

fn matches(analyzer: &text::Analyzer, hits: Option<&Hits>, e: &Entry, c: &Criterion) -> bool {
    match c {
        Criterion::Any(Index::Path, paths) => paths.iter().any(|p| {
            let p = p.trim_end_matches('/');
            p.is_empty() || e.path == p || e.path.starts_with(&format!("{p}/"))
        }),
        Criterion::Any(i, vals) => {
            let have = i.strings(e);
            vals.iter().any(|v| have.iter().any(|h| h == v))
        }
        Criterion::All(i, vals) => {
            let have = i.strings(e);
            vals.iter().all(|v| have.iter().any(|h| h == v))
        }
        Criterion::NoneOf(i, vals) => {
            let have = i.strings(e);
            !vals.iter().any(|v| have.iter().any(|h| h == v))
        }
        Criterion::Bool(i, b) => i.boolean(e) == *b,
        Criterion::Holds(_, d) => e.active_at(*d),
        Criterion::Glob(i, mode, patterns) => {
            let have = i.strings(e);
            let hit = |p: &String| have.iter().any(|h| glob_matches(p, h));
            match mode {
                Glob::Any => patterns.iter().any(hit),
                Glob::All => patterns.iter().all(hit),
                Glob::None => !patterns.iter().any(hit),
            }
        }
        Criterion::Range(i, min, max) => {
            let cmp = |b: &Bound| -> Option<Ordering> {
                match (i.kind(), b) {
                    (IndexKind::Date, Bound::Date(d)) => i.date(e).map(|v| v.cmp(d)),
                    (IndexKind::Int, Bound::Int(n)) => Some((e.pos as i64).cmp(n)),
                    (IndexKind::Strings, Bound::Str(s)) => {
                        i.strings(e).first().map(|v| v.as_ref().cmp(s.as_str()))
                    }
                    _ => None,
                }
            };
            min.as_ref()
                .is_none_or(|b| cmp(b).is_some_and(|o| o != Ordering::Less))
                && max
                    .as_ref()
                    .is_none_or(|b| cmp(b).is_some_and(|o| o != Ordering::Greater))
        }
        Criterion::Text(Index::SearchableText, _) => {
            // The matches were found once for the query ([`search_page`]).
            hits.is_some_and(|h| h.get(&e.uid).is_some())
        }
        Criterion::Text(i, t) => {
            let field = match i {
                Index::Title => e.title(),
                _ => e.str_field("description"),
            };
            // A query that does not parse matches nothing; one without words, everything.
            match textquery::parse(analyzer, t) {
                Ok(Some(q)) => q.matches(&analyzer.positions(field)),
                Ok(None) => true,
                Err(_) => false,
            }
        }
    }
}

/// The analyzer of queries: stems in every language of the site.
fn query_analyzer(ctx: &Ctx<'_>) -> Result<text::Analyzer> {
    let s = crate::content::multilingual::settings(ctx)?;
    let mut langs: Vec<String> = vec![s.default_language.clone()];
    langs.extend(s.available_languages.iter().cloned());
    Ok(text::Analyzer::new(langs.iter().map(String::as_str)))
}

/// The analyzer of an object's text: its own language when it has a stemmer, else the site's
/// default language.
fn object_analyzer(ctx: &Ctx<'_>, obj: &ContentRecord) -> Result<text::Analyzer> {
    let lang = obj.str_field("language");
    if text::algorithm(lang).is_some() {
        return Ok(text::Analyzer::new([lang]));
    }
    let s = crate::content::multilingual::settings(ctx)?;
    Ok(text::Analyzer::new([s.default_language.as_str()]))
}

// ---------------------------------------------------------------------------------------------
// Indexing

/// Keeps the catalog: indexes added objects, reindexes changed and moved ones (a change of local
/// roles: the whole subtree, whose `allowedRolesAndUsers` inherit them), unindexes removed ones.
/// Owns every `x:` key.
pub struct CatalogSubscriber;

impl Subscriber for CatalogSubscriber {
    fn name(&self) -> &'static str {
        "catalog"
    }

    fn on_event(&self, ctx: &mut Ctx<'_>, event: &Event) -> Result<()> {
        match event {
            Event::Added { uid, .. } => match tree::load(ctx, uid)? {
                // A new uid has no entry, postings or links yet: nothing old to read.
                Some(obj) => {
                    let ancestors = tree::ancestors_for_permissions(ctx, &obj)?;
                    write_index(ctx, &obj, &ancestors, true, Scope::All)
                }
                None => unindex(ctx, uid),
            },
            Event::Modified { uid, .. } => reindex_scoped(ctx, uid, Scope::All),
            // A rename changes the id, which is part of the text; a move keeps it.
            Event::Moved {
                uid,
                old_path,
                new_path,
                ..
            } => {
                let last = |p: &str| p.rsplit('/').next().unwrap_or("").to_string();
                let scope = if last(old_path) == last(new_path) {
                    Scope::Metadata
                } else {
                    Scope::All
                };
                reindex_scoped(ctx, uid, scope)
            }
            Event::Transitioned { uid, .. } => reindex_scoped(ctx, uid, Scope::Metadata),
            Event::LocalRolesChanged { uid, .. } => match tree::load(ctx, uid)? {
                Some(obj) => reindex_subtree(ctx, &obj),
                None => unindex(ctx, uid),
            },
            Event::OrderChanged { children, .. } => {
                for c in children {
                    reindex_scoped(ctx, c, Scope::Metadata)?;
                }
                Ok(())
            }
            Event::Removed { uid, .. } | Event::Binned { uid, .. } => unindex(ctx, uid),
            Event::Restored {
                uid, linked_from, ..
            } => {
                reindex(ctx, uid)?;
                // The objects that linked to it still list it among their links, but the
                // reverse entries went when it was binned: write those back.
                for source in linked_from {
                    let links_back = match ctx.get(&keys::catalog_entry(source))? {
                        Some(bytes) => Stored::read(&bytes)?.links.contains(&uid.as_str()),
                        None => false,
                    };
                    if links_back {
                        ctx.put(&keys::backlink(uid, source), b"")?;
                    }
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }
}

/// Index (again) the object `uid`; unindex it when it no longer exists.
pub fn reindex(ctx: &mut Ctx<'_>, uid: &str) -> Result<()> {
    reindex_scoped(ctx, uid, Scope::All)
}

fn reindex_scoped(ctx: &mut Ctx<'_>, uid: &str, scope: Scope) -> Result<()> {
    let Some(obj) = tree::load(ctx, uid)? else {
        return unindex(ctx, uid);
    };
    let ancestors = tree::ancestors_for_permissions(ctx, &obj)?;
    write_index(ctx, &obj, &ancestors, false, scope)
}

/// Reindex the metadata of `obj` and everything below it (ancestors read once per folder): what
/// a change of local roles changes (`allowedRolesAndUsers`); their text is not analysed again.
pub fn reindex_subtree(ctx: &mut Ctx<'_>, obj: &ContentRecord) -> Result<()> {
    let ancestors = tree::ancestors_for_permissions(ctx, obj)?;
    walk(ctx, obj.clone(), ancestors, false, &mut |_| {})
}

fn walk(
    ctx: &mut Ctx<'_>,
    obj: ContentRecord,
    ancestors: Vec<ContentRecord>,
    fresh: bool,
    progress: &mut dyn FnMut(usize),
) -> Result<()> {
    let scope = if fresh { Scope::All } else { Scope::Metadata };
    // Depth-first with an explicit stack: (object, its ancestors).
    let mut stack = vec![(obj, ancestors)];
    while let Some((obj, ancestors)) = stack.pop() {
        write_index(ctx, &obj, &ancestors, fresh, scope)?;
        progress(1);
        if obj.child_count > 0 {
            let kids = tree::children(ctx, &obj.uid, 0, usize::MAX)?;
            let mut chain = ancestors;
            chain.push(obj.clone_without_fields());
            for k in kids.into_iter().rev() {
                stack.push((k, chain.clone()));
            }
        }
    }
    Ok(())
}

/// Rebuild the whole catalog from the content tree: every `x:` key is dropped and every object
/// indexed again. `progress` is called with the number of objects indexed so far, every 1,000
/// objects and at the end. Returns how many objects were indexed.
pub fn rebuild(ctx: &mut Ctx<'_>, progress: &mut dyn FnMut(usize)) -> Result<usize> {
    ctx.delete_prefix(keys::CATALOG_PREFIX)?;
    let root = tree::root(ctx)?;
    let mut n = 0usize;
    walk(ctx, root, Vec::new(), true, &mut |k| {
        n += k;
        if n.is_multiple_of(1000) {
            progress(n);
        }
    })?;
    progress(n);
    Ok(n)
}

/// Write the entry and postings of `obj` (whose ancestors are `ancestors`, root first),
/// replacing those it had.
#[cfg(any(test, feature = "internals"))]
pub fn index_object(
    ctx: &mut Ctx<'_>,
    obj: &ContentRecord,
    ancestors: &[ContentRecord],
) -> Result<()> {
    write_index(ctx, obj, ancestors, false, Scope::All)
}

/// What [`write_index`] recomputes of an object's index.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Scope {
    /// Everything: metadata, full text, subjects and links.
    All,
    /// The metadata only (permissions, state, position, dates): the object's text, subjects and
    /// links did not change (a workflow transition, a change of local roles, a reorder), so its
    /// terms and links are taken from its entry instead of analysing its text again.
    Metadata,
}

/// [`index_object`]; `fresh` when `obj` is known to have nothing indexed yet (a new object, a
/// rebuild after dropping the catalog), which saves reading what it had.
fn write_index(
    ctx: &mut Ctx<'_>,
    obj: &ContentRecord,
    ancestors: &[ContentRecord],
    fresh: bool,
    scope: Scope,
) -> Result<()> {
    let ty = ctx.type_of(obj)?;
    let allowed = crate::people::permissions::allowed_roles_and_users(ctx, obj, ancestors)?;
    let allowed = Allowed::new(allowed.iter().map(String::as_str));
    let mut fields = Map::new();
    for name in LISTING_FIELDS.iter().chain(INDEX_FIELDS) {
        match obj.fields.get(*name) {
            None | Some(Value::Null) => {}
            Some(v) => {
                fields.insert((*name).to_string(), v.clone());
            }
        }
    }
    let e = Entry {
        uid: obj.uid.clone(),
        id: obj.id.clone(),
        path: obj.path.clone(),
        parent: obj.parent.clone(),
        type_name: obj.type_name.clone(),
        pos: obj.pos,
        created: obj.created,
        modified: obj.modified,
        owner: obj.owner.clone(),
        review_state: obj.review_state.clone(),
        folderish: ty.folderish,
        size: obj.fields_size(),
        fields,
        allowed,
    };
    let key = keys::catalog_entry(&obj.uid);
    let old_bytes = if fresh { None } else { ctx.get(&key)? };
    let old = old_bytes.as_deref().map(Stored::read).transpose()?;

    // Subjects.
    let new_subjects: BTreeSet<&str> = e.subjects().into_iter().collect();
    let old_subjects: BTreeSet<&str> = old.as_ref().map(Stored::subjects).unwrap_or_default();
    for s in old_subjects.difference(&new_subjects) {
        ctx.delete(&keys::subject_posting(s, &obj.uid))?;
    }
    for s in new_subjects.difference(&old_subjects) {
        ctx.put(&keys::subject_posting(s, &obj.uid), b"")?;
    }

    // Field postings (event dates, related items).
    let new_field_terms = field_terms(&e.fields);
    let old_field_terms = old
        .as_ref()
        .map(|o| field_terms(&o.fields))
        .unwrap_or_default();
    for (index, term) in old_field_terms.difference(&new_field_terms) {
        ctx.delete(&keys::field_posting(index, term, &obj.uid))?;
    }
    for (index, term) in new_field_terms.difference(&old_field_terms) {
        ctx.put(&keys::field_posting(index, term, &obj.uid), b"")?;
    }

    let old_terms: BTreeSet<&str> = old
        .as_ref()
        .map(|o| o.terms.iter().copied().collect())
        .unwrap_or_default();
    let old_links: BTreeSet<&str> = old
        .as_ref()
        .map(|o| o.links.iter().copied().collect())
        .unwrap_or_default();
    // What the full-text postings say besides the term's frequency ([`postings::Meta`]); when
    // it changed (permissions, dates), every posting is rewritten.
    let base = postings::Meta {
        allowed: postings::intern(ctx, &e.allowed.0)?,
        effective: e.date_field("effective"),
        expires: e.date_field("expires"),
        created: e.created.timestamp(),
        tf: 0,
    };
    let head_same = match old_bytes.as_deref().map(codec::head).transpose()? {
        Some(h) => {
            h.allowed_raw() == e.allowed.0.as_slice()
                && h.effective == base.effective
                && h.expires == base.expires
        }
        None => false,
    };
    let bytes = if scope == Scope::Metadata && old.is_some() {
        if !head_same {
            for t in &old_terms {
                let key = keys::text_posting(t, &obj.uid);
                let tf = ctx
                    .get(&key)?
                    .as_deref()
                    .and_then(postings::Meta::decode)
                    .map_or(1, |m| m.tf);
                ctx.put(&key, &postings::Meta { tf, ..base.clone() }.encode())?;
            }
        }
        e.encode(old_terms.iter().copied(), old_links.iter().copied())
    } else {
        // Full text.
        let analyzer = object_analyzer(ctx, obj)?;
        let mut counts = std::collections::BTreeMap::new();
        analyzer.term_counts(&searchable_text(obj), &mut counts);
        for t in old_terms.iter().filter(|t| !counts.contains_key(**t)) {
            ctx.delete(&keys::text_posting(t, &obj.uid))?;
        }
        for (t, tf) in &counts {
            let key = keys::text_posting(t, &obj.uid);
            let value = postings::Meta {
                tf: *tf,
                ..base.clone()
            }
            .encode();
            if head_same
                && old_terms.contains(t.as_str())
                && ctx.get(&key)?.as_deref() == Some(value.as_slice())
            {
                continue;
            }
            ctx.put(&key, &value)?;
        }
        let terms: BTreeSet<String> = counts.into_keys().collect();
        // Links.
        let links = links_of(ctx, obj)?;
        for t in old_links.iter().filter(|t| !links.contains(**t)) {
            ctx.delete(&keys::backlink(t, &obj.uid))?;
        }
        for t in links.iter().filter(|t| !old_links.contains(t.as_str())) {
            ctx.put(&keys::backlink(t, &obj.uid), b"")?;
        }
        e.encode(
            terms.iter().map(String::as_str),
            links.iter().map(String::as_str),
        )
    };
    if old_bytes.as_deref() != Some(bytes.as_slice()) {
        ctx.put(&key, &bytes)?;
        write_listing_copy(ctx, &obj.uid, old_bytes.as_deref(), &bytes)?;
    }
    Ok(())
}

/// The `x:c:` key of the listing copy of the stored entry `bytes` (`None` for the root).
fn listing_slot(bytes: &[u8]) -> Result<Option<Vec<u8>>> {
    let v = codec::view(bytes)?;
    Ok(v.parent.map(|p| keys::catalog_child(p, v.head.pos)))
}

/// Keep the listing copy (`x:c:`) of the entry of `uid` in step with its new stored form
/// `bytes` (`old`: the form it replaces): written at its position in its parent, and dropped
/// from the position it left.
fn write_listing_copy(
    ctx: &mut Ctx<'_>,
    uid: &str,
    old: Option<&[u8]>,
    bytes: &[u8],
) -> Result<()> {
    let slot = listing_slot(bytes)?;
    let copy = codec::listing_copy(bytes)?;
    if let Some(old) = old {
        let old_slot = listing_slot(old)?;
        if old_slot != slot {
            if let Some(s) = &old_slot {
                drop_listing_copy(ctx, s, uid)?;
            }
        } else if codec::listing_copy(old)? == copy {
            // Only the terms or links changed: the copy is the same.
            return Ok(());
        }
    }
    if let Some(s) = slot {
        put_listing_copy(ctx, &s, &copy)?;
    }
    Ok(())
}

/// Delete the listing copy at `slot` if it is the one of `uid` (another child may have taken
/// the position since: a reorder reindexes the children one by one).
fn drop_listing_copy(ctx: &mut Ctx<'_>, slot: &[u8], uid: &str) -> Result<()> {
    let Some(v) = ctx.get(slot)? else {
        return Ok(());
    };
    if codec::entry_uid(&v)? == uid {
        ctx.delete(slot)?;
        if anonymous_sees(&v)? {
            add_to_anonymous_count(ctx, slot, -1)?;
        }
    }
    Ok(())
}

/// Write the listing copy `copy` at `slot`, keeping the parent's anonymous count
/// ([`keys::catalog_anonymous_count`]) in step with what the slot held before.
fn put_listing_copy(ctx: &mut Ctx<'_>, slot: &[u8], copy: &[u8]) -> Result<()> {
    let was = match ctx.get(slot)? {
        Some(old) if old == copy => return Ok(()),
        Some(old) => anonymous_sees(&old)?,
        None => false,
    };
    ctx.put(slot, copy)?;
    let is = anonymous_sees(copy)?;
    if is != was {
        add_to_anonymous_count(ctx, slot, if is { 1 } else { -1 })?;
    }
    Ok(())
}

/// Whether Anonymous may view the object of the stored entry (or listing copy) `bytes`.
fn anonymous_sees(bytes: &[u8]) -> Result<bool> {
    codec::allows(bytes, ANONYMOUS)
}

/// The role every caller holds, the one search token of an anonymous caller.
const ANONYMOUS: &str = "Anonymous";

/// Add `delta` to the anonymous count of the parent of the listing copy at `slot` (deleted
/// when it reaches 0).
fn add_to_anonymous_count(ctx: &mut Ctx<'_>, slot: &[u8], delta: i64) -> Result<()> {
    let parent = keys::catalog_child_parent(slot)
        .ok_or_else(|| EngineError::Internal("malformed listing copy key".into()))?;
    let key = keys::catalog_anonymous_count(parent);
    let now = read_count(ctx.get(&key)?.as_deref())?;
    let next = now.saturating_add_signed(delta);
    if next == 0 {
        ctx.delete(&key)
    } else {
        ctx.put(&key, &next.to_be_bytes())
    }
}

fn read_count(bytes: Option<&[u8]>) -> Result<u64> {
    match bytes {
        None => Ok(0),
        Some(b) => b
            .try_into()
            .map(u64::from_be_bytes)
            .map_err(|_| EngineError::Internal("malformed anonymous count".into())),
    }
}

/// How many children of `parent_uid` Anonymous may view, as the catalog counts them
/// ([`keys::catalog_anonymous_count`]: the children's listing copies whose
/// `allowedRolesAndUsers` hold `Anonymous`).
pub fn anonymous_child_count(ctx: &Ctx<'_>, parent_uid: &str) -> Result<usize> {
    let n = read_count(
        ctx.get(&keys::catalog_anonymous_count(parent_uid))?
            .as_deref(),
    )?;
    Ok(usize::try_from(n).unwrap_or(usize::MAX))
}

/// Whether search `tokens` ([`crate::core::security::Principal::search_tokens`]) are those of
/// an anonymous caller, whose visible children [`anonymous_child_count`] counts.
pub fn anonymous_tokens(tokens: &[String]) -> bool {
    matches!(tokens, [t] if t == ANONYMOUS)
}

/// Count again, from the listing copies, how many children of each folder Anonymous may view
/// (every `x:v:` key rewritten): what schema 14 adds to a catalog built before it. Reads the
/// copies `batch` at a time. Returns how many folders have such children.
pub fn count_anonymous_children(ctx: &mut Ctx<'_>, batch: usize) -> Result<usize> {
    ctx.delete_prefix(keys::ANONYMOUS_COUNT_PREFIX)?;
    let prefix = b"x:c:";
    let end = prefix_end(prefix);
    let mut start = prefix.to_vec();
    let mut counts: BTreeMap<String, u64> = BTreeMap::new();
    loop {
        let rows = ctx.scan(&start, &end, Direction::Forward, batch.max(1))?;
        let Some((last, _)) = rows.last() else {
            break;
        };
        start = last.clone();
        start.push(0);
        for (k, v) in &rows {
            if anonymous_sees(v)? {
                let parent = keys::catalog_child_parent(k)
                    .ok_or_else(|| EngineError::Internal("malformed listing copy key".into()))?;
                *counts.entry(parent.to_string()).or_default() += 1;
            }
        }
    }
    for (parent, n) in &counts {
        ctx.put(&keys::catalog_anonymous_count(parent), &n.to_be_bytes())?;
    }
    Ok(counts.len())
}

/// Write the listing copy (`x:c:`) of every catalog entry, `batch` entries per scan: what schema
/// 12 adds to a catalog built before it. Returns how many were written.
pub fn write_listing_copies(ctx: &mut Ctx<'_>, batch: usize) -> Result<usize> {
    let end = prefix_end(b"x:e:");
    let mut start = b"x:e:".to_vec();
    let mut n = 0;
    loop {
        let rows = ctx.scan(&start, &end, Direction::Forward, batch.max(1))?;
        let Some((last, _)) = rows.last() else {
            return Ok(n);
        };
        start = last.clone();
        start.push(0);
        for (_, bytes) in &rows {
            if let Some(slot) = listing_slot(bytes)? {
                put_listing_copy(ctx, &slot, &codec::listing_copy(bytes)?)?;
                n += 1;
            }
        }
    }
}

/// Index the field values schema 13 adds to catalog entries ([`INDEX_FIELDS`], with their
/// field postings) for every object that has one: the others' entries do not change. Returns
/// how many objects were indexed again.
pub fn index_added_fields(ctx: &mut Ctx<'_>) -> Result<usize> {
    let mut n = 0;
    for uid in tree::subtree_uids(ctx, "")? {
        let Some(obj) = tree::load(ctx, &uid)? else {
            continue;
        };
        let has = INDEX_FIELDS
            .iter()
            .any(|f| obj.fields.get(*f).is_some_and(|v| !v.is_null()));
        if has {
            reindex(ctx, &uid)?;
            n += 1;
        }
    }
    Ok(n)
}

/// What an entry's postings are made of, read from its stored form: the subjects (from its
/// fields), the full-text terms and the links.
struct Stored<'a> {
    fields: Map<String, Value>,
    terms: Vec<&'a str>,
    links: Vec<&'a str>,
}

impl<'a> Stored<'a> {
    fn read(bytes: &'a [u8]) -> Result<Self> {
        let mut r = codec::Reader::new(bytes)?;
        r.head()?;
        let rest = r.rest()?;
        Ok(Stored {
            fields: rest.fields,
            terms: r.list()?,
            links: r.list()?,
        })
    }

    fn subjects(&self) -> BTreeSet<&str> {
        match self.fields.get("subjects") {
            Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).collect(),
            _ => BTreeSet::new(),
        }
    }
}

/// Drop the entry, postings and links of `uid`, and the links that point at it.
pub fn unindex(ctx: &mut Ctx<'_>, uid: &str) -> Result<()> {
    let key = keys::catalog_entry(uid);
    if let Some(bytes) = ctx.get(&key)? {
        let old = Stored::read(&bytes)?;
        for s in old.subjects() {
            ctx.delete(&keys::subject_posting(s, uid))?;
        }
        for (index, term) in field_terms(&old.fields) {
            ctx.delete(&keys::field_posting(index, &term, uid))?;
        }
        for t in &old.terms {
            ctx.delete(&keys::text_posting(t, uid))?;
        }
        for t in &old.links {
            ctx.delete(&keys::backlink(t, uid))?;
        }
        if let Some(slot) = listing_slot(&bytes)? {
            drop_listing_copy(ctx, &slot, uid)?;
        }
        ctx.delete(&key)?;
    }
    ctx.delete_prefix(&keys::backlinks_prefix(uid))
}

/// The full-text terms `uid` is indexed under.
fn stored_terms(ctx: &Ctx<'_>, uid: &str) -> Result<Vec<String>> {
    Ok(match ctx.get(&keys::catalog_entry(uid))? {
        Some(b) => Stored::read(&b)?
            .terms
            .into_iter()
            .map(str::to_string)
            .collect(),
        None => Vec::new(),
    })
}

/// The text `SearchableText` indexes: id, title, description, subjects, the rich text without
/// tags, and the text of the blocks.
pub fn searchable_text(obj: &ContentRecord) -> String {
    let mut out = String::new();
    out.push_str(&obj.id);
    for f in ["title", "description"] {
        out.push(' ');
        out.push_str(obj.str_field(f));
    }
    if let Some(Value::Array(subjects)) = obj.fields.get("subjects") {
        for s in subjects.iter().filter_map(Value::as_str) {
            out.push(' ');
            out.push_str(s);
        }
    }
    if let Some(data) = obj
        .fields
        .get("text")
        .and_then(|t| t.get("data"))
        .and_then(Value::as_str)
    {
        out.push(' ');
        out.push_str(&text::strip_tags(data));
    }
    if let Some(Value::Object(blocks)) = obj.fields.get("blocks") {
        for b in blocks.values() {
            match b.get("plaintext").and_then(Value::as_str) {
                Some(t) => {
                    out.push(' ');
                    out.push_str(t);
                }
                None => block_strings(b, &mut out),
            }
        }
    }
    out
}

/// The strings under `text`, `title` and `description` keys of a block, at any depth.
fn block_strings(v: &Value, out: &mut String) {
    match v {
        Value::Object(m) => {
            for (k, v) in m {
                match (k.as_str(), v) {
                    ("text" | "title" | "description", Value::String(s)) => {
                        out.push(' ');
                        out.push_str(s);
                    }
                    _ => block_strings(v, out),
                }
            }
        }
        Value::Array(a) => a.iter().for_each(|v| block_strings(v, out)),
        _ => {}
    }
}

/// The uids `obj` links to: `relatedItems`, `resolveuid/<uid>` anywhere in its blocks and rich
/// text, and internal URLs or paths (`url`, `href`, `@id`, `link` values of blocks; `href`
/// attributes of rich text) that name an existing object.
pub fn links_of(ctx: &Ctx<'_>, obj: &ContentRecord) -> Result<BTreeSet<String>> {
    let mut out = BTreeSet::new();
    let mut paths = Vec::new();
    if let Some(Value::Array(items)) = obj.fields.get("relatedItems") {
        for i in items {
            match i {
                Value::String(s) => {
                    out.insert(s.clone());
                }
                Value::Object(m) => {
                    if let Some(u) = m.get("UID").and_then(Value::as_str) {
                        out.insert(u.to_string());
                    }
                }
                _ => {}
            }
        }
    }
    if let Some(b) = obj.fields.get("blocks") {
        scan_links(b, None, &mut out, &mut paths);
    }
    if let Some(data) = obj
        .fields
        .get("text")
        .and_then(|t| t.get("data"))
        .and_then(Value::as_str)
    {
        resolveuids(data, &mut out);
        let mut rest = data;
        while let Some(i) = rest.find("href=\"") {
            rest = &rest[i + 6..];
            let end = rest.find('"').unwrap_or(rest.len());
            paths.push(rest[..end].to_string());
            rest = &rest[end..];
        }
    }
    for p in paths {
        let p = p.strip_prefix(ctx.base_url.as_str()).unwrap_or(&p);
        if !p.starts_with('/') || p.starts_with("//") {
            continue;
        }
        let p = p
            .split(['?', '#'])
            .next()
            .unwrap_or("")
            .trim_end_matches('/');
        let p = p.split("/@").next().unwrap_or("");
        if let Some(uid) = tree::uid_at(ctx, p)? {
            out.insert(uid);
        }
    }
    out.remove(&obj.uid);
    Ok(out)
}

fn scan_links(v: &Value, key: Option<&str>, uids: &mut BTreeSet<String>, paths: &mut Vec<String>) {
    match v {
        Value::String(s) => {
            resolveuids(s, uids);
            if matches!(key, Some("url" | "href" | "@id" | "link")) {
                paths.push(s.clone());
            }
        }
        Value::Object(m) => m
            .iter()
            .for_each(|(k, v)| scan_links(v, Some(k), uids, paths)),
        Value::Array(a) => a.iter().for_each(|v| scan_links(v, key, uids, paths)),
        _ => {}
    }
}

fn resolveuids(s: &str, out: &mut BTreeSet<String>) {
    let mut rest = s;
    while let Some(i) = rest.find("resolveuid/") {
        rest = &rest[i + "resolveuid/".len()..];
        let end = rest
            .find(|c: char| !c.is_ascii_alphanumeric() && c != '-')
            .unwrap_or(rest.len());
        if end > 0 {
            out.insert(rest[..end].to_string());
        }
        rest = &rest[end..];
    }
}

/// The uids of the objects that link to `target`.
pub fn linking_to(ctx: &Ctx<'_>, target: &str) -> Result<Vec<String>> {
    Ok(ctx
        .scan_prefix(&keys::backlinks_prefix(target))?
        .into_iter()
        .filter_map(|(k, _)| keys::posting_uid(&k).map(str::to_string))
        .collect())
}

/// The `Subject` values of the objects the caller may view, each with how many such objects
/// carry it, in value order (the `plone.app.vocabularies.Keywords` vocabulary).
pub fn keywords(ctx: &Ctx<'_>) -> Result<Vec<(String, usize)>> {
    let tokens = ctx.principal.search_tokens();
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    let mut visible: BTreeMap<String, bool> = BTreeMap::new();
    for (k, _) in ctx.scan_prefix(keys::SUBJECT_PREFIX)? {
        let Some(uid) = keys::posting_uid(&k) else {
            continue;
        };
        let subject_bytes = &k[keys::SUBJECT_PREFIX.len()..k.len() - uid.len() - 1];
        let subject = String::from_utf8_lossy(subject_bytes).into_owned();
        let seen = match visible.get(uid) {
            Some(v) => *v,
            None => {
                let v = entry(ctx, uid)?.is_some_and(|e| e.visible_to(&tokens));
                visible.insert(uid.to_string(), v);
                v
            }
        };
        if seen {
            *counts.entry(subject).or_default() += 1;
        }
    }
    Ok(counts.into_iter().collect())
}

/// How many objects lie below `obj` (its whole subtree without it).
#[cfg(any(test, feature = "internals"))]
pub fn contained_count(ctx: &Ctx<'_>, obj: &ContentRecord) -> Result<usize> {
    Ok(tree::subtree_uids(ctx, &obj.path)?.len().saturating_sub(1))
}

/// The error for a malformed query value: a 400 naming the parameter.
pub fn bad_param(param: &str, detail: impl std::fmt::Display) -> EngineError {
    EngineError::bad_request(format!("Query parameter '{param}': {detail}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::security::Principal;
    use crate::{Engine, EngineOptions, MemStore, SiteSetup};
    use serde_json::json;

    fn engine() -> Engine<MemStore> {
        let e = Engine::new(MemStore::new(), EngineOptions::for_tests()).unwrap();
        e.create_site(&SiteSetup::new("secret")).unwrap();
        e
    }

    fn add(ctx: &mut Ctx<'_>, parent: &str, ty: &str, id: &str, f: Value) -> Result<ContentRecord> {
        let mut p = tree::at_path(ctx, parent)?.expect("parent");
        let t = ctx.types()?.require(ty)?;
        let mut rec = tree::new_record(
            ctx,
            &t,
            id,
            "admin",
            f.as_object().cloned().unwrap_or_default(),
        );
        tree::insert(ctx, &mut p, &mut rec)?;
        Ok(rec)
    }

    /// Every listing copy (`x:c:`) is the copy of an entry at its parent and position, and every
    /// entry with a parent has its copy.
    fn assert_listing_copies(e: &Engine<MemStore>) {
        e.with_write(|ctx| {
            let mut want = BTreeMap::new();
            for (_, bytes) in ctx.scan(b"x:e:", b"x:e;", Direction::Forward, usize::MAX)? {
                if let Some(slot) = listing_slot(&bytes)? {
                    assert!(want.insert(slot, codec::listing_copy(&bytes)?).is_none());
                }
            }
            let have: BTreeMap<Vec<u8>, Vec<u8>> = ctx
                .scan(b"x:c:", b"x:c;", Direction::Forward, usize::MAX)?
                .into_iter()
                .collect();
            assert_eq!(have, want);
            // The copies are the children, at their positions ([`child_copies`] reads them
            // alone).
            let mut children = BTreeSet::new();
            for (_, bytes) in ctx.scan(b"x:e:", b"x:e;", Direction::Forward, usize::MAX)? {
                let parent = codec::entry_uid(&bytes)?.to_string();
                for (pos, uid) in tree::child_slots(ctx, &parent, 0, usize::MAX)? {
                    children.insert((parent.clone(), pos, uid));
                }
            }
            let mut copies = BTreeSet::new();
            for (k, v) in &have {
                let parent = keys::catalog_child_parent(k).expect("a copy's key");
                let pos = keys::child_pos(k).expect("a copy's position");
                copies.insert((parent.to_string(), pos, codec::entry_uid(v)?.to_string()));
                let listed = child_copies(ctx, parent)?;
                assert!(listed.iter().any(|c| c.0 == *v));
            }
            assert_eq!(copies, children);
            // Each folder's anonymous count is the number of its children's copies that
            // Anonymous may view.
            let mut counted: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
            for (k, v) in &have {
                if codec::visible_to(v, &["Anonymous".to_string()])? {
                    let parent = keys::catalog_child_parent(k).expect("a copy's key");
                    let n = counted
                        .entry(keys::catalog_anonymous_count(parent))
                        .or_default();
                    let next = read_count(Some(n.as_slice()).filter(|n| !n.is_empty()))? + 1;
                    *n = next.to_be_bytes().to_vec();
                }
            }
            let stored: BTreeMap<Vec<u8>, Vec<u8>> = ctx
                .scan(b"x:v:", b"x:v;", Direction::Forward, usize::MAX)?
                .into_iter()
                .collect();
            assert_eq!(stored, counted);
            Ok(())
        })
        .unwrap();
    }

    #[test]
    fn listing_copies_follow_creates_reorders_renames_moves_and_deletes() {
        use crate::{Method, Request};
        let e = engine();
        let send = |method: Method, path: &str, body: Option<Value>| {
            let mut r = Request::new(method, path, "http://localhost")
                .header("Authorization", "Basic YWRtaW46c2VjcmV0");
            if let Some(b) = body {
                r = r.json(&b);
            }
            let resp = e.handle(r);
            assert!(
                resp.status < 300,
                "{path}: {}",
                String::from_utf8_lossy(&resp.body)
            );
        };
        for f in ["f", "g"] {
            send(
                Method::Post,
                "/",
                Some(json!({"@type": "Folder", "id": f, "title": f})),
            );
        }
        for p in ["a", "b", "c", "d"] {
            send(
                Method::Post,
                "/f",
                Some(json!({"@type": "Page", "id": p, "title": p})),
            );
        }
        assert_listing_copies(&e);
        send(
            Method::Patch,
            "/f",
            Some(json!({"ordering": {"obj_id": "d", "delta": "top"}})),
        );
        send(
            Method::Patch,
            "/f",
            Some(json!({"ordering": {"obj_id": "a", "delta": 2}})),
        );
        send(
            Method::Patch,
            "/f/b",
            Some(json!({"id": "b2", "title": "B two"})),
        );
        send(Method::Post, "/f/c/@workflow/publish", None);
        assert_listing_copies(&e);
        send(
            Method::Post,
            "/g/@move",
            Some(json!({"source": ["http://localhost/f/a"]})),
        );
        send(Method::Delete, "/f/d", None);
        send(
            Method::Post,
            "/g/@copy",
            Some(json!({"source": ["http://localhost/f"]})),
        );
        assert_listing_copies(&e);
        // What changes who may view a child: publishing, local roles, inheritance, retracting,
        // deleting and restoring; and the migration's recount gives the same counts.
        for p in ["/g/f/b2", "/g/f/c", "/g/a", "/g/f"] {
            send(Method::Post, &format!("{p}/@workflow/publish"), None);
        }
        assert_listing_copies(&e);
        send(
            Method::Post,
            "/g/@sharing",
            Some(json!({"inherit": false, "entries": [
                {"id": "AuthenticatedUsers", "type": "group", "roles": {"Reader": true}}
            ]})),
        );
        send(Method::Post, "/g/f/c/@workflow/retract", None);
        assert_listing_copies(&e);
        send(Method::Delete, "/g/a", None);
        assert_listing_copies(&e);
        e.with_write(|ctx| {
            let before: Vec<_> = ctx.scan(b"x:v:", b"x:v;", Direction::Forward, usize::MAX)?;
            assert!(!before.is_empty());
            count_anonymous_children(ctx, 2)?;
            let after: Vec<_> = ctx.scan(b"x:v:", b"x:v;", Direction::Forward, usize::MAX)?;
            assert_eq!(before, after);
            Ok(())
        })
        .unwrap();
        // The children's entries come from the copies, in folder order, as their own entries.
        e.with_write(|ctx| {
            let f = tree::at_path(ctx, "/f")?.expect("f");
            let kids = child_entries(ctx, &f.uid, 0, usize::MAX)?;
            let ids: Vec<String> = kids
                .iter()
                .map(|(_, e)| e.as_ref().expect("an entry").decode().map(|e| e.id))
                .collect::<Result<_>>()?;
            assert_eq!(ids, ["b2", "c"]);
            for (uid, stored) in kids {
                let stored = stored.expect("an entry");
                assert_eq!(Some(stored.decode()?), entry(ctx, &uid)?);
            }
            assert_eq!(child_entries(ctx, &f.uid, 1, 5)?.len(), 1);
            Ok(())
        })
        .unwrap();
    }

    #[test]
    fn keywords_count_only_what_the_caller_may_view() {
        let e = engine();
        e.with_write(|ctx| {
            let mut a = add(
                ctx,
                "",
                "Page",
                "a",
                json!({"title": "A", "subjects": ["x", "y"]}),
            )?;
            add(
                ctx,
                "",
                "Page",
                "b",
                json!({"title": "B", "subjects": ["x"]}),
            )?;
            a.review_state = Some("published".into());
            tree::save(
                ctx,
                &mut a,
                tree::Change::Transition {
                    transition: "publish".into(),
                    from: "private".into(),
                    to: "published".into(),
                },
            )
        })
        .unwrap();
        e.with_write(|ctx| {
            ctx.principal = Principal::User(crate::core::security::User {
                login: "admin".into(),
                fullname: String::new(),
                roles: vec!["Manager".into()],
                groups: Vec::new(),
            });
            assert_eq!(
                keywords(ctx)?,
                vec![("x".to_string(), 2), ("y".to_string(), 1)]
            );
            ctx.principal = Principal::Anonymous;
            assert_eq!(
                keywords(ctx)?,
                vec![("x".to_string(), 1), ("y".to_string(), 1)]
            );
            Ok(())
        })
        .unwrap();
    }

    #[test]
    fn local_roles_reindex_the_whole_subtree() {
        let e = engine();
        e.with_write(|ctx| {
            add(ctx, "", "Folder", "f", json!({"title": "F"}))?;
            add(ctx, "/f", "Folder", "g", json!({"title": "G"}))?;
            add(ctx, "/f/g", "Page", "p", json!({"title": "P"}))?;
            Ok(())
        })
        .unwrap();
        let uid_p = e
            .with_write(|ctx| Ok(tree::uid_at(ctx, "/f/g/p")?.expect("p")))
            .unwrap();
        e.with_write(|ctx| {
            let mut f = tree::at_path(ctx, "/f")?.expect("f");
            f.local_roles.insert("jane".into(), vec!["Reader".into()]);
            tree::save(ctx, &mut f, tree::Change::LocalRoles)
        })
        .unwrap();
        e.with_write(|ctx| {
            let p = entry(ctx, &uid_p)?.expect("entry");
            assert!(
                p.allowed.contains("user:jane"),
                "{:?}",
                p.allowed.iter().collect::<Vec<_>>()
            );
            Ok(())
        })
        .unwrap();
    }

    #[test]
    fn a_schema_5_catalog_is_rebuilt_binary_by_the_migration() {
        let e = engine();
        let uid = e
            .with_write(|ctx| Ok(add(ctx, "", "Page", "a", json!({"title": "Alpha words"}))?.uid))
            .unwrap();
        // What schema 5 left: JSON entries and the terms lists beside them.
        e.with_write(|ctx| {
            for (k, _) in ctx.scan_prefix(b"x:e:")? {
                ctx.put(&k, br#"{"uid":"old"}"#)?;
            }
            ctx.put(format!("x:t:{uid}").as_bytes(), b"alpha\nword")?;
            ctx.put(keys::SCHEMA, b"5")
        })
        .unwrap();
        e.with_write(|ctx| {
            let report = crate::site::migrations::run(ctx)?;
            assert_eq!(report.to, Some(keys::SCHEMA_VERSION));
            assert_eq!(entry(ctx, &uid)?.expect("rebuilt").path, "/a");
            assert!(ctx.get(format!("x:t:{uid}").as_bytes())?.is_none());
            let a = query_analyzer(ctx)?;
            assert_eq!(text_matches(ctx, &a, "alpha")?.len(), 1);
            Ok(())
        })
        .unwrap();
    }

    /// The uids `q` finds, in order (as admin).
    fn found(ctx: &Ctx<'_>, q: &Query) -> Result<Vec<String>> {
        Ok(search(ctx, q)?.into_iter().map(|e| e.id).collect())
    }

    fn date(s: &str) -> Option<Bound> {
        parse_datetime(s).map(Bound::Date)
    }

    #[test]
    fn event_dates_and_related_items_are_indexed_with_postings_and_migrated() {
        let e = engine();
        let page = e
            .with_write(|ctx| {
                let page = add(ctx, "", "Page", "p", json!({"title": "P"}))?;
                add(
                    ctx,
                    "",
                    "Event",
                    "march",
                    json!({"title": "M", "start": "2026-03-01T09:00:00+00:00",
                           "end": "2026-03-02T09:00:00+00:00", "relatedItems": [page.uid]}),
                )?;
                add(
                    ctx,
                    "",
                    "Event",
                    "may",
                    json!({"title": "May", "start": "2026-05-01T09:00:00+00:00",
                           "end": "2026-05-01T10:00:00+00:00"}),
                )?;
                Ok(page)
            })
            .unwrap();
        let queries = |ctx: &mut Ctx<'_>| -> Result<()> {
            ctx.principal = Principal::User(crate::core::security::User {
                login: "admin".into(),
                fullname: String::new(),
                roles: vec!["Manager".into()],
                groups: Vec::new(),
            });
            let after_april = Query {
                criteria: vec![Criterion::Range(
                    Index::Start,
                    date("2026-04-01T00:00:00Z"),
                    None,
                )],
                ..Query::default()
            };
            assert_eq!(found(ctx, &after_april)?, vec!["may"]);
            let ends_in_march = Query {
                criteria: vec![Criterion::Range(
                    Index::End,
                    date("2026-03-01T00:00:00Z"),
                    date("2026-03-02T09:00:00Z"),
                )],
                ..Query::default()
            };
            assert_eq!(found(ctx, &ends_in_march)?, vec!["march"]);
            let by_start = Query {
                criteria: vec![Criterion::Any(Index::PortalType, vec!["Event".into()])],
                sort: vec![Sort {
                    index: Index::Start,
                    reverse: true,
                }],
                ..Query::default()
            };
            assert_eq!(found(ctx, &by_start)?, vec!["may", "march"]);
            let related = Query {
                criteria: vec![Criterion::Any(Index::RelatedItems, vec![page.uid.clone()])],
                ..Query::default()
            };
            assert_eq!(found(ctx, &related)?, vec!["march"]);
            Ok(())
        };
        e.with_write(queries).unwrap();
        // What schema 12 left: entries without those values, no field postings.
        e.with_write(|ctx| {
            ctx.delete_prefix(b"x:i:")?;
            for (k, bytes) in ctx.scan_prefix(b"x:e:")? {
                let stored = Stored::read(&bytes)?;
                let mut old = Entry::decode(&bytes)?;
                for f in INDEX_FIELDS {
                    old.fields.remove(*f);
                }
                let terms = stored.terms.clone();
                let links = stored.links.clone();
                ctx.put(&k, &old.encode(terms.into_iter(), links.into_iter()))?;
            }
            ctx.put(keys::SCHEMA, b"12")
        })
        .unwrap();
        e.with_write(|ctx| {
            assert!(ctx.scan_prefix(b"x:i:")?.is_empty());
            let report = crate::site::migrations::run(ctx)?;
            assert_eq!(report.to, Some(keys::SCHEMA_VERSION));
            assert_eq!(ctx.scan_prefix(b"x:i:")?.len(), 5);
            Ok(())
        })
        .unwrap();
        e.with_write(queries).unwrap();
        // Moved and removed with the object.
        e.with_write(|ctx| {
            let mut may = tree::at_path(ctx, "/may")?.expect("may");
            may.fields
                .insert("start".into(), json!("2026-02-01T09:00:00+00:00"));
            tree::save(
                ctx,
                &mut may,
                tree::Change::Edit {
                    fields: vec!["start".into()],
                    change_note: None,
                },
            )?;
            let march = tree::at_path(ctx, "/march")?.expect("march");
            unindex(ctx, &march.uid)?;
            Ok(may)
        })
        .and_then(|may| {
            e.with_write(|ctx| {
                let keys: Vec<Vec<u8>> = ctx
                    .scan_prefix(b"x:i:")?
                    .into_iter()
                    .map(|(k, _)| k)
                    .collect();
                assert_eq!(
                    keys,
                    vec![
                        keys::field_posting(
                            "end",
                            &date_term(&parse_datetime("2026-05-01T10:00:00Z").unwrap()),
                            &may.uid
                        ),
                        keys::field_posting(
                            "start",
                            &date_term(&parse_datetime("2026-02-01T09:00:00Z").unwrap()),
                            &may.uid
                        ),
                    ]
                );
                Ok(())
            })
        })
        .unwrap();
    }

    #[test]
    fn effective_range_holds_dates_from_effective_to_before_expires() {
        let e = engine();
        e.with_write(|ctx| {
            add(ctx, "", "Page", "always", json!({"title": "A"}))?;
            add(
                ctx,
                "",
                "Page",
                "window",
                json!({"title": "W", "effective": "2026-01-01T00:00:00+00:00",
                       "expires": "2026-02-01T00:00:00+00:00"}),
            )?;
            Ok(())
        })
        .unwrap();
        e.with_write(|ctx| {
            ctx.principal = Principal::User(crate::core::security::User {
                login: "admin".into(),
                fullname: String::new(),
                roles: vec!["Manager".into()],
                groups: Vec::new(),
            });
            let at = |d: &str| Query {
                criteria: vec![
                    Criterion::Any(Index::PortalType, vec!["Page".into()]),
                    Criterion::Holds(Index::EffectiveRange, parse_datetime(d).expect("date")),
                ],
                show_inactive: true,
                ..Query::default()
            };
            assert_eq!(found(ctx, &at("2025-12-31T23:59:59Z"))?, vec!["always"]);
            assert_eq!(
                found(ctx, &at("2026-01-01T00:00:00Z"))?,
                vec!["always", "window"]
            );
            assert_eq!(found(ctx, &at("2026-02-01T00:00:00Z"))?, vec!["always"]);
            Ok(())
        })
        .unwrap();
    }

    #[test]
    fn frequent_words_are_checked_per_candidate() {
        let e = engine();
        e.with_write(|ctx| {
            for i in 0..(FREQUENT + 10) {
                let mut extra = if i % 1000 == 7 { " rare" } else { "" }.to_string();
                if i >= 8 {
                    extra.push_str(" often");
                }
                add(
                    ctx,
                    "",
                    "Page",
                    &format!("p{i}"),
                    json!({"title": format!("common{extra}")}),
                )?;
            }
            Ok(())
        })
        .unwrap();
        e.with_write(|ctx| {
            let a = query_analyzer(ctx)?;
            assert_eq!(text_matches(ctx, &a, "common rare")?.len(), 3);
            assert_eq!(text_matches(ctx, &a, "rare common")?.len(), 3);
            assert_eq!(text_matches(ctx, &a, "common")?.len(), FREQUENT + 10);
            assert_eq!(text_matches(ctx, &a, "comm* rar*")?.len(), 3);
            // Both words frequent: the rarer one gives the candidates, whatever the order.
            assert_eq!(text_matches(ctx, &a, "common often")?.len(), FREQUENT + 2);
            assert_eq!(text_matches(ctx, &a, "often common")?.len(), FREQUENT + 2);
            Ok(())
        })
        .unwrap();
    }
}
