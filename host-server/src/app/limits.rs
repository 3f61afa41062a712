//! Budgets that keep one client (or anonymous clients together) from holding what the others
//! need: connections per client address ([`PerAddress`], used by the server's accept loop) and
//! open change-feed event streams ([`StreamBudget`]: in total, per address, and for anonymous
//! callers together). A permit is released when it is dropped (the connection closes, the
//! stream's body is dropped).

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex, PoisonError};

use engine::EngineError;

/// How many things (connections, streams) each client address holds, up to a limit per address.
#[derive(Debug)]
pub struct PerAddress {
    limit: usize,
    held: Mutex<HashMap<IpAddr, usize>>,
}

/// One thing an address holds ([`PerAddress::try_take`]); given back when dropped.
#[derive(Debug)]
pub struct AddressPermit {
    from: Arc<PerAddress>,
    addr: IpAddr,
}

impl PerAddress {
    /// At most `limit` things per address.
    pub fn new(limit: usize) -> Arc<Self> {
        Arc::new(PerAddress {
            limit,
            held: Mutex::new(HashMap::new()),
        })
    }

    /// One more for `addr`, unless it holds its limit already.
    pub fn try_take(self: &Arc<Self>, addr: IpAddr) -> Option<AddressPermit> {
        let mut held = self.held.lock().unwrap_or_else(PoisonError::into_inner);
        let n = held.entry(addr).or_insert(0);
        if *n >= self.limit {
            return None;
        }
        *n += 1;
        Some(AddressPermit {
            from: self.clone(),
            addr,
        })
    }

    /// How many `addr` holds now.
    #[cfg(test)]
    fn held(&self, addr: IpAddr) -> usize {
        let held = self.held.lock().unwrap_or_else(PoisonError::into_inner);
        held.get(&addr).copied().unwrap_or(0)
    }
}

impl Drop for AddressPermit {
    fn drop(&mut self) {
        let mut held = self
            .from
            .held
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(n) = held.get_mut(&self.addr) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                held.remove(&self.addr);
            }
        }
    }
}

/// The limits of open event streams.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamLimits {
    /// Open streams in all.
    pub total: usize,
    /// Open streams per client address.
    pub per_address: usize,
    /// Open streams of anonymous callers, in all (0: anonymous streams are refused).
    pub anonymous: usize,
}

impl Default for StreamLimits {
    fn default() -> Self {
        StreamLimits {
            total: 256,
            per_address: 8,
            anonymous: 32,
        }
    }
}

/// How long a refused client is told to wait: a stream lasts at most
/// [`engine::CHANGE_STREAM_LIFETIME`], but most end sooner; a minute is a fair guess.
const RETRY_AFTER: u64 = 60;

/// The open event streams, against [`StreamLimits`].
#[derive(Debug)]
pub struct StreamBudget {
    limits: StreamLimits,
    per_address: Arc<PerAddress>,
    counts: Mutex<Counts>,
}

#[derive(Debug, Default)]
struct Counts {
    total: usize,
    anonymous: usize,
}

/// One open stream ([`StreamBudget::try_open`]); given back when dropped.
#[derive(Debug)]
pub struct StreamPermit {
    budget: Arc<StreamBudget>,
    anonymous: bool,
    _address: Option<AddressPermit>,
}

impl StreamBudget {
    /// A budget of `limits`.
    pub fn new(limits: StreamLimits) -> Arc<Self> {
        Arc::new(StreamBudget {
            limits,
            per_address: PerAddress::new(limits.per_address),
            counts: Mutex::new(Counts::default()),
        })
    }

    /// A permit for one more stream from `addr` (unknown in in-process tests), by an anonymous
    /// caller or not; the engine's 429 when a budget is used up.
    pub fn try_open(
        self: &Arc<Self>,
        addr: Option<IpAddr>,
        anonymous: bool,
    ) -> Result<StreamPermit, EngineError> {
        let refuse = |limit: &str| EngineError::TooManyStreams {
            limit: limit.to_string(),
            retry_after: RETRY_AFTER,
        };
        let mut counts = self.counts.lock().unwrap_or_else(PoisonError::into_inner);
        if counts.total >= self.limits.total {
            return Err(refuse("on this server"));
        }
        if anonymous && counts.anonymous >= self.limits.anonymous {
            return Err(refuse(
                "of anonymous clients on this server (log in to follow the change feed)",
            ));
        }
        let address = match addr {
            Some(a) => Some(
                self.per_address
                    .try_take(a)
                    .ok_or_else(|| refuse("from this address"))?,
            ),
            None => None,
        };
        counts.total += 1;
        counts.anonymous += usize::from(anonymous);
        crate::metrics::streams(1);
        Ok(StreamPermit {
            budget: self.clone(),
            anonymous,
            _address: address,
        })
    }
}

impl Drop for StreamPermit {
    fn drop(&mut self) {
        let mut counts = self
            .budget
            .counts
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        counts.total = counts.total.saturating_sub(1);
        crate::metrics::streams(-1);
        if self.anonymous {
            counts.anonymous = counts.anonymous.saturating_sub(1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(192, 0, 2, 1));
    const B: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(192, 0, 2, 2));

    #[test]
    fn an_address_holds_at_most_its_limit_and_gets_permits_back() {
        let per = PerAddress::new(2);
        let one = per.try_take(A);
        let two = per.try_take(A);
        assert!(one.is_some() && two.is_some());
        assert!(per.try_take(A).is_none());
        assert!(per.try_take(B).is_some(), "another address is not held up");
        drop(one);
        assert_eq!(per.held(A), 1);
        assert!(per.try_take(A).is_some());
    }

    #[test]
    fn streams_are_budgeted_per_address_for_anonymous_callers_and_in_all() {
        let budget = StreamBudget::new(StreamLimits {
            total: 3,
            per_address: 2,
            anonymous: 1,
        });
        let anon = budget.try_open(Some(A), true);
        assert!(anon.is_ok());
        let refused = budget.try_open(Some(B), true);
        assert!(
            matches!(&refused, Err(EngineError::TooManyStreams { limit, .. }) if limit.contains("anonymous")),
            "{refused:?}"
        );
        let second = budget.try_open(Some(A), false);
        assert!(second.is_ok());
        let third = budget.try_open(Some(A), false);
        assert!(
            matches!(&third, Err(EngineError::TooManyStreams { limit, .. }) if limit.contains("address")),
            "{third:?}"
        );
        let other = budget.try_open(Some(B), false);
        assert!(other.is_ok());
        assert!(
            budget.try_open(None, false).is_err(),
            "the total is used up"
        );
        drop(anon);
        assert!(budget.try_open(Some(B), true).is_ok());
        let none = StreamBudget::new(StreamLimits {
            anonymous: 0,
            ..StreamLimits::default()
        });
        assert!(none.try_open(Some(A), true).is_err());
    }
}
