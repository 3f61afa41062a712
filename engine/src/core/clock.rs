//! Injected time and randomness. The engine never reads the system clock or an RNG directly:
//! production hosts pass [`SystemClock`] and [`SystemEntropy`]; tests pass [`FixedClock`] and
//! [`SeededEntropy`] so the same scenario gives byte-identical answers on every host.

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

use chrono::{DateTime, TimeZone, Utc};

/// A source of the current time.
pub trait Clock: Send + Sync {
    /// Now, in UTC.
    fn now(&self) -> DateTime<Utc>;
}

/// A source of random bytes (ids, salts, tokens, secrets).
pub trait Entropy: Send + Sync {
    /// Fill `buf` with random bytes.
    fn fill(&self, buf: &mut [u8]);

    /// A random (version 4) UUID.
    fn uuid(&self) -> uuid::Uuid {
        let mut b = [0u8; 16];
        self.fill(&mut b);
        uuid::Builder::from_random_bytes(b).into_uuid()
    }

    /// The identifier of a new stored object (its UID). By default a random UUID;
    /// [`SystemEntropy`] makes it time-ordered (version 7: 48 bits of Unix milliseconds, then 74
    /// random bits), so the keys of objects created one after another sort next to each other
    /// and a new object touches the right edge of the store's B-trees instead of a random page.
    fn uid(&self) -> uuid::Uuid {
        self.uuid()
    }
}

/// The real clock (`chrono::Utc::now`, which uses JavaScript's `Date` on wasm).
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> DateTime<Utc> {
        Utc::now()
    }
}

/// Operating-system randomness (getrandom natively, `crypto.getRandomValues` on wasm, via `uuid`).
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemEntropy;

impl Entropy for SystemEntropy {
    fn fill(&self, buf: &mut [u8]) {
        for chunk in buf.chunks_mut(16) {
            let r = uuid::Uuid::new_v4();
            let bytes = r.as_bytes();
            chunk.copy_from_slice(&bytes[..chunk.len()]);
        }
    }

    fn uid(&self) -> uuid::Uuid {
        time_ordered_uuid(Utc::now().timestamp_millis(), self)
    }
}

/// A version 7 UUID for `unix_millis` (clamped at 0) with random bits from `entropy`.
pub fn time_ordered_uuid(unix_millis: i64, entropy: &dyn Entropy) -> uuid::Uuid {
    let mut b = [0u8; 16];
    entropy.fill(&mut b[6..]);
    let ms = u64::try_from(unix_millis).unwrap_or(0).to_be_bytes();
    b[..6].copy_from_slice(&ms[2..]);
    b[6] = (b[6] & 0x0F) | 0x70; // version 7
    b[8] = (b[8] & 0x3F) | 0x80; // RFC 4122 variant
    uuid::Uuid::from_bytes(b)
}

/// A clock that stands still until [`FixedClock::set`] or [`FixedClock::advance`] moves it.
#[derive(Debug)]
pub struct FixedClock {
    millis: AtomicI64,
}

impl FixedClock {
    /// A clock reading `at`.
    pub fn new(at: DateTime<Utc>) -> Self {
        FixedClock {
            millis: AtomicI64::new(at.timestamp_millis()),
        }
    }

    /// The default test instant, 2026-01-01T12:00:00Z.
    pub fn default_instant() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 1, 1, 12, 0, 0)
            .single()
            .unwrap_or_default()
    }

    /// Set the time.
    pub fn set(&self, at: DateTime<Utc>) {
        self.millis.store(at.timestamp_millis(), Ordering::SeqCst);
    }

    /// Move the time forward by `secs` seconds.
    pub fn advance(&self, secs: i64) {
        self.millis.fetch_add(secs * 1000, Ordering::SeqCst);
    }
}

impl Default for FixedClock {
    fn default() -> Self {
        Self::new(Self::default_instant())
    }
}

impl Clock for FixedClock {
    fn now(&self) -> DateTime<Utc> {
        Utc.timestamp_millis_opt(self.millis.load(Ordering::SeqCst))
            .single()
            .unwrap_or_default()
    }
}

/// Deterministic pseudo-randomness (splitmix64) for tests. Never use it in production.
#[derive(Debug)]
pub struct SeededEntropy {
    state: AtomicU64,
}

impl SeededEntropy {
    /// A generator starting from `seed`.
    pub fn new(seed: u64) -> Self {
        SeededEntropy {
            state: AtomicU64::new(seed),
        }
    }
}

impl Entropy for SeededEntropy {
    fn fill(&self, buf: &mut [u8]) {
        for chunk in buf.chunks_mut(8) {
            let s = self
                .state
                .fetch_add(0x9E37_79B9_7F4A_7C15, Ordering::SeqCst)
                .wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = s;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^= z >> 31;
            chunk.copy_from_slice(&z.to_le_bytes()[..chunk.len()]);
        }
    }
}

/// Format a timestamp the way the API does: `2026-01-01T12:00:00+00:00`.
pub fn iso(t: &DateTime<Utc>) -> String {
    t.format("%Y-%m-%dT%H:%M:%S+00:00").to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeded_entropy_is_repeatable() {
        let a = SeededEntropy::new(7);
        let b = SeededEntropy::new(7);
        assert_eq!(a.uuid(), b.uuid());
        assert_ne!(a.uuid(), SeededEntropy::new(8).uuid());
    }

    #[test]
    fn fixed_clock_advances() {
        let c = FixedClock::default();
        let t0 = c.now();
        c.advance(90);
        assert_eq!((c.now() - t0).num_seconds(), 90);
        assert_eq!(iso(&t0), "2026-01-01T12:00:00+00:00");
    }

    #[test]
    fn time_ordered_uuids_sort_by_their_millisecond() {
        let e = SeededEntropy::new(1);
        let a = time_ordered_uuid(1_700_000_000_000, &e);
        let b = time_ordered_uuid(1_700_000_000_001, &e);
        assert_eq!(a.get_version_num(), 7);
        assert_eq!(a.get_variant(), uuid::Variant::RFC4122);
        assert!(a.simple().to_string() < b.simple().to_string());
        assert_ne!(
            time_ordered_uuid(5, &e),
            time_ordered_uuid(5, &e),
            "random bits differ within a millisecond"
        );
        // The timestamp reads back (uuid's own v7 decoding).
        let (secs, nanos) = a.get_timestamp().expect("v7 has a timestamp").to_unix();
        assert_eq!((secs, nanos), (1_700_000_000, 0));
        // Production ids are time-ordered; lock tokens and the like stay fully random.
        assert_eq!(SystemEntropy.uid().get_version_num(), 7);
        assert_eq!(SystemEntropy.uuid().get_version_num(), 4);
    }
}
