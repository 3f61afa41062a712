//! Login throttling: failed password guesses, counted per login and per client address.
//!
//! Only failures count, so a client that logs in correctly (a test suite, a busy editor) is never
//! slowed down. Each login and each client address has a budget of failures ([`Limits`]): a burst,
//! refilled evenly over a minute (GCRA, from `governor`). A failure beyond the budget blocks that
//! login (or address) until the budget has room again; while blocked every attempt — right
//! password or not — is answered 429 with `Retry-After`, without checking the password, so
//! guessing cannot go on at more than the budget's rate.

use std::collections::HashMap;
use std::hash::Hash;
use std::net::IpAddr;
use std::num::NonZeroU32;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};

/// Failed attempts allowed per minute (also the burst).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Per login.
    pub per_login: NonZeroU32,
    /// Per client address.
    pub per_address: NonZeroU32,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            per_login: NonZeroU32::new(10).unwrap_or(NonZeroU32::MIN),
            per_address: NonZeroU32::new(60).unwrap_or(NonZeroU32::MIN),
        }
    }
}

/// How many keys are remembered before the stale ones are dropped.
const PRUNE_AT: usize = 10_000;

struct Keyed<K: Hash + Eq + Clone> {
    limiter: DefaultKeyedRateLimiter<K>,
    blocked: Mutex<HashMap<K, Instant>>,
}

impl<K: Hash + Eq + Clone> Keyed<K> {
    fn new(per_minute: NonZeroU32) -> Self {
        Keyed {
            limiter: RateLimiter::keyed(Quota::per_minute(per_minute)),
            blocked: Mutex::new(HashMap::new()),
        }
    }

    /// How long `key` is still blocked.
    fn blocked_for(&self, key: &K, now: Instant) -> Option<Duration> {
        let blocked = self.blocked.lock().ok()?;
        let until = *blocked.get(key)?;
        (until > now).then(|| until - now)
    }

    /// Count a failure of `key`; past its budget it is blocked.
    fn failed(&self, key: &K, now: Instant) {
        let clock = DefaultClock::default();
        if let Err(not_until) = self.limiter.check_key(key) {
            let wait = not_until.wait_time_from(clock.now());
            if let Ok(mut blocked) = self.blocked.lock() {
                if blocked.len() >= PRUNE_AT {
                    blocked.retain(|_, until| *until > now);
                }
                blocked.insert(key.clone(), now + wait.max(Duration::from_secs(1)));
            }
        }
        if self.limiter.len() >= PRUNE_AT {
            self.limiter.retain_recent();
        }
    }
}

/// The throttle of one server.
pub struct LoginThrottle {
    logins: Keyed<String>,
    addresses: Keyed<IpAddr>,
}

impl LoginThrottle {
    /// A throttle with these budgets.
    pub fn new(limits: Limits) -> Self {
        LoginThrottle {
            logins: Keyed::new(limits.per_login),
            addresses: Keyed::new(limits.per_address),
        }
    }

    /// How long an attempt for `login` from `address` must wait, if it must.
    pub fn wait(&self, login: &str, address: Option<IpAddr>) -> Option<Duration> {
        let now = Instant::now();
        let by_login = self.logins.blocked_for(&login.to_string(), now);
        let by_address = address.and_then(|a| self.addresses.blocked_for(&a, now));
        by_login.max(by_address)
    }

    /// Count a failed attempt for `login` from `address`.
    pub fn failed(&self, login: &str, address: Option<IpAddr>) {
        let now = Instant::now();
        self.logins.failed(&login.to_string(), now);
        if let Some(a) = address {
            self.addresses.failed(&a, now);
        }
    }
}
