//! Listing summaries written as JSON straight from stored catalog entries (search results and
//! folder listings): the same text `serde_json` writes for [`super::serialize::summary`] of the
//! entry's record (keys in sorted order, as a `serde_json` map has them), without decoding the
//! entry into owned values, building a map of values per item or walking it again to write it.

use std::cell::RefCell;
use std::sync::Arc;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::catalog::codec::{Known, Raw, Time, ValueRef, View};
use crate::core::error::Result;
use crate::core::model::ContentType;
use crate::runtime::context::Ctx;

/// Catalog metadata names `metadata_fields=_all` expands to.
pub const CATALOG_FIELDS: &[&str] = &[
    "@id",
    "@type",
    "title",
    "Title",
    "Description",
    "UID",
    "path",
    "Subject",
    "is_folderish",
    "exclude_from_nav",
    "Type",
    "portal_type",
    "getId",
    "id",
    "Creator",
    "listCreators",
    "review_state",
    "created",
    "modified",
    "effective",
    "expires",
    "Date",
    "CreationDate",
    "EffectiveDate",
    "ExpirationDate",
    "ModificationDate",
    "getObjSize",
    "mime_type",
    "image_field",
    "image_scales",
    "hasPreviewImage",
];

/// The metadata name of an object's Markdown (Nick's catalog column; asked for by name).
pub const MARKDOWN: &str = "markdown";

/// The keys of the summaries of one answer, sorted and without repeats. Computed once per
/// answer. Every item has `review_state`, `null` for an object without a workflow, as Plone's
/// catalog brains do. Each key is also kept as the column it writes and the text that starts
/// its entry (`"key":`, after a comma but for the first), so writing an item neither compares
/// key names nor escapes them.
pub struct ItemKeys<'a> {
    with_state: Vec<&'a str>,
    cols: Vec<(Col, Box<[u8]>)>,
    /// The types the answer's items have had so far, with their titles in the request's
    /// language ([`ItemKeys::type_of`]): looked up once per answer, not once per item.
    types: RefCell<Vec<AnswerType>>,
}

/// A type met in an answer: its name, the type, its title in the request's language.
type AnswerType = (String, Arc<ContentType>, Arc<str>);

impl<'a> ItemKeys<'a> {
    /// The keys of summaries with `metadata_fields` `fields`.
    pub fn new(fields: &[&'a str]) -> Self {
        let mut keys: Vec<&'a str> = vec!["@id", "@type", "description", "title", "type_title"];
        let wanted: Vec<&'a str> = if fields.contains(&"_all") {
            CATALOG_FIELDS.to_vec()
        } else {
            fields.to_vec()
        };
        for name in wanted {
            if CATALOG_FIELDS.contains(&name) || name == "description" || name == MARKDOWN {
                keys.push(name);
            }
        }
        keys.push("review_state");
        keys.sort_unstable();
        keys.dedup();
        let cols = keys
            .iter()
            .enumerate()
            .map(|(i, k)| {
                let mut head = Vec::with_capacity(k.len() + 4);
                if i > 0 {
                    head.push(b',');
                }
                head.push(b'"');
                head.extend_from_slice(k.as_bytes());
                head.extend_from_slice(b"\":");
                (Col::of(k), head.into_boxed_slice())
            })
            .collect();
        ItemKeys {
            with_state: keys,
            cols,
            types: RefCell::new(Vec::new()),
        }
    }

    /// The type `name` and its title in the request's language
    /// ([`crate::site::i18n::Translator`]), found once per answer.
    fn type_of(&self, ctx: &Ctx<'_>, name: &str) -> Result<(Arc<ContentType>, Arc<str>)> {
        if let Some((_, ty, title)) = self.types.borrow().iter().find(|(n, ..)| n == name) {
            return Ok((ty.clone(), title.clone()));
        }
        let ty = ctx.types()?.require(name)?;
        let title: Arc<str> = crate::site::i18n::Translator::for_request(ctx)?
            .t(&ty.title)
            .into();
        self.types
            .borrow_mut()
            .push((name.to_string(), ty.clone(), title.clone()));
        Ok((ty, title))
    }

    /// Whether the summaries show the object's Markdown (read from the object itself).
    #[cfg(any(test, feature = "internals"))]
    pub fn markdown(&self) -> bool {
        self.with_state.contains(&MARKDOWN)
    }
}

/// What one key of a summary writes ([`ItemJson::write`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Col {
    Url,
    TypeName,
    Title,
    Description,
    TypeTitle,
    ReviewState,
    Uid,
    Path,
    Subject,
    IsFolderish,
    ExcludeFromNav,
    Id,
    Creator,
    ListCreators,
    Created,
    Modified,
    Effective,
    EffectiveDate,
    Expires,
    ExpirationDate,
    ObjSize,
    MimeType,
    ImageField,
    ImageScales,
    HasPreviewImage,
    Markdown,
    Null,
}

/// Columns that write the same text under several keys ([`Col::twin`]): written once per item,
/// copied for the others.
const TWINS: usize = 8;

impl Col {
    fn of(k: &str) -> Col {
        match k {
            "@id" => Col::Url,
            "@type" | "Type" | "portal_type" => Col::TypeName,
            "title" | "Title" => Col::Title,
            "description" | "Description" => Col::Description,
            "type_title" => Col::TypeTitle,
            "review_state" => Col::ReviewState,
            "UID" => Col::Uid,
            "path" => Col::Path,
            "Subject" => Col::Subject,
            "is_folderish" => Col::IsFolderish,
            "exclude_from_nav" => Col::ExcludeFromNav,
            "getId" | "id" => Col::Id,
            "Creator" => Col::Creator,
            "listCreators" => Col::ListCreators,
            "created" | "CreationDate" => Col::Created,
            "modified" | "ModificationDate" | "Date" => Col::Modified,
            "effective" => Col::Effective,
            "EffectiveDate" => Col::EffectiveDate,
            "expires" => Col::Expires,
            "ExpirationDate" => Col::ExpirationDate,
            "getObjSize" => Col::ObjSize,
            "mime_type" => Col::MimeType,
            "image_field" => Col::ImageField,
            "image_scales" => Col::ImageScales,
            "hasPreviewImage" => Col::HasPreviewImage,
            MARKDOWN => Col::Markdown,
            _ => Col::Null,
        }
    }

    /// The slot of a column whose text another key repeats: the text of a type name, title,
    /// description, id, creation and modification time is the same under each of its keys;
    /// `effective` and `EffectiveDate` (`expires`, `ExpirationDate`) write the same text when
    /// the date is set (only then is the slot filled).
    fn twin(self) -> Option<usize> {
        Some(match self {
            Col::TypeName => 0,
            Col::Title => 1,
            Col::Description => 2,
            Col::Id => 3,
            Col::Created => 4,
            Col::Modified => 5,
            Col::Effective | Col::EffectiveDate => 6,
            Col::Expires | Col::ExpirationDate => 7,
            _ => return None,
        })
    }
}

/// One summary, ready to be written ([`ItemJson::write`]).
pub struct ItemJson<'a> {
    v: View<'a>,
    known: Known<'a>,
    url: String,
    /// Its type, shared with the cached registry (folderishness read from it).
    ty: Arc<ContentType>,
    /// Its type's title in the request's language ([`crate::site::i18n::Translator`]).
    type_title: Arc<str>,
    keys: &'a [(Col, Box<[u8]>)],
    /// The object's blocks as Markdown, when the keys name `markdown` (read from the object
    /// itself: the catalog entry does not hold the blocks).
    markdown: Option<String>,
    /// The entry's fields whose values are objects (the stored files and images), as values:
    /// what `getObjSize`, `mime_type` and the image columns read. Empty for most items.
    files: Map<String, Value>,
}

impl<'a> ItemJson<'a> {
    /// The summary of the entry `v` with `keys`.
    pub fn new(ctx: &Ctx<'_>, v: View<'a>, keys: &'a ItemKeys<'a>) -> Result<Self> {
        let (ty, type_title) = keys.type_of(ctx, v.type_name)?;
        let markdown = if keys.with_state.contains(&MARKDOWN) {
            let rec = crate::content::tree::load(ctx, v.uid)?;
            Some(
                rec.map(|r| crate::content::exports::markdown(&r))
                    .unwrap_or_default(),
            )
        } else {
            None
        };
        let known = v.fields.known();
        let files = if known.objects {
            v.fields.objects()
        } else {
            Map::new()
        };
        let mut url = String::with_capacity(ctx.base_url.len() + v.head.path.len());
        url.push_str(&ctx.base_url);
        url.push_str(v.head.path);
        Ok(ItemJson {
            url,
            type_title,
            v,
            known,
            ty,
            keys: &keys.cols,
            markdown,
            files,
        })
    }

    /// Write the summary as a JSON object.
    pub fn write(&self, out: &mut JsonOut) -> serde_json::Result<()> {
        let v = &self.v;
        let f = &self.known;
        let files = !self.files.is_empty();
        // Where in `out` each twin column's text was written for this item (empty: not yet).
        let mut twins = [(0usize, 0usize); TWINS];
        out.open();
        for (col, head) in self.keys {
            out.buf.extend_from_slice(head);
            let twin = col.twin();
            if let Some(t) = twin {
                let (from, to) = twins[t];
                if to > from {
                    out.buf.extend_from_within(from..to);
                    continue;
                }
            }
            let start = out.buf.len();
            // Whether what was written may stand for the twin columns too.
            let mut same = true;
            match col {
                Col::Url => out.string(&self.url)?,
                Col::TypeName => out.string(v.type_name)?,
                Col::Title => out.string(str_of(f.title))?,
                Col::Description => out.string(str_of(f.description))?,
                Col::TypeTitle => out.string(&self.type_title)?,
                Col::ReviewState => match v.review_state {
                    Some(s) => out.string(s)?,
                    None => out.null(),
                },
                Col::Uid => out.string(v.uid)?,
                Col::Path => out.string(if v.head.path.is_empty() {
                    "/"
                } else {
                    v.head.path
                })?,
                Col::Subject => out.opt_raw(f.subjects)?,
                Col::IsFolderish => out.bool(self.ty.folderish),
                Col::ExcludeFromNav => out.opt_raw(f.exclude_from_nav)?,
                Col::Id => out.string(v.id)?,
                Col::Creator => match f.creators.map(|c| c.get()) {
                    Some(ValueRef::Array(mut items)) => match items.next() {
                        Some(first) => out.raw(first)?,
                        None => out.string(v.owner)?,
                    },
                    _ => out.string(v.owner)?,
                },
                Col::ListCreators => match f.creators {
                    Some(c) => out.raw(c)?,
                    None => {
                        out.buf.push(b'[');
                        out.string(v.owner)?;
                        out.buf.push(b']');
                    }
                },
                Col::Created => out.time(v.created)?,
                Col::Modified => out.time(v.modified)?,
                Col::Effective | Col::Expires => {
                    out.opt_raw(if *col == Col::Effective {
                        f.effective
                    } else {
                        f.expires
                    })?;
                    same = out.buf[start..] != *b"null";
                }
                Col::EffectiveDate | Col::ExpirationDate => {
                    let date = if *col == Col::EffectiveDate {
                        f.effective
                    } else {
                        f.expires
                    };
                    match date {
                        Some(r) => out.raw(r)?,
                        None => out.null(),
                    }
                    if out.buf[start..] == *b"null" {
                        out.buf.truncate(start);
                        out.string("None")?;
                        same = false;
                    }
                }
                Col::ObjSize => match self.primary_file() {
                    Some(file) => out.value(&file.size)?,
                    None => out.value(&v.size)?,
                },
                Col::MimeType => match self.primary_file() {
                    Some(file) => out.string(&file.content_type)?,
                    None => out.string("text/plain")?,
                },
                Col::ImageField => match files
                    .then(|| super::file_fields::image_field(&self.ty, &self.files))
                    .flatten()
                {
                    Some(name) => out.string(&name)?,
                    None => out.string("")?,
                },
                Col::ImageScales => {
                    if files {
                        out.value(&super::file_fields::image_scales(&self.ty, &self.files))?
                    } else {
                        out.buf.extend_from_slice(b"{}")
                    }
                }
                Col::HasPreviewImage => out.bool(
                    files && super::file_fields::image_field(&self.ty, &self.files).is_some(),
                ),
                Col::Markdown => out.string(self.markdown.as_deref().unwrap_or(""))?,
                Col::Null => out.null(),
            }
            if let (Some(t), true) = (twin, same) {
                twins[t] = (start, out.buf.len());
            }
        }
        out.close();
        Ok(())
    }

    fn primary_file(&self) -> Option<crate::content::files::StoredFile> {
        if self.files.is_empty() {
            return None;
        }
        super::file_fields::primary_file(&self.ty, &self.files)
    }

    /// The summary as a value (for answers built as values).
    pub fn to_value(&self) -> Result<Value> {
        let mut out = JsonOut::new(1024);
        self.write(&mut out)?;
        Ok(serde_json::from_slice(&out.buf)?)
    }
}

/// The string in `r` (`""` when unset or not a string).
fn str_of(r: Option<Raw<'_>>) -> &str {
    r.and_then(|r| r.as_str()).unwrap_or("")
}

/// Writes JSON straight into bytes: the same text `serde_json` writes (compact), with strings
/// that need no escaping copied as they are (most keys and values).
pub struct JsonOut {
    /// The text so far.
    pub buf: Vec<u8>,
    first: bool,
}

impl JsonOut {
    /// An empty writer with room for `capacity` bytes.
    pub fn new(capacity: usize) -> Self {
        JsonOut {
            buf: Vec::with_capacity(capacity),
            first: true,
        }
    }

    /// A string value.
    pub fn string(&mut self, s: &str) -> serde_json::Result<()> {
        write_string(&mut self.buf, s)
    }

    /// The key of the next entry of the open object: a name that needs no escaping (the
    /// summaries' fixed names; [`JsonOut::any_key`] for others).
    pub fn key(&mut self, k: &str) {
        if !self.first {
            self.buf.push(b',');
        }
        self.first = false;
        self.buf.reserve(k.len() + 3);
        self.buf.push(b'"');
        self.buf.extend_from_slice(k.as_bytes());
        self.buf.extend_from_slice(b"\":");
    }

    /// The key of the next entry of the open object, escaped as needed.
    pub fn any_key(&mut self, k: &str) -> serde_json::Result<()> {
        if !self.first {
            self.buf.push(b',');
        }
        self.first = false;
        self.string(k)?;
        self.buf.push(b':');
        Ok(())
    }

    /// `{`.
    pub fn open(&mut self) {
        self.buf.push(b'{');
        self.first = true;
    }

    /// `}`.
    pub fn close(&mut self) {
        self.buf.push(b'}');
        self.first = false;
    }

    /// A stored time as an ISO 8601 string ([`super::time::iso`]).
    pub fn time(&mut self, t: Time) -> serde_json::Result<()> {
        IsoTime::of(t)?.write(&mut self.buf)
    }

    /// `null`.
    pub fn null(&mut self) {
        self.buf.extend_from_slice(b"null");
    }

    /// A boolean.
    pub fn bool(&mut self, b: bool) {
        self.buf
            .extend_from_slice(if b { b"true" as &[u8] } else { b"false" });
    }

    /// Any value, as `serde_json` writes it.
    pub fn value<T: Serialize + ?Sized>(&mut self, v: &T) -> serde_json::Result<()> {
        serde_json::to_writer(&mut self.buf, v)
    }

    /// A JSON value, as `serde_json` writes it ([`write_value`]).
    pub fn json(&mut self, v: &Value) -> serde_json::Result<()> {
        write_value(&mut self.buf, v)
    }

    /// A stored value ([`Raw`]), or `null`.
    pub fn opt_raw(&mut self, v: Option<Raw<'_>>) -> serde_json::Result<()> {
        match v {
            Some(v) => self.raw(v),
            None => {
                self.null();
                Ok(())
            }
        }
    }

    /// A stored value, as `serde_json` writes the value it decodes to.
    pub fn raw(&mut self, v: Raw<'_>) -> serde_json::Result<()> {
        write_raw(&mut self.buf, v)
    }
}

/// A stored value ([`Raw`]) into `buf`, as `serde_json` writes the value it decodes to (strings
/// by [`write_string`]), without decoding it.
pub fn write_raw(buf: &mut Vec<u8>, v: Raw<'_>) -> serde_json::Result<()> {
    match v.get() {
        ValueRef::Null => buf.extend_from_slice(b"null"),
        ValueRef::Bool(b) => buf.extend_from_slice(if b { b"true" } else { b"false" }),
        ValueRef::U64(n) => serde_json::to_writer(&mut *buf, &n)?,
        ValueRef::I64(n) => serde_json::to_writer(&mut *buf, &n)?,
        ValueRef::F64(n) => serde_json::to_writer(&mut *buf, &n)?,
        ValueRef::Str(s) => write_string(buf, s)?,
        ValueRef::Array(items) => {
            buf.push(b'[');
            for (i, item) in items.enumerate() {
                if i > 0 {
                    buf.push(b',');
                }
                write_raw(buf, item)?;
            }
            buf.push(b']');
        }
        ValueRef::Object(entries) => {
            buf.push(b'{');
            for (i, (k, item)) in entries.enumerate() {
                if i > 0 {
                    buf.push(b',');
                }
                write_string(buf, k)?;
                buf.push(b':');
                write_raw(buf, item)?;
            }
            buf.push(b'}');
        }
    }
    Ok(())
}

/// `v` into `buf`: the text `serde_json` writes for it (compact, object keys in the map's
/// order), with strings that need no escaping copied as they are ([`write_string`]).
pub fn write_value(buf: &mut Vec<u8>, v: &Value) -> serde_json::Result<()> {
    match v {
        Value::Null => buf.extend_from_slice(b"null"),
        Value::Bool(b) => buf.extend_from_slice(if *b { b"true" } else { b"false" }),
        Value::Number(n) => serde_json::to_writer(&mut *buf, n)?,
        Value::String(s) => write_string(buf, s)?,
        Value::Array(items) => {
            buf.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    buf.push(b',');
                }
                write_value(buf, item)?;
            }
            buf.push(b']');
        }
        Value::Object(entries) => {
            buf.push(b'{');
            for (i, (k, item)) in entries.iter().enumerate() {
                if i > 0 {
                    buf.push(b',');
                }
                write_string(buf, k)?;
                buf.push(b':');
                write_value(buf, item)?;
            }
            buf.push(b'}');
        }
    }
    Ok(())
}

/// A stored time as [`super::time::iso`] writes it, formatted once for writing it several times.
pub enum IsoTime {
    /// The common form ([`super::time::iso_bytes`]).
    Short([u8; 25]),
    /// Any other ([`crate::core::clock::iso`]).
    Long(String),
}

impl IsoTime {
    /// `t` formatted.
    pub fn of(t: Time) -> serde_json::Result<Self> {
        if let Some(b) = super::time::iso_bytes(t.secs, t.nanos) {
            return Ok(IsoTime::Short(b));
        }
        match t.datetime() {
            Some(d) => Ok(IsoTime::Long(crate::core::clock::iso(&d))),
            None => Err(serde::ser::Error::custom("a time out of range")),
        }
    }

    /// As a JSON string into `buf`.
    pub fn write(&self, buf: &mut Vec<u8>) -> serde_json::Result<()> {
        match self {
            IsoTime::Short(b) => {
                buf.reserve(27);
                buf.push(b'"');
                buf.extend_from_slice(b);
                buf.push(b'"');
                Ok(())
            }
            IsoTime::Long(s) => write_string(buf, s),
        }
    }
}

/// `s` as a JSON string into `buf`: copied as is when nothing in it needs escaping, else as
/// serde_json escapes it (the same bytes either way).
pub fn write_string(buf: &mut Vec<u8>, s: &str) -> serde_json::Result<()> {
    if needs_escape(s.as_bytes()) {
        return serde_json::to_writer(buf, s);
    }
    buf.reserve(s.len() + 2);
    buf.push(b'"');
    buf.extend_from_slice(s.as_bytes());
    buf.push(b'"');
    Ok(())
}

/// Whether a JSON string needs escapes (a control character, `"` or `\\`), eight bytes at a time.
pub fn needs_escape(b: &[u8]) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    // A byte of `x` is below `n` (n <= 128) / zero: the classic word-at-a-time tests.
    let below = |x: u64, n: u64| x.wrapping_sub(ONES * n) & !x & HIGH != 0;
    let mut chunks = b.chunks_exact(8);
    for c in &mut chunks {
        let x = <[u8; 8]>::try_from(c).map_or(0, u64::from_le_bytes);
        if below(x, 0x20)
            || below(x ^ (ONES * u64::from(b'"')), 1)
            || below(x ^ (ONES * u64::from(b'\\')), 1)
        {
            return true;
        }
    }
    chunks
        .remainder()
        .iter()
        .any(|&b| b < 0x20 || b == b'"' || b == b'\\')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn needs_escape_finds_every_escaped_byte_anywhere() {
        let base = "abcdefghijklmnopqrstuvwxyz é";
        assert!(!needs_escape(base.as_bytes()));
        for bad in ['"', '\\', '\n', '\u{1}', '\u{1f}'] {
            for at in 0..base.len() {
                if !base.is_char_boundary(at) {
                    continue;
                }
                let mut s = base.to_string();
                s.insert(at, bad);
                assert!(needs_escape(s.as_bytes()), "{s:?}");
            }
        }
        assert!(!needs_escape("\u{7f}\u{80}~ !#".as_bytes()));
    }
}
