//! Idempotency records: the answer to an unsafe request sent with an `Idempotency-Key`, kept so
//! that the same request sent again (a client that did not see the answer, an offline outbox
//! replayed twice) gets the stored answer instead of running again.
//!
//! A record is keyed by the caller (the user's stable uid, so a later user with the same login
//! is someone else; empty for anonymous callers) and the key, and holds a fingerprint of the
//! request it answered (method, path, query, body), written in
//! the request's own transaction (so it exists exactly when the change does) and kept for
//! [`WINDOW_HOURS`] hours. Expired records are ignored when read and deleted (a batch at a time)
//! whenever a new record is written. The HTTP side (reading the header, building the replayed
//! answer) is `api::idempotency`.

use serde::{Deserialize, Serialize};

use crate::core::error::{EngineError, Result};
use crate::core::keys;
use crate::core::store::{prefix_end, Direction};
use crate::runtime::context::Ctx;

/// How long a record is kept (hours).
pub const WINDOW_HOURS: i64 = 24;

/// Most expired records deleted per record written.
const PRUNE_BATCH: usize = 32;

/// A remembered answer.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Record {
    /// The request's method.
    pub method: String,
    /// The request's path (as sent, without the query).
    pub path: String,
    /// The hex SHA-256 of the request (method, path, query and body): the same key with
    /// another request is refused. Empty in records written before it was kept.
    #[serde(default)]
    pub fingerprint: String,
    /// The answer's status.
    pub status: u16,
    /// The answer's headers worth repeating (name, value).
    pub headers: Vec<(String, String)>,
    /// When it expires (milliseconds since the epoch).
    pub expires: i64,
    /// The answer's body (stored after the JSON of the rest, not in it).
    #[serde(skip)]
    pub body: Vec<u8>,
}

fn encode(rec: &Record) -> Result<Vec<u8>> {
    let mut out = serde_json::to_vec(rec)?;
    out.push(b'\n');
    out.extend_from_slice(&rec.body);
    Ok(out)
}

fn decode(bytes: &[u8]) -> Result<Record> {
    let split = bytes
        .iter()
        .position(|b| *b == b'\n')
        .ok_or_else(|| EngineError::Internal("malformed idempotency record".into()))?;
    let mut rec: Record = serde_json::from_slice(&bytes[..split])?;
    rec.body = bytes[split + 1..].to_vec();
    Ok(rec)
}

/// The unexpired record of `login`'s key `key`, if any.
pub fn load(ctx: &Ctx<'_>, login: &str, key: &str) -> Result<Option<Record>> {
    let Some(bytes) = ctx.get(&keys::idempotency_record(login, key))? else {
        return Ok(None);
    };
    let rec = decode(&bytes)?;
    Ok((rec.expires > ctx.now().timestamp_millis()).then_some(rec))
}

/// Remember `rec` (its `expires` is set here) for `login`'s key `key`, replacing an expired
/// one; delete a batch of expired records.
pub fn store(ctx: &mut Ctx<'_>, login: &str, key: &str, mut rec: Record) -> Result<()> {
    let now = ctx.now().timestamp_millis();
    let record_key = keys::idempotency_record(login, key);
    if let Some(old) = ctx.get(&record_key)? {
        if let Ok(old) = decode(&old) {
            ctx.delete(&keys::idempotency_expiry(
                u64::try_from(old.expires).unwrap_or(0),
                login,
                key,
            ))?;
        }
    }
    rec.expires = now + WINDOW_HOURS * 3600 * 1000;
    ctx.put(&record_key, &encode(&rec)?)?;
    let expiry = u64::try_from(rec.expires).unwrap_or(0);
    ctx.put(&keys::idempotency_expiry(expiry, login, key), b"")?;
    prune(ctx, now)
}

/// Delete up to a batch of records expired at `now`.
fn prune(ctx: &mut Ctx<'_>, now: i64) -> Result<()> {
    let prefix = keys::IDEMPOTENCY_EXPIRY_PREFIX;
    let end = keys::idempotency_expiry(u64::try_from(now).unwrap_or(0), "", "");
    let end = end.min(prefix_end(prefix));
    for (k, _) in ctx.scan(prefix, &end, Direction::Forward, PRUNE_BATCH)? {
        // `I:t:<expiry 8 bytes><login>\0<key>`
        if let Some((login, key)) = k
            .get(prefix.len() + 8..)
            .and_then(|rest| {
                let nul = rest.iter().position(|b| *b == 0)?;
                Some((&rest[..nul], &rest[nul + 1..]))
            })
            .map(|(l, k)| {
                (
                    String::from_utf8_lossy(l).into_owned(),
                    String::from_utf8_lossy(k).into_owned(),
                )
            })
        {
            ctx.delete(&keys::idempotency_record(&login, &key))?;
        }
        ctx.delete(&k)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_with_any_body() {
        let rec = Record {
            method: "POST".into(),
            path: "/folder".into(),
            fingerprint: "ab".into(),
            status: 201,
            headers: vec![("Location".into(), "http://x/folder/a\nb".into())],
            expires: 5,
            body: b"{\"a\":\"\\n\"}\n\xff".to_vec(),
        };
        assert_eq!(decode(&encode(&rec).unwrap()).unwrap(), rec);
    }
}
