//! Full-text postings that rank and filter a match on their own (`x:w:<term>\0<uid>`).
//!
//! A search for a common word on a large site matches tens of thousands of objects. Reading the
//! catalog entry of each (to check who may see it and whether it is active) made such a search
//! cost one point read per match. Instead each posting's value ([`Meta`]) carries what that
//! check and the ranking need: the object's `allowedRolesAndUsers` as a small interned id
//! ([`intern`]; a site has few distinct lists), its effective and expiration dates, its creation
//! time and how often the term occurs in its text. A search then scans the postings, counts the
//! visible matches, ranks them, and reads only the entries of the batch it answers.
//!
//! The values change when the object's permissions or dates change (a workflow transition
//! rewrites its postings: a handful of writes) and when its text changes.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use chrono::{DateTime, Utc};

use super::codec;
use crate::core::error::Result;
use crate::core::keys;
use crate::core::store::Direction;
use crate::runtime::context::Ctx;

/// The first byte of a posting value in this encoding (postings of schema 9 and before are
/// empty; the catalog is rebuilt by the migration to schema 10).
const VERSION: u8 = 1;

/// What a full-text posting says about its object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Meta {
    /// The interned id of the object's `allowedRolesAndUsers` ([`intern`]).
    pub allowed: u32,
    /// Effective date.
    pub effective: Option<DateTime<Utc>>,
    /// Expiration date.
    pub expires: Option<DateTime<Utc>>,
    /// Creation time, seconds since the epoch (the tie-break of equally relevant matches:
    /// newest first).
    pub created: i64,
    /// How many times the term occurs in the object's searchable text.
    pub tf: u32,
}

impl Meta {
    /// The stored value.
    pub fn encode(&self) -> Vec<u8> {
        let mut w = codec::Writer::bare();
        w.byte(VERSION);
        w.varint(u64::from(self.allowed));
        w.opt_time(self.effective.as_ref());
        w.opt_time(self.expires.as_ref());
        w.zigzag(self.created);
        w.varint(u64::from(self.tf));
        w.finish()
    }

    /// Read a stored value; `None` for a value in no known encoding (then the entry decides).
    pub fn decode(bytes: &[u8]) -> Option<Meta> {
        let (&v, rest) = bytes.split_first()?;
        if v != VERSION {
            return None;
        }
        let mut r = codec::Reader::bare(rest);
        let allowed = u32::try_from(r.varint().ok()?).ok()?;
        let effective = r.opt_time().ok()?;
        let expires = r.opt_time().ok()?;
        let created = r.zigzag().ok()?;
        let tf = u32::try_from(r.varint().ok()?).ok()?;
        Some(Meta {
            allowed,
            effective,
            expires,
            created,
            tf,
        })
    }

    /// Whether the object is active at `now`.
    pub fn active_at(&self, now: DateTime<Utc>) -> bool {
        self.effective.is_none_or(|e| e <= now) && self.expires.is_none_or(|x| x > now)
    }
}

/// The id of the `allowedRolesAndUsers` list `allowed` (its stored bytes), interning it when
/// new: `x:a:<allowed>` → id and `x:A:<id>` → list. Ids are given in order and never reused.
pub fn intern(ctx: &mut Ctx<'_>, allowed: &[u8]) -> Result<u32> {
    let key = keys::allowed_id(allowed);
    if let Some(id) = ctx.get(&key)?.as_deref().and_then(read_id) {
        return Ok(id);
    }
    let last = ctx.scan(
        keys::ALLOWED_BY_ID_PREFIX,
        &crate::core::store::prefix_end(keys::ALLOWED_BY_ID_PREFIX),
        Direction::Reverse,
        1,
    )?;
    let id = last
        .first()
        .and_then(|(k, _)| read_id(&k[keys::ALLOWED_BY_ID_PREFIX.len()..]))
        .map_or(1, |n| n + 1);
    ctx.put(&key, &id.to_be_bytes())?;
    ctx.put(&keys::allowed_by_id(id), allowed)?;
    Ok(id)
}

fn read_id(b: &[u8]) -> Option<u32> {
    Some(u32::from_be_bytes(b.try_into().ok()?))
}

/// Whether a caller may view what postings name, by interned list, each list read once per
/// search.
pub struct Visibility<'t> {
    tokens: &'t [String],
    known: HashMap<u32, bool, BuildHasherDefault<IdHasher>>,
}

/// Hashes the small integer ids of interned lists (no need for SipHash's defence against
/// chosen keys: ids are given by the engine).
#[derive(Default)]
pub struct IdHasher(u64);

impl Hasher for IdHasher {
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(*b);
        }
    }

    fn write_u32(&mut self, n: u32) {
        self.0 = u64::from(n).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

impl<'t> Visibility<'t> {
    /// For a caller with `tokens` (roles and `user:<id>`).
    pub fn new(tokens: &'t [String]) -> Self {
        Visibility {
            tokens,
            known: HashMap::default(),
        }
    }

    /// Whether the caller may view an object whose list is interned as `id` (an unknown id: no).
    pub fn visible(&mut self, ctx: &Ctx<'_>, id: u32) -> Result<bool> {
        if let Some(v) = self.known.get(&id) {
            return Ok(*v);
        }
        let v = match ctx.get(&keys::allowed_by_id(id))? {
            Some(raw) => {
                codec::list_items(&raw).any(|a| self.tokens.iter().any(|t| t.as_bytes() == a))
            }
            None => false,
        };
        self.known.insert(id, v);
        Ok(v)
    }
}

/// The weight of a term occurring `tf` times (saturating, as BM25's `tf·(k1+1)/(tf+k1)` with
/// k1 = 1.2), in thousandths. Integers, so every host ranks alike.
pub fn tf_weight(tf: u32) -> u64 {
    let tf = u64::from(tf.max(1));
    tf * 2_200_000 / (tf * 1000 + 1200)
}

/// The weight of a query word found in `df` objects: rarer words weigh more.
pub fn idf_weight(df: usize) -> u64 {
    let bits = u64::from(usize::BITS - (df.saturating_add(1)).leading_zeros());
    1000 / (1 + bits)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_round_trip_and_old_values_are_not_read() {
        let m = Meta {
            allowed: 7,
            effective: DateTime::from_timestamp(1_700_000_000, 5),
            expires: None,
            created: -3,
            tf: 4,
        };
        assert_eq!(Meta::decode(&m.encode()), Some(m));
        assert_eq!(Meta::decode(b""), None);
        assert_eq!(Meta::decode(&[9, 1, 2]), None);
        assert_eq!(Meta::decode(&[VERSION, 0x80]), None, "truncated");
    }

    #[test]
    fn weights_saturate_and_favour_rare_words() {
        assert!(tf_weight(2) > tf_weight(1));
        assert!(tf_weight(50) < 2 * tf_weight(2));
        assert!(idf_weight(1) > idf_weight(100));
        assert!(idf_weight(100) > idf_weight(100_000));
        assert!(idf_weight(usize::MAX) > 0);
    }
}
