//! The stored form of a catalog entry (`x:e:<uid>`): a compact binary encoding read far more
//! often than it is written (every search reads the entries of its candidates).
//!
//! JSON made a folder listing spend most of its time parsing entries (escapes, UTF-8 checks,
//! dates as text). Here strings are length-prefixed, numbers are varints, dates are seconds and
//! nanoseconds, and the fields a search filters on come first ([`Head`]: `allowedRolesAndUsers`,
//! path, position, effective and expiration dates), so a candidate is judged by reading those
//! few values without allocating, and only the entries of the requested batch are decoded whole.
//!
//! Layout (version byte [`VERSION`] first):
//!
//! ```text
//! head:  allowed (count, strings) · path · pos · effective (optional time) · expires (optional time)
//! rest:  uid · id · parent (optional string) · type · created · modified · owner ·
//!        review_state (optional string) · folderish (byte) · size · fields (map of values) ·
//!        terms (count, strings) · links (count, strings)
//! ```
//!
//! A string is a varint length and UTF-8 bytes; a time is a zigzag varint of seconds since the
//! epoch and a varint of nanoseconds; an optional value is a byte 0 (absent) or 1 and the value;
//! a JSON value (the listing fields) is a tag byte and its content. An entry written as JSON by
//! schema 5 (first byte `{`) is not read: the migration to schema 6 rebuilds the catalog.

use chrono::{DateTime, Utc};
use serde::{Serialize, Serializer};
use serde_json::{Map, Number, Value};

use crate::core::error::{EngineError, Result};

/// The first byte of an entry in this encoding (the JSON entries of schema 5 start with `{`).
pub const VERSION: u8 = 0xC1;

/// The values a search filters and orders on, read from the front of a stored entry without
/// allocating.
pub struct Head<'a> {
    allowed: &'a [u8],
    /// Site path.
    pub path: &'a str,
    /// Position in the parent.
    pub pos: u64,
    /// Effective date (parsed from the `effective` field).
    pub effective: Option<DateTime<Utc>>,
    /// Expiration date (parsed from the `expires` field).
    pub expires: Option<DateTime<Utc>>,
}

impl<'a> Head<'a> {
    /// `allowedRolesAndUsers`, as stored (a list, see [`list_items`]).
    pub fn allowed_raw(&self) -> &'a [u8] {
        self.allowed
    }

    /// Whether a caller with `tokens` may view the object.
    #[cfg(any(test, feature = "internals"))]
    pub fn visible_to(&self, tokens: &[String]) -> bool {
        list_items(self.allowed).any(|a| tokens.iter().any(|t| t.as_bytes() == a))
    }

    /// Whether the object is active at `now`.
    #[cfg(any(test, feature = "internals"))]
    pub fn active_at(&self, now: DateTime<Utc>) -> bool {
        self.effective.is_none_or(|e| e <= now) && self.expires.is_none_or(|x| x > now)
    }
}

/// A stored time, not yet made a [`DateTime`] (seconds since the epoch and nanoseconds).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Time {
    /// Seconds since the epoch.
    pub secs: i64,
    /// Nanoseconds.
    pub nanos: u32,
}

impl Time {
    /// `t` as stored.
    pub fn of(t: &DateTime<Utc>) -> Time {
        Time {
            secs: t.timestamp(),
            nanos: t.timestamp_subsec_nanos(),
        }
    }

    /// As a date and time (`None` when out of range).
    pub fn datetime(&self) -> Option<DateTime<Utc>> {
        DateTime::from_timestamp(self.secs, self.nanos)
    }
}

/// The values a search filters on, read from the front of a stored entry without allocating
/// or building dates ([`Head`] with its dates as stored).
pub struct LightHead<'a> {
    allowed: &'a [u8],
    /// Site path.
    pub path: &'a str,
    /// Position in the parent.
    pub pos: u64,
    /// Effective date.
    pub effective: Option<Time>,
    /// Expiration date.
    pub expires: Option<Time>,
}

impl LightHead<'_> {
    /// Whether a caller with `tokens` may view the object.
    pub fn visible_to(&self, tokens: &[String]) -> bool {
        list_items(self.allowed).any(|a| tokens.iter().any(|t| t.as_bytes() == a))
    }

    /// Whether the object is active at `now` (as [`Head::active_at`]: the same order, compared
    /// as stored).
    pub fn active_at(&self, now: DateTime<Utc>) -> bool {
        let now = Time::of(&now);
        self.effective.is_none_or(|e| e <= now) && self.expires.is_none_or(|x| x > now)
    }
}

/// The light head of a stored entry.
pub fn light_head(bytes: &[u8]) -> Result<LightHead<'_>> {
    let mut r = Reader::new(bytes)?;
    Ok(LightHead {
        allowed: r.list_raw()?,
        path: r.str()?,
        pos: r.varint()?,
        effective: r.opt_raw_time()?,
        expires: r.opt_raw_time()?,
    })
}

/// The items of a stored list of strings (a count, then each string), as bytes. The list was
/// checked when it was read ([`Reader`]); a malformed one ends early.
pub fn list_items(raw: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut r = Reader { b: raw, i: 0 };
    let n = r.varint().unwrap_or(0);
    (0..n).map_while(move |_| {
        let len = r.len().ok()?;
        let item = &r.b[r.i..r.i + len];
        r.i += len;
        Some(item)
    })
}

/// The parts of an entry after its head, as stored.
pub struct Rest {
    /// Uid.
    pub uid: String,
    /// Id.
    pub id: String,
    /// Parent's uid.
    pub parent: Option<String>,
    /// Type name.
    pub type_name: String,
    /// Creation time.
    pub created: DateTime<Utc>,
    /// Modification time.
    pub modified: DateTime<Utc>,
    /// Owner.
    pub owner: String,
    /// Workflow state.
    pub review_state: Option<String>,
    /// Folderish.
    pub folderish: bool,
    /// `getObjSize`.
    pub size: usize,
    /// The listing fields.
    pub fields: Map<String, Value>,
}

// ---------------------------------------------------------------------------------------------
// Writing

/// Builds an encoded entry.
pub struct Writer(Vec<u8>);

impl Writer {
    /// A writer with the version byte written.
    pub fn new() -> Self {
        let mut v = Vec::with_capacity(512);
        v.push(VERSION);
        Writer(v)
    }

    /// A writer without the version byte (for a part of an entry kept apart).
    pub fn bare() -> Self {
        Writer(Vec::new())
    }

    /// Bytes written by another writer.
    pub fn raw(&mut self, bytes: &[u8]) {
        self.0.extend_from_slice(bytes);
    }

    /// The bytes.
    pub fn finish(self) -> Vec<u8> {
        self.0
    }

    /// An unsigned integer.
    pub fn varint(&mut self, mut n: u64) {
        while n >= 0x80 {
            self.0.push((n as u8) | 0x80);
            n >>= 7;
        }
        self.0.push(n as u8);
    }

    /// A zigzag varint.
    pub fn zigzag(&mut self, n: i64) {
        self.varint(((n << 1) ^ (n >> 63)) as u64);
    }

    /// A byte.
    pub fn byte(&mut self, b: u8) {
        self.0.push(b);
    }

    /// A string.
    pub fn str(&mut self, s: &str) {
        self.varint(s.len() as u64);
        self.0.extend_from_slice(s.as_bytes());
    }

    /// An optional string.
    pub fn opt_str(&mut self, s: Option<&str>) {
        match s {
            None => self.byte(0),
            Some(s) => {
                self.byte(1);
                self.str(s);
            }
        }
    }

    /// A list of strings.
    pub fn strs<'s>(&mut self, items: impl ExactSizeIterator<Item = &'s str>) {
        self.varint(items.len() as u64);
        for s in items {
            self.str(s);
        }
    }

    /// A time.
    pub fn time(&mut self, t: &DateTime<Utc>) {
        self.zigzag(t.timestamp());
        self.varint(u64::from(t.timestamp_subsec_nanos()));
    }

    /// An optional time.
    pub fn opt_time(&mut self, t: Option<&DateTime<Utc>>) {
        match t {
            None => self.byte(0),
            Some(t) => {
                self.byte(1);
                self.time(t);
            }
        }
    }

    /// A JSON value.
    pub fn value(&mut self, v: &Value) {
        match v {
            Value::Null => self.byte(0),
            Value::Bool(false) => self.byte(1),
            Value::Bool(true) => self.byte(2),
            Value::Number(n) => {
                if let Some(u) = n.as_u64() {
                    self.byte(3);
                    self.varint(u);
                } else if let Some(i) = n.as_i64() {
                    self.byte(4);
                    self.zigzag(i);
                } else {
                    self.byte(5);
                    self.0
                        .extend_from_slice(&n.as_f64().unwrap_or(0.0).to_le_bytes());
                }
            }
            Value::String(s) => {
                self.byte(6);
                self.str(s);
            }
            Value::Array(a) => {
                self.byte(7);
                self.varint(a.len() as u64);
                a.iter().for_each(|x| self.value(x));
            }
            Value::Object(m) => {
                self.byte(8);
                self.map(m);
            }
        }
    }

    /// A JSON object.
    pub fn map(&mut self, m: &Map<String, Value>) {
        self.varint(m.len() as u64);
        for (k, v) in m {
            self.str(k);
            self.value(v);
        }
    }
}

impl Default for Writer {
    fn default() -> Self {
        Self::new()
    }
}

// ---------------------------------------------------------------------------------------------
// Reading

fn corrupt(what: &str) -> EngineError {
    EngineError::Internal(format!("catalog entry: {what}"))
}

/// Reads an encoded entry front to back.
pub struct Reader<'a> {
    b: &'a [u8],
    i: usize,
}

impl<'a> Reader<'a> {
    /// A reader of `bytes` (which must start with [`VERSION`]).
    pub fn new(bytes: &'a [u8]) -> Result<Self> {
        match bytes.first() {
            Some(&VERSION) => Ok(Reader { b: bytes, i: 1 }),
            _ => Err(corrupt("unknown encoding")),
        }
    }

    /// A reader of `bytes` without a version byte (values that carry their own).
    pub fn bare(bytes: &'a [u8]) -> Self {
        Reader { b: bytes, i: 0 }
    }

    fn byte(&mut self) -> Result<u8> {
        let b = *self.b.get(self.i).ok_or_else(|| corrupt("truncated"))?;
        self.i += 1;
        Ok(b)
    }

    /// A varint.
    pub fn varint(&mut self) -> Result<u64> {
        // Most are one byte (lengths, counts, flags).
        if let Some(&b) = self.b.get(self.i) {
            if b < 0x80 {
                self.i += 1;
                return Ok(u64::from(b));
            }
        }
        let mut n = 0u64;
        let mut shift = 0;
        loop {
            let b = self.byte()?;
            if shift >= 64 {
                return Err(corrupt("varint too long"));
            }
            n |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(n);
            }
            shift += 7;
        }
    }

    /// A zigzag varint.
    pub fn zigzag(&mut self) -> Result<i64> {
        let n = self.varint()?;
        Ok(((n >> 1) as i64) ^ -((n & 1) as i64))
    }

    fn len(&mut self) -> Result<usize> {
        let n = usize::try_from(self.varint()?).map_err(|_| corrupt("length"))?;
        if n > self.b.len() - self.i {
            return Err(corrupt("length past the end"));
        }
        Ok(n)
    }

    fn str(&mut self) -> Result<&'a str> {
        let n = self.len()?;
        let s = std::str::from_utf8(&self.b[self.i..self.i + n]).map_err(|_| corrupt("UTF-8"))?;
        self.i += n;
        Ok(s)
    }

    fn opt_str(&mut self) -> Result<Option<&'a str>> {
        match self.byte()? {
            0 => Ok(None),
            _ => Ok(Some(self.str()?)),
        }
    }

    fn strs(&mut self) -> Result<Vec<&'a str>> {
        let n = self.len()?;
        let mut out = Vec::with_capacity(n);
        for _ in 0..n {
            out.push(self.str()?);
        }
        Ok(out)
    }

    /// A list of strings as its stored bytes (lengths checked; UTF-8 checked when an item is
    /// read as a string).
    fn list_raw(&mut self) -> Result<&'a [u8]> {
        let start = self.i;
        let n = self.len()?;
        for _ in 0..n {
            let len = self.len()?;
            self.i += len;
        }
        Ok(&self.b[start..self.i])
    }

    /// A time.
    pub fn time(&mut self) -> Result<DateTime<Utc>> {
        let secs = self.zigzag()?;
        let nanos = u32::try_from(self.varint()?).map_err(|_| corrupt("time"))?;
        DateTime::from_timestamp(secs, nanos).ok_or_else(|| corrupt("time"))
    }

    /// A time as stored.
    fn raw_time(&mut self) -> Result<Time> {
        let secs = self.zigzag()?;
        let nanos = u32::try_from(self.varint()?).map_err(|_| corrupt("time"))?;
        Ok(Time { secs, nanos })
    }

    fn opt_raw_time(&mut self) -> Result<Option<Time>> {
        match self.byte()? {
            0 => Ok(None),
            _ => Ok(Some(self.raw_time()?)),
        }
    }

    /// An optional time.
    pub fn opt_time(&mut self) -> Result<Option<DateTime<Utc>>> {
        match self.byte()? {
            0 => Ok(None),
            _ => Ok(Some(self.time()?)),
        }
    }

    fn value(&mut self, depth: usize) -> Result<Value> {
        if depth > 64 {
            return Err(corrupt("nesting"));
        }
        Ok(match self.byte()? {
            0 => Value::Null,
            1 => Value::Bool(false),
            2 => Value::Bool(true),
            3 => Value::Number(self.varint()?.into()),
            4 => Value::Number(self.zigzag()?.into()),
            5 => {
                let end = self.i + 8;
                let raw: [u8; 8] = self
                    .b
                    .get(self.i..end)
                    .and_then(|s| s.try_into().ok())
                    .ok_or_else(|| corrupt("truncated"))?;
                self.i = end;
                Number::from_f64(f64::from_le_bytes(raw)).map_or(Value::Null, Value::Number)
            }
            6 => Value::String(self.str()?.to_string()),
            7 => {
                let n = self.len()?;
                let mut a = Vec::with_capacity(n);
                for _ in 0..n {
                    a.push(self.value(depth + 1)?);
                }
                Value::Array(a)
            }
            8 => Value::Object(self.map(depth + 1)?),
            _ => return Err(corrupt("value tag")),
        })
    }

    fn map(&mut self, depth: usize) -> Result<Map<String, Value>> {
        let n = self.len()?;
        let mut m = Map::new();
        for _ in 0..n {
            let k = self.str()?.to_string();
            let v = self.value(depth)?;
            m.insert(k, v);
        }
        Ok(m)
    }

    /// The head (the reader is left after it).
    pub fn head(&mut self) -> Result<Head<'a>> {
        Ok(Head {
            allowed: self.list_raw()?,
            path: self.str()?,
            pos: self.varint()?,
            effective: self.opt_time()?,
            expires: self.opt_time()?,
        })
    }

    /// The metadata after the head (the reader is left after it, before the terms).
    pub fn rest(&mut self) -> Result<Rest> {
        Ok(Rest {
            uid: self.str()?.to_string(),
            id: self.str()?.to_string(),
            parent: self.opt_str()?.map(str::to_string),
            type_name: self.str()?.to_string(),
            created: self.time()?,
            modified: self.time()?,
            owner: self.str()?.to_string(),
            review_state: self.opt_str()?.map(str::to_string),
            folderish: self.byte()? != 0,
            size: usize::try_from(self.varint()?).map_err(|_| corrupt("size"))?,
            fields: self.map(0)?,
        })
    }

    /// A list of strings (the terms, then the links, after [`Reader::rest`]).
    pub fn list(&mut self) -> Result<Vec<&'a str>> {
        self.strs()
    }
}

/// The head of a stored entry.
pub fn head(bytes: &[u8]) -> Result<Head<'_>> {
    Reader::new(bytes)?.head()
}

/// Whether a caller with `tokens` may view the entry `bytes`: its `allowedRolesAndUsers` (the
/// first part of the head) meet them. Reads nothing else.
pub fn visible_to(bytes: &[u8], tokens: &[String]) -> Result<bool> {
    let allowed = Reader::new(bytes)?.list_raw()?;
    Ok(list_items(allowed).any(|a| tokens.iter().any(|t| t.as_bytes() == a)))
}

/// Whether the `allowedRolesAndUsers` at the front of the stored entry `bytes` hold `token`.
pub fn allows(bytes: &[u8], token: &str) -> Result<bool> {
    let allowed = Reader::new(bytes)?.list_raw()?;
    Ok(list_items(allowed).any(|a| a == token.as_bytes()))
}

// `parent` and `folderish` are decoded with the rest but read only by tests and examples.
#[allow(dead_code)]
/// A stored entry read in place: its values borrowed from the bytes, its listing fields left
/// encoded ([`Fields`]) until one is asked for. What a summary is written from without
/// building a [`Map`] of values per entry.
pub struct View<'a> {
    /// The head.
    pub head: LightHead<'a>,
    /// Uid.
    pub uid: &'a str,
    /// Id.
    pub id: &'a str,
    /// Parent's uid.
    pub parent: Option<&'a str>,
    /// Type name.
    pub type_name: &'a str,
    /// Creation time.
    pub created: Time,
    /// Modification time.
    pub modified: Time,
    /// Owner.
    pub owner: &'a str,
    /// Workflow state.
    pub review_state: Option<&'a str>,
    /// Folderish.
    pub folderish: bool,
    /// `getObjSize`.
    pub size: usize,
    /// The listing fields, encoded.
    pub fields: Fields<'a>,
}

/// The view of a stored entry.
pub fn view(bytes: &[u8]) -> Result<View<'_>> {
    let mut r = Reader::new(bytes)?;
    let head = LightHead {
        allowed: r.list_raw()?,
        path: r.str()?,
        pos: r.varint()?,
        effective: r.opt_raw_time()?,
        expires: r.opt_raw_time()?,
    };
    let uid = r.str()?;
    let id = r.str()?;
    let parent = r.opt_str()?;
    let type_name = r.str()?;
    let created = r.raw_time()?;
    let modified = r.raw_time()?;
    let owner = r.str()?;
    let review_state = r.opt_str()?;
    let folderish = r.byte()? != 0;
    let size = usize::try_from(r.varint()?).map_err(|_| corrupt("size"))?;
    let start = r.i;
    r.skip_map(0)?;
    Ok(View {
        head,
        uid,
        id,
        parent,
        type_name,
        created,
        modified,
        owner,
        review_state,
        folderish,
        size,
        fields: Fields(&bytes[start..r.i]),
    })
}

/// The uid of a stored entry (read past its head only).
pub fn entry_uid(bytes: &[u8]) -> Result<&str> {
    let mut r = Reader::new(bytes)?;
    r.list_raw()?;
    r.str()?;
    r.varint()?;
    r.opt_raw_time()?;
    r.opt_raw_time()?;
    r.str()
}

/// The listing copy of a stored entry (`x:c:`): the entry up to its listing fields, with empty
/// lists of terms and links. It reads as the entry does ([`view`], [`head`], [`Reader::rest`]);
/// only what drops postings on reindex reads the terms and links, and it reads `x:e:`.
pub fn listing_copy(bytes: &[u8]) -> Result<Vec<u8>> {
    let end = {
        let mut r = Reader::new(bytes)?;
        r.head()?;
        r.skip_rest()?;
        r.i
    };
    let mut w = Writer::bare();
    w.raw(&bytes[..end]);
    w.strs(std::iter::empty());
    w.strs(std::iter::empty());
    Ok(w.finish())
}

/// An encoded JSON object (a count, then keys and values), read in place.
#[derive(Clone, Copy)]
pub struct Fields<'a>(&'a [u8]);

impl<'a> Fields<'a> {
    /// Its entries in stored order (the key order of a `serde_json` map: sorted).
    pub fn iter(&self) -> Entries<'a> {
        let mut r = Reader::bare(self.0);
        let left = r.varint().unwrap_or(0);
        Entries { r, left }
    }

    /// The value of `name`, if set.
    #[cfg(any(test, feature = "internals"))]
    pub fn get(&self, name: &str) -> Option<Raw<'a>> {
        self.raw_iter()
            .find(|(k, _)| *k == name.as_bytes())
            .map(|(_, v)| v)
    }

    /// The entries with their keys as bytes (not checked as UTF-8).
    fn raw_iter(&self) -> impl Iterator<Item = (&'a [u8], Raw<'a>)> {
        let mut r = Reader::bare(self.0);
        let mut left = r.varint().unwrap_or(0);
        std::iter::from_fn(move || {
            if left == 0 {
                return None;
            }
            left -= 1;
            let n = r.len().ok()?;
            let k = &r.b[r.i..r.i + n];
            r.i += n;
            let start = r.i;
            r.skip_value(0).ok()?;
            Some((k, Raw(&r.b[start..r.i])))
        })
    }

    /// The fields summaries read, found in one pass.
    pub fn known(&self) -> Known<'a> {
        let mut k = Known::default();
        for (name, v) in self.raw_iter() {
            k.note(name, v);
        }
        k
    }

    /// [`Fields::known`] and [`Fields::json_size`] in one pass over the encoding.
    pub fn known_and_json_size(&self) -> Result<(Known<'a>, usize)> {
        let mut r = Reader::bare(self.0);
        let n = r.len()?;
        let mut size = 2 + n.saturating_sub(1);
        let mut k = Known::default();
        for _ in 0..n {
            let len = r.len()?;
            let name = &r.b[r.i..r.i + len];
            r.i += len;
            let start = r.i;
            size += str_json_size(name)? + 1 + r.json_size_value(0)?;
            k.note(name, Raw(&r.b[start..r.i]));
        }
        Ok((k, size))
    }

    /// The string value of `name` (`""` when unset or not a string).
    #[cfg(any(test, feature = "internals"))]
    pub fn str(&self, name: &str) -> &'a str {
        self.get(name).and_then(|v| v.as_str()).unwrap_or("")
    }

    /// The fields holding an object (stored files and images), decoded.
    pub fn objects(&self) -> Map<String, Value> {
        self.iter()
            .filter(|(_, raw)| matches!(raw.get(), ValueRef::Object(_)))
            .map(|(k, raw)| (k.to_string(), raw.to_value()))
            .collect()
    }

    /// As a map of values.
    #[cfg(any(test, feature = "internals"))]
    pub fn to_map(&self) -> Map<String, Value> {
        self.iter()
            .map(|(k, v)| (k.to_string(), v.to_value()))
            .collect()
    }
}

impl Fields<'_> {
    /// The size of the fields as compact JSON: what [`crate::core::model::ContentRecord::fields_size`]
    /// gives for them decoded ([`Fields::to_map`]), counted in one pass over the encoding
    /// without decoding or writing them. An error when a string is not UTF-8 (decoding fails
    /// there too). (The navigation walk counts it with the fields it reads:
    /// [`Fields::known_and_json_size`].)
    #[cfg(any(test, feature = "internals"))]
    pub fn json_size(&self) -> Result<usize> {
        Reader::bare(self.0).json_size_map(0)
    }
}

/// The size of the string `b` as JSON (`b` checked as UTF-8).
fn str_json_size(b: &[u8]) -> Result<usize> {
    // Printable ASCII without `"` and `\` is written as it is (and is UTF-8).
    if b.iter()
        .all(|&c| (0x20..0x80).contains(&c) && c != b'"' && c != b'\\')
    {
        return Ok(b.len() + 2);
    }
    let s = std::str::from_utf8(b).map_err(|_| corrupt("UTF-8"))?;
    Ok(crate::core::model::json_size(s))
}

/// The number of decimal digits of `n`.
fn digits(n: u64) -> usize {
    n.checked_ilog10().map_or(1, |d| d as usize + 1)
}

impl Reader<'_> {
    /// Past one value, its size as compact JSON (what `serde_json` writes for the value
    /// [`Reader::value`] decodes).
    fn json_size_value(&mut self, depth: usize) -> Result<usize> {
        if depth > 64 {
            return Err(corrupt("nesting"));
        }
        let start = self.i;
        Ok(match self.byte()? {
            0 | 2 => 4,
            1 => 5,
            3 => digits(self.varint()?),
            4 => {
                let n = self.zigzag()?;
                usize::from(n < 0) + digits(n.unsigned_abs())
            }
            5 => {
                self.skip(8)?;
                crate::core::model::json_size(&Raw(&self.b[start..self.i]))
            }
            6 => {
                let n = self.len()?;
                let s = &self.b[self.i..self.i + n];
                self.i += n;
                str_json_size(s)?
            }
            7 => {
                let n = self.len()?;
                let mut size = 2 + n.saturating_sub(1);
                for _ in 0..n {
                    size += self.json_size_value(depth + 1)?;
                }
                size
            }
            8 => self.json_size_map(depth + 1)?,
            _ => return Err(corrupt("value tag")),
        })
    }

    /// Past one object, its size as compact JSON.
    fn json_size_map(&mut self, depth: usize) -> Result<usize> {
        let n = self.len()?;
        let mut size = 2 + n.saturating_sub(1);
        for _ in 0..n {
            let k = self.len()?;
            let key = &self.b[self.i..self.i + k];
            self.i += k;
            size += str_json_size(key)? + 1 + self.json_size_value(depth)?;
        }
        Ok(size)
    }
}

/// As the value it decodes to ([`Raw::to_value`]): `serde_json` writes the same text for both.
impl Serialize for Raw<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        match self.get() {
            ValueRef::Null => s.serialize_unit(),
            ValueRef::Bool(b) => s.serialize_bool(b),
            ValueRef::U64(n) => s.serialize_u64(n),
            ValueRef::I64(n) => s.serialize_i64(n),
            ValueRef::F64(n) => n.serialize(s),
            ValueRef::Str(v) => s.serialize_str(v),
            ValueRef::Array(items) => s.collect_seq(items),
            ValueRef::Object(entries) => s.collect_map(entries),
        }
    }
}

/// The listing fields summaries read ([`Fields::known`]).
#[derive(Default, Clone, Copy)]
pub struct Known<'a> {
    /// `title`.
    pub title: Option<Raw<'a>>,
    /// `description`.
    pub description: Option<Raw<'a>>,
    /// `subjects`.
    pub subjects: Option<Raw<'a>>,
    /// `exclude_from_nav`.
    pub exclude_from_nav: Option<Raw<'a>>,
    /// `effective`.
    pub effective: Option<Raw<'a>>,
    /// `expires`.
    pub expires: Option<Raw<'a>>,
    /// `creators`.
    pub creators: Option<Raw<'a>>,
    /// `language`.
    pub language: Option<Raw<'a>>,
    /// Whether any field holds an object (a stored file or image).
    pub objects: bool,
}

impl<'a> Known<'a> {
    /// Take the field `name` with the value `v` if it is one of these.
    fn note(&mut self, name: &[u8], v: Raw<'a>) {
        self.objects |= v.0.first() == Some(&8);
        let slot = match name {
            b"title" => &mut self.title,
            b"description" => &mut self.description,
            b"subjects" => &mut self.subjects,
            b"exclude_from_nav" => &mut self.exclude_from_nav,
            b"effective" => &mut self.effective,
            b"expires" => &mut self.expires,
            b"creators" => &mut self.creators,
            b"language" => &mut self.language,
            _ => return,
        };
        *slot = Some(v);
    }
}

/// The entries of an encoded object. The encoding was checked when its extent was found
/// ([`Reader::skip_map`]); a malformed one ends early.
pub struct Entries<'a> {
    r: Reader<'a>,
    left: u64,
}

impl<'a> Iterator for Entries<'a> {
    type Item = (&'a str, Raw<'a>);
    fn next(&mut self) -> Option<Self::Item> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let k = self.r.str().ok()?;
        let start = self.r.i;
        self.r.skip_value(0).ok()?;
        Some((k, Raw(&self.r.b[start..self.r.i])))
    }
}

/// The items of an encoded array.
pub struct Items<'a> {
    r: Reader<'a>,
    left: u64,
}

impl<'a> Iterator for Items<'a> {
    type Item = Raw<'a>;
    fn next(&mut self) -> Option<Self::Item> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let start = self.r.i;
        self.r.skip_value(0).ok()?;
        Some(Raw(&self.r.b[start..self.r.i]))
    }
}

/// One encoded JSON value (its tag and content), read in place.
#[derive(Clone, Copy)]
pub struct Raw<'a>(&'a [u8]);

/// An encoded JSON value, borrowed.
pub enum ValueRef<'a> {
    /// `null`.
    Null,
    /// A boolean.
    Bool(bool),
    /// A non-negative integer.
    U64(u64),
    /// A negative integer.
    I64(i64),
    /// Any other number (as `serde_json` keeps it).
    F64(Number),
    /// A string.
    Str(&'a str),
    /// An array.
    Array(Items<'a>),
    /// An object.
    Object(Entries<'a>),
}

impl<'a> Raw<'a> {
    /// The value. A malformed one reads as `null` (its extent was checked already).
    pub fn get(&self) -> ValueRef<'a> {
        let mut r = Reader::bare(self.0);
        let Ok(tag) = r.byte() else {
            return ValueRef::Null;
        };
        let out = match tag {
            1 => Some(ValueRef::Bool(false)),
            2 => Some(ValueRef::Bool(true)),
            3 => r.varint().ok().map(ValueRef::U64),
            4 => r.zigzag().ok().map(ValueRef::I64),
            5 => {
                r.b.get(r.i..r.i + 8)
                    .and_then(|s| <[u8; 8]>::try_from(s).ok())
                    .and_then(|raw| Number::from_f64(f64::from_le_bytes(raw)))
                    .map(ValueRef::F64)
            }
            6 => r.str().ok().map(ValueRef::Str),
            7 => r
                .varint()
                .ok()
                .map(|left| ValueRef::Array(Items { r, left })),
            8 => r
                .varint()
                .ok()
                .map(|left| ValueRef::Object(Entries { r, left })),
            _ => None,
        };
        out.unwrap_or(ValueRef::Null)
    }

    /// The string, if it is one.
    pub fn as_str(&self) -> Option<&'a str> {
        match self.get() {
            ValueRef::Str(s) => Some(s),
            _ => None,
        }
    }

    /// Whether it is `null`.
    pub fn is_null(&self) -> bool {
        matches!(self.get(), ValueRef::Null)
    }

    /// As a value.
    pub fn to_value(&self) -> Value {
        Reader::bare(self.0).value(0).unwrap_or(Value::Null)
    }
}

impl Reader<'_> {
    fn skip(&mut self, n: usize) -> Result<()> {
        if n > self.b.len() - self.i {
            return Err(corrupt("truncated"));
        }
        self.i += n;
        Ok(())
    }

    /// Past one value, checking its encoding as [`Reader::value`] does.
    fn skip_value(&mut self, depth: usize) -> Result<()> {
        if depth > 64 {
            return Err(corrupt("nesting"));
        }
        match self.byte()? {
            0..=2 => Ok(()),
            3 | 4 => self.varint().map(|_| ()),
            5 => self.skip(8),
            6 => {
                let n = self.len()?;
                self.skip(n)
            }
            7 => {
                let n = self.len()?;
                for _ in 0..n {
                    self.skip_value(depth + 1)?;
                }
                Ok(())
            }
            8 => self.skip_map(depth + 1),
            _ => Err(corrupt("value tag")),
        }
    }

    /// Past the metadata after the head ([`Reader::rest`]), decoding nothing.
    fn skip_rest(&mut self) -> Result<()> {
        self.str()?;
        self.str()?;
        self.opt_str()?;
        self.str()?;
        self.raw_time()?;
        self.raw_time()?;
        self.str()?;
        self.opt_str()?;
        self.byte()?;
        self.varint()?;
        self.skip_map(0)
    }

    /// Past one object.
    fn skip_map(&mut self, depth: usize) -> Result<()> {
        let n = self.len()?;
        for _ in 0..n {
            let k = self.len()?;
            self.skip(k)?;
            self.skip_value(depth)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn values_round_trip() {
        let v = json!({"a": null, "b": [true, false, 1, -2, 2.5, "é\"\\x"],
                       "c": {"d": u64::MAX, "e": i64::MIN}});
        let mut w = Writer::new();
        w.value(&v);
        let bytes = w.finish();
        let mut r = Reader::new(&bytes).unwrap();
        assert_eq!(r.value(0).unwrap(), v);
    }

    #[test]
    fn raw_values_read_as_the_decoded_ones() {
        let v = json!({"a": null, "b": [true, false, 1, -2, 2.5, "é\"\\x"],
                       "c": {"d": u64::MAX, "e": i64::MIN}, "s": "text"});
        let mut w = Writer::bare();
        w.map(v.as_object().unwrap());
        let bytes = w.finish();
        let mut r = Reader::bare(&bytes);
        r.skip_map(0).unwrap();
        assert_eq!(r.i, bytes.len());
        let f = Fields(&bytes);
        assert_eq!(&Value::Object(f.to_map()), &v);
        assert_eq!(f.str("s"), "text");
        assert_eq!(f.str("b"), "");
        let known = f.known();
        assert!(known.objects && known.title.is_none());
        assert!(f.get("a").unwrap().is_null());
        assert!(f.get("zz").is_none());
        let ValueRef::Array(items) = f.get("b").unwrap().get() else {
            panic!("an array")
        };
        assert_eq!(items.count(), 6);
    }

    #[test]
    fn stored_values_serialize_as_the_decoded_ones() {
        let v = json!({"a": null, "b": [true, false, 1, -2, 2.5, 1e300, "é\"\\x\n\u{1}"],
                       "c": {"d": u64::MAX, "e": i64::MIN, "f\"": {}, "\u{7f}": [[], [0]]},
                       "n": [0, 9, 10, 99, 100, -1, -9, -10, u64::MAX - 1, i64::MIN + 1],
                       "s": "text", "t": [], "u": "\t\u{1f} \u{7f}"});
        let mut w = Writer::bare();
        w.map(v.as_object().unwrap());
        let bytes = w.finish();
        let f = Fields(&bytes);
        assert_eq!(f.json_size().unwrap(), v.to_string().len());
        for (k, raw) in f.iter() {
            assert_eq!(
                serde_json::to_string(&raw).unwrap(),
                v[k].to_string(),
                "{k}"
            );
            let mut one = Writer::bare();
            one.map(&Map::from_iter([(k.to_string(), v[k].clone())]));
            let one = one.finish();
            let expected = json!({ k: v[k].clone() }).to_string().len();
            assert_eq!(Fields(&one).json_size().unwrap(), expected, "{k}");
            assert_eq!(
                Fields(&one).known_and_json_size().unwrap().1,
                expected,
                "{k}"
            );
        }
        // The one-pass variant finds the same fields and size.
        let listing = json!({"creators": ["x"], "description": "d\n", "effective": null,
                             "exclude_from_nav": true, "expires": "2027", "image": {"a": 1},
                             "language": "de", "other": [1], "subjects": [], "title": "T"});
        let mut w = Writer::bare();
        w.map(listing.as_object().unwrap());
        let bytes = w.finish();
        let f = Fields(&bytes);
        let (k, size) = f.known_and_json_size().unwrap();
        assert_eq!(size, listing.to_string().len());
        assert_eq!(size, f.json_size().unwrap());
        let (a, b) = (k, f.known());
        let pairs = [
            (a.title, b.title),
            (a.description, b.description),
            (a.subjects, b.subjects),
            (a.exclude_from_nav, b.exclude_from_nav),
            (a.effective, b.effective),
            (a.expires, b.expires),
            (a.creators, b.creators),
            (a.language, b.language),
        ];
        for (x, y) in pairs {
            assert!(x.is_some());
            assert_eq!(x.map(|r| r.0), y.map(|r| r.0));
        }
        assert!(a.objects && b.objects);
        let mut empty = Writer::bare();
        empty.map(&Map::new());
        assert_eq!(Fields(&empty.finish()).json_size().unwrap(), 2);
        let mut bad = Writer::bare();
        bad.map(&Map::from_iter([("k".to_string(), json!("é"))]));
        let mut bad = bad.finish();
        let at = bad.len() - 1;
        bad[at] = 0xff;
        assert!(Fields(&bad).json_size().is_err());
    }

    #[test]
    fn truncated_input_is_an_error_not_a_panic() {
        let mut w = Writer::new();
        w.value(&json!({"title": "A long enough title", "n": [1, 2, 3]}));
        let bytes = w.finish();
        for end in 0..bytes.len() {
            let r = Reader::new(&bytes[..end]).and_then(|mut r| r.value(0));
            assert!(r.is_err(), "prefix of {end} bytes");
        }
    }

    #[test]
    fn times_keep_nanoseconds_and_negative_seconds() {
        for t in [
            DateTime::from_timestamp(1_700_000_000, 123_456_789).unwrap(),
            DateTime::from_timestamp(-86_400 * 365 * 100, 5).unwrap(),
        ] {
            let mut w = Writer::new();
            w.time(&t);
            let bytes = w.finish();
            assert_eq!(Reader::new(&bytes).unwrap().time().unwrap(), t);
        }
    }
}
