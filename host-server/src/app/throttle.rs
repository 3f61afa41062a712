//! Login throttling: failed password guesses, counted per (login, client address) pair and,
//! more loosely, per client address.
//!
//! Only failures count, so a client that logs in correctly (a test suite, a busy editor) is never
//! slowed down. Each (login, address) pair and each client address has a budget of failures
//! ([`Limits`]): a burst, refilled evenly over a minute (GCRA, from `governor`). A failure beyond
//! the budget blocks that pair (or address) until the budget has room again; while blocked every
//! attempt — right password or not — is answered 429 with `Retry-After`, without checking the
//! password, so guessing cannot go on at more than the budget's rate. A login is never blocked
//! as such: wrong passwords sent from other addresses do not lock its owner out (only an
//! attacker behind the owner's own address, past the looser per-address budget, can).
//! Password reset requests count on the same keys (every one of them, whatever it answered).

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
    /// Per login from one client address (the (login, address) pair).
    pub per_login: NonZeroU32,
    /// Per client address, over all logins.
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
    /// (login, client address; `None` when the address is unknown).
    pairs: Keyed<(String, Option<IpAddr>)>,
    addresses: Keyed<IpAddr>,
}

impl LoginThrottle {
    /// A throttle with these budgets.
    pub fn new(limits: Limits) -> Self {
        LoginThrottle {
            pairs: Keyed::new(limits.per_login),
            addresses: Keyed::new(limits.per_address),
        }
    }

    /// How long an attempt for `login` from `address` must wait, if it must.
    pub fn wait(&self, login: &str, address: Option<IpAddr>) -> Option<Duration> {
        let now = Instant::now();
        let by_pair = self.pairs.blocked_for(&(login.to_string(), address), now);
        let by_address = address.and_then(|a| self.addresses.blocked_for(&a, now));
        by_pair.max(by_address)
    }

    /// Count a failed attempt for `login` from `address`.
    pub fn failed(&self, login: &str, address: Option<IpAddr>) {
        let now = Instant::now();
        self.pairs.failed(&(login.to_string(), address), now);
        if let Some(a) = address {
            self.addresses.failed(&a, now);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guesses_from_one_address_do_not_block_the_login_elsewhere() {
        let t = LoginThrottle::new(Limits {
            per_login: NonZeroU32::new(3).unwrap_or(NonZeroU32::MIN),
            per_address: NonZeroU32::new(100).unwrap_or(NonZeroU32::MIN),
        });
        let attacker = Some(IpAddr::from([10, 0, 0, 1]));
        let owner = Some(IpAddr::from([10, 0, 0, 2]));
        for _ in 0..10 {
            t.failed("editor", attacker);
        }
        assert!(t.wait("editor", attacker).is_some());
        assert_eq!(t.wait("editor", owner), None);
        assert_eq!(t.wait("other", attacker), None);
    }

    #[test]
    fn one_address_is_bounded_over_all_logins() {
        let t = LoginThrottle::new(Limits {
            per_login: NonZeroU32::new(3).unwrap_or(NonZeroU32::MIN),
            per_address: NonZeroU32::new(5).unwrap_or(NonZeroU32::MIN),
        });
        let a = Some(IpAddr::from([10, 0, 0, 1]));
        for i in 0..6 {
            t.failed(&format!("user{i}"), a);
        }
        assert!(t.wait("someone-else", a).is_some());
        assert_eq!(
            t.wait("someone-else", Some(IpAddr::from([10, 0, 0, 3]))),
            None
        );
    }
}
