//! The response cache: answers to repeated safe requests (GET, HEAD) without running them again.
//!
//! Correctness rests on the **store generation** ([`crate::generation`]), a counter under
//! [`GENERATION`] that every write transaction which changes anything increments (in
//! [`crate::context::Ctx::commit`]). A read request reads the generation from its own snapshot,
//! so an answer computed at generation `g` is exactly what any later request reading generation
//! `g` would compute — as long as nothing else it depends on changed. The other inputs are all part of the key:
//!
//! - the request: method, path, query, base URL and every header except `Authorization` and
//!   `Cookie`, which only carry credentials;
//! - the caller: the authenticated login (credentials are checked on every request, before the
//!   cache is consulted, so an expired or revoked token never reaches a cached answer);
//! - the time, to the second: answers may depend on the clock (lock expiry), so an entry is used
//!   only within the second it was computed in. Engines with a movable test clock never cache.
//!
//! Only 200 answers are kept. When the generation or the second moves on, the whole cache is
//! dropped at the next insertion (old entries can never be hit again); its size is bounded by
//! [`crate::EngineOptions::response_cache_bytes`] (0 turns it off).

use std::collections::HashMap;
use std::sync::Mutex;

use crate::http::{Method, Request, Response};

pub use crate::generation::GENERATION;

/// Generation and second an entry is valid for.
pub type Epoch = (u64, i64);

/// Cached answers of one epoch.
#[derive(Default)]
struct Entries {
    epoch: Epoch,
    map: HashMap<String, Response>,
    bytes: usize,
}

/// A bounded cache of responses; see the module documentation.
pub struct ResponseCache {
    max_bytes: usize,
    entries: Mutex<Entries>,
}

impl ResponseCache {
    /// How many responses it holds, their bytes, and its limit in bytes.
    pub fn usage(&self) -> (usize, usize, usize) {
        let (len, bytes) = self
            .entries
            .lock()
            .map(|e| (e.map.len(), e.bytes))
            .unwrap_or_default();
        (len, bytes, self.max_bytes)
    }

    /// A cache holding at most about `max_bytes` of responses (0: never caches).
    pub fn new(max_bytes: usize) -> Self {
        ResponseCache {
            max_bytes,
            entries: Mutex::new(Entries::default()),
        }
    }

    /// Whether the cache is on.
    pub fn enabled(&self) -> bool {
        self.max_bytes > 0
    }

    /// Whether `req` may be answered from (and stored in) the cache.
    pub fn applies(&self, req: &Request) -> bool {
        self.max_bytes > 0 && matches!(req.method, Method::Get | Method::Head)
    }

    /// The key of `req` made by the caller `login` (`""` for anonymous).
    pub fn key(req: &Request, login: &str) -> String {
        let mut headers: Vec<(String, &str)> = req
            .headers
            .iter()
            .map(|(n, v)| (n.to_ascii_lowercase(), v.as_str()))
            .filter(|(n, _)| n != "authorization" && n != "cookie")
            .collect();
        headers.sort();
        let mut k = String::with_capacity(128);
        for part in [
            req.method.as_str(),
            &req.path,
            &req.query,
            &req.base_url,
            login,
        ] {
            k.push_str(part);
            k.push('\0');
        }
        for (n, v) in headers {
            k.push_str(&n);
            k.push(':');
            k.push_str(v);
            k.push('\0');
        }
        k
    }

    /// The cached answer for `key` in `epoch`, if any.
    pub fn get(&self, epoch: Epoch, key: &str) -> Option<Response> {
        let entries = self.entries.lock().ok()?;
        if entries.epoch != epoch {
            return None;
        }
        entries.map.get(key).cloned()
    }

    /// Remember `resp` (a 200) for `key` in `epoch`.
    pub fn insert(&self, epoch: Epoch, key: String, resp: &Response) {
        if resp.status != 200 {
            return;
        }
        let size = key.len() + resp.body.len() + 64;
        if size > self.max_bytes / 4 {
            return;
        }
        let value = resp.clone();
        let Ok(mut entries) = self.entries.lock() else {
            return;
        };
        let mut dropped = None;
        if epoch > entries.epoch || entries.bytes + size > self.max_bytes {
            // A newer epoch makes every entry unreachable; a full cache starts over.
            if epoch < entries.epoch {
                return;
            }
            dropped = Some(std::mem::replace(
                &mut *entries,
                Entries {
                    epoch,
                    ..Entries::default()
                },
            ));
        } else if epoch < entries.epoch {
            return;
        }
        entries.bytes += size;
        entries.map.insert(key, value);
        drop(entries);
        // Freeing thousands of answers takes a while; other requests need not wait for it.
        drop(dropped);
    }
}
