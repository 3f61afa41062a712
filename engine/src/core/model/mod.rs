//! The content model: the stored record of a content object, the type registry, ids, blocks,
//! languages and the site profile.

pub mod actions;
pub mod blocks;
pub mod fields;
pub mod ids;
pub mod language;
pub mod profile;
pub mod types;
pub mod workflows;

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

pub use types::{ContentType, TypeRegistry};

/// A content object as stored under `o:<uid>`.
///
/// Structural data (identity, place in the tree, ownership, workflow state) are typed fields; the
/// schema-driven field values of the object's type live in `fields`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ContentRecord {
    /// Unique id (32 lowercase hex digits).
    pub uid: String,
    /// Id within the parent (`root` for the site root).
    pub id: String,
    /// Site path: `""` for the root, otherwise `/a/b`.
    pub path: String,
    /// Parent's uid; `None` only for the site root.
    pub parent: Option<String>,
    /// Content type name (`@type`).
    #[serde(rename = "type")]
    pub type_name: String,
    /// Position within the parent (key of the `c:` entry).
    pub pos: u64,
    /// Creation time.
    #[serde(deserialize_with = "utc_time")]
    pub created: DateTime<Utc>,
    /// Last modification time.
    #[serde(deserialize_with = "utc_time")]
    pub modified: DateTime<Utc>,
    /// Owner's login.
    pub owner: String,
    /// Workflow state; `None` for types without workflow (the site root).
    pub review_state: Option<String>,
    /// Number of children (folderish objects).
    #[serde(default)]
    pub child_count: u64,
    /// Position the next added child gets.
    #[serde(default)]
    pub next_pos: u64,
    /// Local roles granted on this object (and inherited below it): principal id (a user's
    /// login or a group's id) → roles.
    #[serde(default)]
    pub local_roles: BTreeMap<String, Vec<String>>,
    /// Whether this object blocks the local roles granted above it (sharing's `inherit: false`):
    /// then only its own local roles, and those below it, count here. Absent (false) in records
    /// written before it existed.
    #[serde(default, skip_serializing_if = "is_false")]
    pub block_local_roles: bool,
    /// Schema field values (title, description, blocks, ...).
    pub fields: Map<String, Value>,
    /// The object's revision: 0 when created, one more with every save ([`crate::content::tree::save`]).
    /// With the uid it names one version of the object (its `ETag`).
    #[serde(default)]
    pub rev: u64,
}

impl ContentRecord {
    /// The size of the object's fields as compact JSON (what `serde_json::to_vec` would give,
    /// without building it): the `getObjSize` of listings and catalog items.
    pub fn fields_size(&self) -> usize {
        json_size(&self.fields)
    }

    /// A string field, or `""`.
    pub fn str_field(&self, name: &str) -> &str {
        self.fields.get(name).and_then(Value::as_str).unwrap_or("")
    }

    /// The title.
    pub fn title(&self) -> &str {
        self.str_field("title")
    }

    /// The description.
    pub fn description(&self) -> &str {
        self.str_field("description")
    }

    /// True for the site root.
    pub fn is_root(&self) -> bool {
        self.parent.is_none()
    }

    /// The path of the parent (`""` for children of the root), or `None` for the root.
    pub fn parent_path(&self) -> Option<&str> {
        if self.is_root() {
            return None;
        }
        Some(self.path.rsplit_once('/').map(|(p, _)| p).unwrap_or(""))
    }

    /// A copy of the record without its field values (structural data and local roles only).
    pub fn clone_without_fields(&self) -> ContentRecord {
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
            child_count: self.child_count,
            next_pos: self.next_pos,
            local_roles: self.local_roles.clone(),
            block_local_roles: self.block_local_roles,
            fields: Map::new(),
            rev: self.rev,
        }
    }

    /// The paths of every ancestor, root first (`""`, `/a`, `/a/b` for `/a/b/c`).
    pub fn ancestor_paths(&self) -> Vec<String> {
        ancestor_paths(&self.path)
    }
}

/// The field values a listing keeps (see [`ContentRecord::from_json_for_listing`]): what summaries
/// and the catalog metadata read, except `getObjSize`, which measures every field.
pub const LISTING_FIELDS: &[&str] = &[
    "title",
    "description",
    "subjects",
    "exclude_from_nav",
    "effective",
    "expires",
    "creators",
    "language",
    // The stored form of the file and image fields of File, Image and Video and of the preview
    // image (volto.preview_image) (a blob reference, scales included): catalog items show
    // `image_field`, `image_scales`, `mime_type` and `getObjSize` from it.
    "file",
    "image",
    "video",
    "preview_image",
];

impl ContentRecord {
    /// Decode a stored record for a listing: every structural field, but of the field values
    /// only those named in [`LISTING_FIELDS`]; the others (blocks, text, ...) are skipped without
    /// being built. Such a record serves summaries and permission checks; it must never be saved.
    pub fn from_json_for_listing(bytes: &[u8]) -> serde_json::Result<ContentRecord> {
        Ok(serde_json::from_slice::<ListingRecord<ForListing>>(bytes)?.into_record())
    }

    /// Decode a stored record as the parent of an object being represented: every structural
    /// field, but of the field values only [`PARENT_FIELDS`] (what the `parent` summary and
    /// `previous_item`/`next_item` read). Like [`ContentRecord::from_json_for_listing`], never
    /// save it.
    pub fn from_json_for_parent(bytes: &[u8]) -> serde_json::Result<ContentRecord> {
        Ok(serde_json::from_slice::<ListingRecord<ForParent>>(bytes)?.into_record())
    }
}

/// The field values a content object's representation reads of its parent
/// ([`ContentRecord::from_json_for_parent`]): the `parent` summary's title and description,
/// and whether the parent shows `previous_item` and `next_item`.
pub const PARENT_FIELDS: &[&str] = &["title", "description", "nextPreviousEnabled"];

/// Which field values a partial decode of a record keeps ([`ListingRecord`]).
trait KeptFields {
    /// Their names.
    const NAMES: &'static [&'static str];
}

/// [`LISTING_FIELDS`].
struct ForListing;

impl KeptFields for ForListing {
    const NAMES: &'static [&'static str] = LISTING_FIELDS;
}

/// [`PARENT_FIELDS`].
struct ForParent;

impl KeptFields for ForParent {
    const NAMES: &'static [&'static str] = PARENT_FIELDS;
}

impl<K: KeptFields> ListingRecord<K> {
    fn into_record(self) -> ContentRecord {
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
            child_count: self.child_count,
            next_pos: self.next_pos,
            local_roles: self.local_roles,
            block_local_roles: self.block_local_roles,
            fields: self.fields,
            rev: self.rev,
        }
    }
}

impl ContentRecord {
    /// Decode only what permission checks read of a stored record: uid, path, parent, type,
    /// workflow state and local roles. Everything else is skipped and left empty (times at the
    /// epoch, no field values); such a record serves permission checks only and is never saved.
    pub fn from_json_for_permissions(bytes: &[u8]) -> serde_json::Result<ContentRecord> {
        let r: HeadRecord = serde_json::from_slice(bytes)?;
        Ok(ContentRecord {
            uid: r.uid,
            id: String::new(),
            path: r.path,
            parent: r.parent,
            type_name: r.type_name,
            pos: 0,
            created: DateTime::UNIX_EPOCH,
            modified: DateTime::UNIX_EPOCH,
            owner: String::new(),
            review_state: r.review_state,
            child_count: 0,
            next_pos: 0,
            local_roles: r.local_roles,
            block_local_roles: r.block_local_roles,
            fields: Map::new(),
            rev: 0,
        })
    }
}

/// What [`ContentRecord::from_json_for_permissions`] decodes; serde skips the other keys.
#[derive(Deserialize)]
struct HeadRecord {
    uid: String,
    path: String,
    parent: Option<String>,
    #[serde(rename = "type")]
    type_name: String,
    review_state: Option<String>,
    #[serde(default)]
    local_roles: BTreeMap<String, Vec<String>>,
    #[serde(default)]
    block_local_roles: bool,
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// [`ContentRecord`] as stored, with `fields` filtered to `K`'s names while decoding.
#[derive(Deserialize)]
#[serde(bound = "")]
struct ListingRecord<K: KeptFields> {
    uid: String,
    id: String,
    path: String,
    parent: Option<String>,
    #[serde(rename = "type")]
    type_name: String,
    pos: u64,
    #[serde(deserialize_with = "utc_time")]
    created: DateTime<Utc>,
    #[serde(deserialize_with = "utc_time")]
    modified: DateTime<Utc>,
    owner: String,
    review_state: Option<String>,
    #[serde(default)]
    child_count: u64,
    #[serde(default)]
    next_pos: u64,
    #[serde(default)]
    local_roles: BTreeMap<String, Vec<String>>,
    #[serde(default)]
    block_local_roles: bool,
    #[serde(deserialize_with = "kept_fields::<K, _>")]
    fields: Map<String, Value>,
    #[serde(default)]
    rev: u64,
    #[serde(skip)]
    kept: std::marker::PhantomData<K>,
}

fn kept_fields<'de, K: KeptFields, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Map<String, Value>, D::Error> {
    struct Fields<K>(std::marker::PhantomData<K>);
    impl<'de, K: KeptFields> serde::de::Visitor<'de> for Fields<K> {
        type Value = Map<String, Value>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a map of field values")
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(
            self,
            mut m: A,
        ) -> Result<Self::Value, A::Error> {
            let mut out = Map::new();
            while let Some(key) = m.next_key_seed(KeptKey::<K>(std::marker::PhantomData))? {
                match key {
                    Some(k) => {
                        out.insert(k.to_string(), m.next_value::<Value>()?);
                    }
                    None => {
                        m.next_value::<serde::de::IgnoredAny>()?;
                    }
                }
            }
            Ok(out)
        }
    }
    d.deserialize_map(Fields::<K>(std::marker::PhantomData))
}

/// A key of the field values: the entry of `K`'s names it names, if any (no allocation).
struct KeptKey<K>(std::marker::PhantomData<K>);

impl<'de, K: KeptFields> serde::de::DeserializeSeed<'de> for KeptKey<K> {
    type Value = Option<&'static str>;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_str(self)
    }
}

impl<K: KeptFields> serde::de::Visitor<'_> for KeptKey<K> {
    type Value = Option<&'static str>;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a field name")
    }
    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(K::NAMES.iter().copied().find(|k| *k == v))
    }
}

/// Decode a stored time: what `DateTime<Utc>`'s own `Deserialize` does (RFC 3339, any offset,
/// converted to UTC), with a fast path for the form the engine writes
/// (`YYYY-MM-DDTHH:MM:SS[.fraction]Z`).
fn utc_time<'de, D: serde::Deserializer<'de>>(d: D) -> Result<DateTime<Utc>, D::Error> {
    struct Time;
    impl serde::de::Visitor<'_> for Time {
        type Value = DateTime<Utc>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("an RFC 3339 formatted date and time string")
        }
        fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Self::Value, E> {
            if let Some(t) = parse_utc_fast(v) {
                return Ok(t);
            }
            v.parse::<DateTime<chrono::FixedOffset>>()
                .map(|t| t.with_timezone(&Utc))
                .map_err(E::custom)
        }
    }
    d.deserialize_str(Time)
}

/// `YYYY-MM-DDTHH:MM:SS[.f{1,9}]Z` as a UTC time; `None` for anything else (including leap
/// seconds), which the general parser then handles.
fn parse_utc_fast(s: &str) -> Option<DateTime<Utc>> {
    let b = s.as_bytes();
    if b.len() < 20 || b.last() != Some(&b'Z') {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<u32> {
        b.get(r)?.iter().try_fold(0u32, |acc, c| {
            c.is_ascii_digit().then(|| acc * 10 + u32::from(c - b'0'))
        })
    };
    let seps = [(4, b'-'), (7, b'-'), (10, b'T'), (13, b':'), (16, b':')];
    if seps.iter().any(|&(i, c)| b[i] != c) {
        return None;
    }
    let (year, month, day) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hour, min, sec) = (num(11..13)?, num(14..16)?, num(17..19)?);
    let nano = match b.len() - 20 {
        0 => 0,
        n @ 2..=10 if b[19] == b'.' => num(20..19 + n)? * 10u32.pow(10 - n as u32),
        _ => return None,
    };
    if sec >= 60 {
        return None;
    }
    let date = chrono::NaiveDate::from_ymd_opt(i32::try_from(year).ok()?, month, day)?;
    Some(date.and_hms_nano_opt(hour, min, sec, nano)?.and_utc())
}

/// The paths of every ancestor of `path`, root first.
pub fn ancestor_paths(path: &str) -> Vec<String> {
    if path.is_empty() {
        return Vec::new();
    }
    let mut out = vec![String::new()];
    let mut acc = String::new();
    let segs: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    for seg in &segs[..segs.len().saturating_sub(1)] {
        acc.push('/');
        acc.push_str(seg);
        out.push(acc.clone());
    }
    out
}

/// The size of `v` as compact JSON (what `serde_json::to_vec` would give, without building it;
/// 0 if it cannot be written).
pub(crate) fn json_size<T: serde::Serialize + ?Sized>(v: &T) -> usize {
    /// Counts the bytes written to it.
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut c = Count(0);
    match serde_json::to_writer(&mut c, v) {
        Ok(()) => c.0,
        Err(_) => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_size_is_the_encoded_length() {
        let mut rec: ContentRecord = serde_json::from_str(
            r#"{"uid":"u","id":"a","path":"/a","parent":"r","type":"Page","pos":0,
            "created":"2026-01-01T12:00:00Z","modified":"2026-01-01T12:00:00Z","owner":"o",
            "fields":{}}"#,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        rec.fields = serde_json::from_value(
            serde_json::json!({"a": [1, 2.5, "é\"\n"], "b": null, "c": {"d": true}}),
        )
        .unwrap_or_default();
        assert_eq!(
            rec.fields_size(),
            serde_json::to_vec(&rec.fields)
                .map(|v| v.len())
                .unwrap_or(0)
        );
        assert!(rec.fields_size() > 20);
    }

    #[test]
    fn listing_decode_keeps_structure_and_listing_fields() {
        let mut fields = Map::new();
        fields.insert("title".into(), Value::from("A \"title\" é"));
        fields.insert("description".into(), Value::from("d"));
        fields.insert("exclude_from_nav".into(), Value::from(true));
        fields.insert("nextPreviousEnabled".into(), Value::from(true));
        fields.insert("subjects".into(), serde_json::json!(["x", "y"]));
        fields.insert(
            "blocks".into(),
            serde_json::json!({"b1": {"@type": "slate", "value": [{"text": "\\ \u{1}"}]}}),
        );
        fields.insert(
            "text".into(),
            serde_json::json!({"data": "<p>x</p>", "n": 1.5}),
        );
        let rec = ContentRecord {
            uid: "u1".into(),
            id: "page".into(),
            path: "/f/page".into(),
            parent: Some("p".into()),
            type_name: "Page".into(),
            pos: 7,
            created: chrono::DateTime::UNIX_EPOCH,
            modified: chrono::DateTime::UNIX_EPOCH + chrono::Duration::seconds(5),
            owner: "admin".into(),
            review_state: Some("published".into()),
            child_count: 2,
            next_pos: 3,
            local_roles: [("bob".to_string(), vec!["Editor".to_string()])].into(),
            block_local_roles: true,
            fields,
            rev: 3,
        };
        let bytes = serde_json::to_vec(&rec).unwrap();
        let listed = ContentRecord::from_json_for_listing(&bytes).unwrap();
        let mut expected = rec.clone();
        expected
            .fields
            .retain(|k, _| LISTING_FIELDS.contains(&k.as_str()));
        assert_eq!(listed, expected);
        assert_eq!(listed.fields.len(), 4);
        let parent = ContentRecord::from_json_for_parent(&bytes).unwrap();
        let mut expected = rec.clone();
        expected
            .fields
            .retain(|k, _| PARENT_FIELDS.contains(&k.as_str()));
        assert_eq!(parent, expected);
        assert_eq!(parent.fields.len(), 3);
        // Records written before `child_count`, `next_pos` and `local_roles` existed.
        let old = br#"{"uid":"u","id":"a","path":"/a","parent":"r","type":"Page","pos":0,
            "created":"2026-01-01T12:00:00Z","modified":"2026-01-01T12:00:00Z","owner":"o",
            "fields":{"title":"T","blocks":{}}}"#;
        let full: ContentRecord = serde_json::from_slice(old).unwrap();
        let listed = ContentRecord::from_json_for_listing(old).unwrap();
        let mut kept = full.clone();
        kept.fields
            .retain(|k, _| LISTING_FIELDS.contains(&k.as_str()));
        assert_eq!(listed, kept);
        assert!(ContentRecord::from_json_for_listing(b"{}").is_err());
        let head = ContentRecord::from_json_for_permissions(&bytes).unwrap();
        assert_eq!(
            (head.uid, head.path, head.parent, head.type_name),
            (rec.uid, rec.path, rec.parent, rec.type_name)
        );
        assert_eq!(
            (head.review_state, head.local_roles),
            (rec.review_state, rec.local_roles)
        );
        assert!(head.fields.is_empty());
    }

    #[test]
    fn fast_time_parsing_agrees_with_chrono() {
        let general = |s: &str| {
            s.parse::<DateTime<chrono::FixedOffset>>()
                .ok()
                .map(|t| t.with_timezone(&Utc))
        };
        for s in [
            "2026-01-01T12:00:00Z",
            "2026-01-01T12:00:00.5Z",
            "2026-01-01T12:00:00.123Z",
            "2026-01-01T12:00:00.123456Z",
            "2026-01-01T12:00:00.123456789Z",
            "1999-12-31T23:59:59Z",
            "2024-02-29T00:00:00Z",
            "2023-02-29T00:00:00Z",
            "2026-13-01T00:00:00Z",
            "2026-01-01T24:00:00Z",
            "2026-01-01T12:00:60Z",
            "2026-01-01T12:00:00.Z",
            "2026-01-01T12:00:00.1234567890Z",
            "2026-01-01 12:00:00Z",
            "2026-01-01T12:00:00+02:00",
            "2026-01-01T12:00:0xZ",
            "+2026-01-01T12:00:00Z",
        ] {
            if let Some(fast) = parse_utc_fast(s) {
                assert_eq!(Some(fast), general(s), "{s}");
            }
            let decoded: Option<DateTime<Utc>> =
                utc_time(&mut serde_json::Deserializer::from_str(&format!("{s:?}"))).ok();
            assert_eq!(decoded, general(s), "{s}");
        }
        assert!(parse_utc_fast("2026-01-01T12:00:00.123Z").is_some());
        assert!(parse_utc_fast("2026-01-01T12:00:60Z").is_none());
    }

    #[test]
    fn ancestors_of_a_path() {
        assert_eq!(ancestor_paths(""), Vec::<String>::new());
        assert_eq!(ancestor_paths("/a"), vec![String::new()]);
        assert_eq!(
            ancestor_paths("/a/b/c"),
            vec!["".to_string(), "/a".into(), "/a/b".into()]
        );
    }
}
