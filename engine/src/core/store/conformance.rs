//! The store conformance suite: the contract of the [module documentation](super), checked on any
//! [`Store`]. Cargo feature `conformance`.
//!
//! Each property is one function taking a factory of fresh, empty stores (it may call it more
//! than once); [`run_all`] runs them all. A property that does not hold panics with a message
//! that starts with `store conformance:`, names the property and says what was seen, so a backend's
//! test is one line:
//!
//! ```ignore
//! #[test]
//! fn mem_store_conforms() {
//!     engine::store::conformance::run_all(engine::MemStore::new);
//! }
//! ```
//!
//! The properties that need threads (concurrent writers, commits seen whole by concurrent readers,
//! readers not blocked by a writer on another thread) exist on native targets only; on wasm32 the
//! single-threaded forms of the latter two run instead.

use std::collections::BTreeMap;

use super::{prefix_end, Direction, KeyValue, ReadTxn, Store, StoreError, WriteTxn};

/// How often a transaction that failed with [`StoreError::Conflict`] is retried before the suite
/// gives up (an optimistic backend that never lets a writer through is broken too).
pub const MAX_ATTEMPTS: usize = 10_000;

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

/// Panic with the suite's message format.
fn fail(property: &str, what: std::fmt::Arguments<'_>) -> ! {
    panic!("store conformance: {property}: {what}")
}

macro_rules! check {
    ($prop:expr, $cond:expr, $($what:tt)+) => {
        if !$cond {
            fail($prop, format_args!($($what)+))
        }
    };
}

/// The value of `r`, or a failure naming the operation.
fn ok<T>(property: &str, op: &str, r: Result<T, StoreError>) -> T {
    match r {
        Ok(v) => v,
        Err(e) => fail(property, format_args!("{op} failed: {e}")),
    }
}

/// Short printable form of a key or value (long ones are cut).
fn show(bytes: &[u8]) -> String {
    let mut s: String = bytes
        .iter()
        .take(40)
        .flat_map(|b| std::ascii::escape_default(*b))
        .map(char::from)
        .collect();
    if bytes.len() > 40 {
        s.push_str(&format!("...({} bytes)", bytes.len()));
    }
    format!("\"{s}\"")
}

fn show_opt(bytes: Option<&[u8]>) -> String {
    bytes.map_or_else(|| "absent".to_string(), show)
}

fn show_rows(rows: &[KeyValue]) -> String {
    let items: Vec<String> = rows
        .iter()
        .map(|(k, v)| format!("{}={}", show(k), show(v)))
        .collect();
    format!("[{}]", items.join(", "))
}

/// Run `body` in a write transaction and commit it, retrying on [`StoreError::Conflict`].
fn write<S: Store + ?Sized>(
    property: &str,
    store: &S,
    mut body: impl FnMut(&mut dyn WriteTxn) -> Result<(), StoreError>,
) {
    for _ in 0..MAX_ATTEMPTS {
        let attempt = store.begin_write().and_then(|mut w| {
            body(w.as_mut())?;
            w.commit()
        });
        match attempt {
            Ok(()) => return,
            Err(StoreError::Conflict(_)) => continue,
            Err(e) => fail(property, format_args!("a write transaction failed: {e}")),
        }
    }
    fail(
        property,
        format_args!("a write transaction kept conflicting ({MAX_ATTEMPTS} attempts)"),
    )
}

/// Commit `pairs` (put) into `store` in one transaction.
fn fill<S: Store + ?Sized>(property: &str, store: &S, pairs: &[(&[u8], &[u8])]) {
    write(property, store, |w| {
        for (k, v) in pairs {
            w.put(k, v)?;
        }
        Ok(())
    });
}

/// What a correct store returns for `scan(start, end, dir, limit)` over `model`.
fn model_scan(
    model: &Model,
    start: &[u8],
    end: &[u8],
    dir: Direction,
    limit: usize,
) -> Vec<KeyValue> {
    let in_range = model
        .iter()
        .filter(|(k, _)| k.as_slice() >= start && (end.is_empty() || k.as_slice() < end))
        .map(|(k, v)| (k.clone(), v.clone()));
    match dir {
        Direction::Forward => in_range.take(limit).collect(),
        Direction::Reverse => {
            let all: Vec<KeyValue> = in_range.collect();
            all.into_iter().rev().take(limit).collect()
        }
    }
}

/// Every get and every scan of `txn` over a grid of bounds, directions and limits equals `model`.
fn check_against_model<T: ReadTxn + ?Sized>(
    property: &str,
    txn: &T,
    model: &Model,
    probes: &[Vec<u8>],
) {
    for k in probes {
        let got = ok(property, "get", txn.get(k));
        let want = model.get(k).cloned();
        check!(
            property,
            got == want,
            "get({}) returned {}, expected {}",
            show(k),
            show_opt(got.as_deref()),
            show_opt(want.as_deref())
        );
    }
    let n = model.len();
    let limits = [0, 1, 2, 3, n.saturating_sub(1), n, n + 1, usize::MAX];
    let mut bounds: Vec<&[u8]> = vec![b""];
    bounds.extend(probes.iter().map(Vec::as_slice));
    for start in &bounds {
        for end in &bounds {
            for dir in [Direction::Forward, Direction::Reverse] {
                for &limit in &limits {
                    let got = ok(property, "scan", txn.scan(start, end, dir, limit));
                    let want = model_scan(model, start, end, dir, limit);
                    check!(
                        property,
                        got == want,
                        "scan(start {}, end {}, {dir:?}, limit {limit}) returned {}, expected {}",
                        show(start),
                        show(end),
                        show_rows(&got),
                        show_rows(&want)
                    );
                }
            }
        }
    }
}

/// Keys that exercise the order: prefixes before extensions, bytes sorting as unsigned, 0x00 and
/// 0xFF at both ends and inside.
fn tricky_keys() -> Vec<Vec<u8>> {
    vec![
        vec![0x00],
        vec![0x00, 0x00],
        vec![0x00, 0xFF],
        vec![0x01],
        b"a".to_vec(),
        b"a\x00".to_vec(),
        b"a\x00\x00".to_vec(),
        b"a\x01".to_vec(),
        b"ab".to_vec(),
        b"a\x7F".to_vec(),
        b"a\x80".to_vec(),
        b"a\xFF".to_vec(),
        b"b".to_vec(),
        b"o:1".to_vec(),
        b"o:10".to_vec(),
        b"o:2".to_vec(),
        vec![0x7F],
        vec![0x80],
        vec![0xFE, 0xFF],
        vec![0xFF],
        vec![0xFF, 0x00],
        vec![0xFF, 0xFF],
        vec![0xFF, 0xFF, 0xFF],
    ]
}

/// Probe keys: the stored ones plus keys between and around them (used as get keys and bounds).
fn probes(keys: &[Vec<u8>]) -> Vec<Vec<u8>> {
    let mut out: Vec<Vec<u8>> = keys.to_vec();
    out.extend([
        b"a\x00\x01".to_vec(),
        b"aa".to_vec(),
        b"c".to_vec(),
        b"o:".to_vec(),
        vec![0x00, 0x01],
        vec![0xFF, 0x01],
        vec![0xFF, 0xFF, 0xFF, 0xFF],
    ]);
    out
}

/// A reader sees one snapshot: what was committed before it began, nothing committed later, in
/// every get and scan, however many commits happen while it is open (also one that read nothing
/// before the commits, and one begun while a write transaction was open).
pub fn snapshot_isolation<S: Store>(new_store: impl Fn() -> S) {
    const P: &str = "snapshot isolation";
    let store = new_store();
    fill(P, &store, &[(b"k1", b"v1"), (b"k2", b"v2"), (b"k3", b"v3")]);
    let before: Model = [
        (b"k1".to_vec(), b"v1".to_vec()),
        (b"k2".to_vec(), b"v2".to_vec()),
        (b"k3".to_vec(), b"v3".to_vec()),
    ]
    .into_iter()
    .collect();
    let probe: Vec<Vec<u8>> = ["k0", "k1", "k2", "k3", "k4", "k9"]
        .iter()
        .map(|k| k.as_bytes().to_vec())
        .collect();

    let early = ok(P, "begin_read", store.begin_read());
    check_against_model(P, early.as_ref(), &before, &probe);
    let untouched = ok(P, "begin_read", store.begin_read());

    let during = {
        let mut w = ok(P, "begin_write", store.begin_write());
        ok(P, "put", w.put(b"k1", b"new"));
        ok(P, "delete", w.delete(b"k2"));
        ok(P, "put", w.put(b"k4", b"new"));
        ok(P, "put", w.put(b"k0", b"new"));
        // a reader begun while the write transaction is open sees the state before it
        let during = ok(P, "begin_read", store.begin_read());
        check_against_model(P, during.as_ref(), &before, &probe);
        ok(P, "commit", w.commit());
        during
    };
    // more commits, also over keys the readers have read and scanned
    fill(P, &store, &[(b"k3", b"newer"), (b"k9", b"newer")]);
    write(P, &store, |w| {
        w.delete(b"k1")?;
        w.delete(b"k3")
    });

    for (name, r) in [
        ("reader that read before the commits", &early),
        ("reader that read nothing before the commits", &untouched),
        ("reader begun while a write transaction was open", &during),
    ] {
        for k in &probe {
            let got = ok(P, "get", r.get(k));
            check!(
                P,
                got == before.get(k).cloned(),
                "{name}: get({}) returned {} after later commits, expected {}",
                show(k),
                show_opt(got.as_deref()),
                show_opt(before.get(k).map(Vec::as_slice))
            );
        }
        check_against_model(P, r.as_ref(), &before, &probe);
    }

    let after: Model = [
        (b"k0".to_vec(), b"new".to_vec()),
        (b"k4".to_vec(), b"new".to_vec()),
        (b"k9".to_vec(), b"newer".to_vec()),
    ]
    .into_iter()
    .collect();
    let late = ok(P, "begin_read", store.begin_read());
    check_against_model(P, late.as_ref(), &after, &probe);
    drop((early, untouched, during));
    check_against_model(P, late.as_ref(), &after, &probe);
    let last = ok(P, "begin_read", store.begin_read());
    check_against_model(P, last.as_ref(), &after, &probe);
}

/// A write transaction reads its own writes: gets and scans (both directions, with limits) see
/// its puts and deletes over the committed state, the last write of a key winning, and a deleted
/// key never takes a place within a scan's limit. Committing makes exactly that state visible.
pub fn read_your_own_writes<S: Store>(new_store: impl Fn() -> S) {
    const P: &str = "read your own writes";
    let store = new_store();
    let base: Vec<(Vec<u8>, Vec<u8>)> = ["a", "b", "c", "d", "e", "f", "g"]
        .iter()
        .map(|k| (k.as_bytes().to_vec(), format!("base-{k}").into_bytes()))
        .collect();
    write(P, &store, |w| {
        for (k, v) in &base {
            w.put(k, v)?;
        }
        Ok(())
    });
    let mut model: Model = base.into_iter().collect();
    let probe: Vec<Vec<u8>> = ["", "a", "aa", "b", "c", "cc", "d", "e", "f", "g", "h", "z"]
        .iter()
        .filter(|k| !k.is_empty())
        .map(|k| k.as_bytes().to_vec())
        .collect();

    let mut w = ok(P, "begin_write", store.begin_write());
    check_against_model(P, w.as_ref(), &model, &probe);
    let mut steps: Vec<(&[u8], Option<&[u8]>)> = vec![
        (b"a", None),              // delete the first key
        (b"b", None),              // and the second: a limit-2 forward scan must skip both
        (b"c", Some(b"mine-c")),   // overwrite
        (b"cc", Some(b"mine-cc")), // insert between existing keys
        (b"h", Some(b"mine-h")),   // insert after the last key
        (b"zz", None),             // delete an absent key
        (b"e", Some(b"first")),    // put then delete
        (b"e", None),              //
        (b"f", None),              // delete then put
        (b"f", Some(b"again")),    //
        (b"g", Some(b"")),         // empty value over an existing one
        (b"aa", Some(b"x")),       // put, put again
        (b"aa", Some(b"mine-aa")), //
    ];
    for (i, (k, v)) in steps.drain(..).enumerate() {
        match v {
            Some(v) => {
                ok(P, "put", w.put(k, v));
                model.insert(k.to_vec(), v.to_vec());
            }
            None => {
                ok(P, "delete", w.delete(k));
                model.remove(k);
            }
        }
        let got = ok(P, "get", w.get(k));
        check!(
            P,
            got.as_deref() == v,
            "step {i}: get({}) right after writing it returned {}, expected {}",
            show(k),
            show_opt(got.as_deref()),
            show_opt(v)
        );
        if i % 4 == 3 {
            check_against_model(P, w.as_ref(), &model, &probe);
        }
    }
    check_against_model(P, w.as_ref(), &model, &probe);
    let first_two = ok(P, "scan", w.scan(b"", b"", Direction::Forward, 2));
    check!(
        P,
        first_two
            == vec![
                (b"aa".to_vec(), b"mine-aa".to_vec()),
                (b"c".to_vec(), b"mine-c".to_vec())
            ],
        "forward scan with limit 2 after deleting the first two keys returned {}",
        show_rows(&first_two)
    );
    ok(P, "commit", w.commit());
    let r = ok(P, "begin_read", store.begin_read());
    check_against_model(P, r.as_ref(), &model, &probe);
}

/// Dropping a write transaction without committing discards every write (puts, overwrites and
/// deletes), also when the transaction ends by a panic (native targets), and the store accepts
/// the next writer afterwards. Committing a transaction that wrote nothing changes nothing.
pub fn rollback_on_drop<S: Store>(new_store: impl Fn() -> S) {
    const P: &str = "rollback on drop";
    let store = new_store();
    fill(P, &store, &[(b"keep", b"1"), (b"gone?", b"2")]);
    let model: Model = [
        (b"gone?".to_vec(), b"2".to_vec()),
        (b"keep".to_vec(), b"1".to_vec()),
    ]
    .into_iter()
    .collect();
    let probe: Vec<Vec<u8>> = vec![b"gone?".to_vec(), b"keep".to_vec(), b"new".to_vec()];
    {
        let mut w = ok(P, "begin_write", store.begin_write());
        ok(P, "put", w.put(b"keep", b"changed"));
        ok(P, "delete", w.delete(b"gone?"));
        ok(P, "put", w.put(b"new", b"3"));
        // dropped here without commit
    }
    let r = ok(P, "begin_read", store.begin_read());
    check_against_model(P, r.as_ref(), &model, &probe);
    drop(r);
    {
        let w = ok(P, "begin_write", store.begin_write());
        check_against_model(P, w.as_ref(), &model, &probe);
        ok(P, "commit of an empty transaction", w.commit());
    }
    let r = ok(P, "begin_read", store.begin_read());
    check_against_model(P, r.as_ref(), &model, &probe);
    drop(r);

    #[cfg(not(target_arch = "wasm32"))]
    {
        let unwound = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            if let Ok(mut w) = store.begin_write() {
                let _ = w.put(b"keep", b"panicked");
                let _ = w.put(b"new", b"panicked");
                panic!("store conformance: a deliberate panic inside a write transaction");
            }
        }));
        check!(
            P,
            unwound.is_err(),
            "begin_write failed before the deliberate panic"
        );
        let r = ok(P, "begin_read after a panicking writer", store.begin_read());
        check_against_model(P, r.as_ref(), &model, &probe);
    }

    // the store still takes writes
    fill(P, &store, &[(b"new", b"4")]);
    let r = ok(P, "begin_read", store.begin_read());
    let got = ok(P, "get", r.get(b"new"));
    check!(
        P,
        got.as_deref() == Some(&b"4"[..]),
        "a commit after rolled-back writers left get(\"new\") = {}",
        show_opt(got.as_deref())
    );
}

/// A commit is all or nothing for readers: one writing many keys (puts over existing keys, new
/// keys, deletes) is seen entirely by readers begun after it and not at all by readers begun
/// before. On native targets also with readers on other threads checking every snapshot while a
/// writer commits round after round.
pub fn commit_atomicity<S: Store>(new_store: impl Fn() -> S) {
    const P: &str = "commit atomicity";
    let store = new_store();
    let keys: Vec<Vec<u8>> = (0..300).map(|i| format!("k{i:04}").into_bytes()).collect();
    write(P, &store, |w| {
        for k in &keys {
            w.put(k, b"round-0")?;
        }
        Ok(())
    });
    let old: Model = keys
        .iter()
        .map(|k| (k.clone(), b"round-0".to_vec()))
        .collect();
    let before = ok(P, "begin_read", store.begin_read());
    let mut new = old.clone();
    write(P, &store, |w| {
        for (i, k) in keys.iter().enumerate() {
            match i % 3 {
                0 => w.delete(k)?,
                _ => w.put(k, b"round-1")?,
            }
        }
        w.put(b"k9999", b"round-1")
    });
    for (i, k) in keys.iter().enumerate() {
        if i % 3 == 0 {
            new.remove(k);
        } else {
            new.insert(k.clone(), b"round-1".to_vec());
        }
    }
    new.insert(b"k9999".to_vec(), b"round-1".to_vec());
    let all = |r: &dyn ReadTxn| ok(P, "scan", r.scan(b"", b"", Direction::Forward, usize::MAX));
    let seen = all(before.as_ref());
    check!(
        P,
        seen == model_scan(&old, b"", b"", Direction::Forward, usize::MAX),
        "a reader begun before a 301-key commit saw {} pairs, {} of them from the commit",
        seen.len(),
        seen.iter().filter(|(_, v)| v == b"round-1").count()
    );
    let after = ok(P, "begin_read", store.begin_read());
    let seen = all(after.as_ref());
    check!(
        P,
        seen == model_scan(&new, b"", b"", Direction::Forward, usize::MAX),
        "a reader begun after a 301-key commit saw {} pairs ({} from the commit), expected {}",
        seen.len(),
        seen.iter().filter(|(_, v)| v == b"round-1").count(),
        new.len()
    );
}

/// Scans return `start <= key < end` (empty `end`: unbounded; empty `start`: from the first
/// key), in ascending or descending order, the first `limit` in that order; limit 0, empty and
/// inverted ranges return nothing. Checked against a model for every pair of bounds from a set of
/// stored and unstored keys, in read and write transactions, including keys at 0x00 and 0xFF.
pub fn scan_order_and_limits<S: Store>(new_store: impl Fn() -> S) {
    const P: &str = "scan order, bounds and limits";
    let store = new_store();
    let keys = tricky_keys();
    // write them out of order, in two transactions
    let (odd, even): (Vec<_>, Vec<_>) = keys.iter().enumerate().partition(|(i, _)| i % 2 == 1);
    for half in [odd, even] {
        write(P, &store, |w| {
            for (i, k) in half.iter().rev() {
                w.put(k, format!("v{i}").as_bytes())?;
            }
            Ok(())
        });
    }
    let model: Model = keys
        .iter()
        .enumerate()
        .map(|(i, k)| (k.clone(), format!("v{i}").into_bytes()))
        .collect();
    let probe = probes(&keys);
    let r = ok(P, "begin_read", store.begin_read());
    check_against_model(P, r.as_ref(), &model, &probe);
    drop(r);
    let w = ok(P, "begin_write", store.begin_write());
    check_against_model(P, w.as_ref(), &model, &probe);
    drop(w);
    let empty = new_store();
    let r = ok(P, "begin_read", empty.begin_read());
    check_against_model(P, r.as_ref(), &Model::new(), &probe);
}

/// Keys and values are arbitrary bytes: every single-byte key 0x00..=0xFF, keys made of 0x00 or
/// 0xFF only, values holding every byte, and the empty value (present, not absent); prefix scans
/// bounded by [`prefix_end`], also for prefixes ending in 0xFF or made of 0xFF only (unbounded).
pub fn arbitrary_bytes<S: Store>(new_store: impl Fn() -> S) {
    const P: &str = "arbitrary byte keys and values";
    let store = new_store();
    let all_bytes: Vec<u8> = (0..=255u8).collect();
    let mut model = Model::new();
    for b in 0..=255u8 {
        model.insert(vec![b], vec![b, 0x00, 0xFF, b]);
    }
    for k in [
        vec![0x00, 0x00, 0x00],
        vec![0xFF, 0xFF],
        vec![0xFF, 0xFF, 0x00],
        vec![0x61, 0x00],
        vec![0x61, 0xFF, 0xFF],
        vec![0x61, 0xFF, 0xFF, 0x01],
        vec![0x62],
    ] {
        model.insert(k, all_bytes.clone());
    }
    model.insert(b"empty".to_vec(), Vec::new());
    write(P, &store, |w| {
        for (k, v) in &model {
            w.put(k, v)?;
        }
        Ok(())
    });
    let r = ok(P, "begin_read", store.begin_read());
    for (k, v) in &model {
        let got = ok(P, "get", r.get(k));
        check!(
            P,
            got.as_ref() == Some(v),
            "get({}) returned {}, expected {}",
            show(k),
            show_opt(got.as_deref()),
            show(v)
        );
    }
    let all = ok(P, "scan", r.scan(b"", b"", Direction::Forward, usize::MAX));
    check!(
        P,
        all == model_scan(&model, b"", b"", Direction::Forward, usize::MAX),
        "a full scan returned {} pairs, expected {} in bytewise order; first keys {}",
        all.len(),
        model.len(),
        show_rows(&all[..all.len().min(4)])
    );
    for prefix in [
        &[0x00][..],
        &[0x61],
        &[0x61, 0xFF],
        &[0x61, 0xFF, 0xFF],
        &[0xFF],
        &[0xFF, 0xFF],
        &[0xFE],
    ] {
        let end = prefix_end(prefix);
        let want: Vec<KeyValue> = model
            .iter()
            .filter(|(k, _)| k.starts_with(prefix))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        for dir in [Direction::Forward, Direction::Reverse] {
            let got = ok(P, "scan", r.scan(prefix, &end, dir, usize::MAX));
            let mut want = want.clone();
            if dir == Direction::Reverse {
                want.reverse();
            }
            check!(
                P,
                got == want,
                "prefix scan of {} ({dir:?}, end {}) returned {}, expected {}",
                show(prefix),
                show(&end),
                show_rows(&got),
                show_rows(&want)
            );
        }
    }
    let empty = ok(P, "get", r.get(b"empty"));
    check!(
        P,
        empty == Some(Vec::new()),
        "the empty value read back as {} (must be present and empty)",
        show_opt(empty.as_deref())
    );
}

/// Values of several MiB read back byte for byte (also after being overwritten by a small value
/// and back), and many keys written in one transaction are all there, in order.
pub fn large_values_and_many_keys<S: Store>(new_store: impl Fn() -> S) {
    const P: &str = "large values and many keys";
    let store = new_store();
    let big = |len: usize, seed: u32| -> Vec<u8> {
        let mut x = seed.wrapping_mul(2_654_435_761).max(1);
        (0..len)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                (x >> 24) as u8
            })
            .collect()
    };
    let three = big(3 << 20, 1);
    let five = big(5 << 20, 2);
    fill(
        P,
        &store,
        &[(b"big3", &three), (b"big5", &five), (b"small", b"s")],
    );
    let check_big = |what: &str, key: &[u8], want: &[u8]| {
        let r = ok(P, "begin_read", store.begin_read());
        let got = ok(P, "get", r.get(key));
        check!(
            P,
            got.as_deref() == Some(want),
            "{what}: get({}) returned {} bytes{}, expected {} bytes",
            show(key),
            got.as_ref().map_or(0, Vec::len),
            if got.is_none() { " (absent)" } else { "" },
            want.len()
        );
        let rows = ok(
            P,
            "scan",
            r.scan(key, &prefix_end(key), Direction::Forward, 1),
        );
        check!(
            P,
            rows.len() == 1 && rows[0].1 == want,
            "{what}: a scan of {} returned {} rows with {} bytes",
            show(key),
            rows.len(),
            rows.first().map_or(0, |r| r.1.len())
        );
    };
    check_big("after commit", b"big3", &three);
    check_big("after commit", b"big5", &five);
    fill(P, &store, &[(b"big5", b"tiny")]);
    check_big("overwritten by a small value", b"big5", b"tiny");
    fill(P, &store, &[(b"big5", &five)]);
    check_big("written again", b"big5", &five);

    let many = new_store();
    const N: usize = 20_000;
    write(P, &many, |w| {
        for i in (0..N).rev() {
            w.put(format!("m:{i:06}").as_bytes(), format!("{i}").as_bytes())?;
        }
        Ok(())
    });
    let r = ok(P, "begin_read", many.begin_read());
    let rows = ok(
        P,
        "scan",
        r.scan(b"m:", b"m;", Direction::Forward, usize::MAX),
    );
    check!(
        P,
        rows.len() == N,
        "{N} keys written, a scan returned {}",
        rows.len()
    );
    for (i, (k, v)) in rows.iter().enumerate() {
        check!(
            P,
            *k == format!("m:{i:06}").into_bytes() && *v == format!("{i}").into_bytes(),
            "row {i} of {N} is {}={}",
            show(k),
            show(v)
        );
    }
    let last = ok(P, "scan", r.scan(b"m:", b"m;", Direction::Reverse, 3));
    let want: Vec<KeyValue> = (N - 3..N)
        .rev()
        .map(|i| {
            (
                format!("m:{i:06}").into_bytes(),
                format!("{i}").into_bytes(),
            )
        })
        .collect();
    check!(
        P,
        last == want,
        "a reverse scan with limit 3 over {N} keys returned {}",
        show_rows(&last)
    );
    let mid = ok(P, "get", r.get(format!("m:{:06}", N / 2).as_bytes()));
    check!(
        P,
        mid == Some(format!("{}", N / 2).into_bytes()),
        "get of a middle key among {N} returned {}",
        show_opt(mid.as_deref())
    );
}

/// Opening and using a read transaction does not wait for an open write transaction, and sees the
/// state before it. On native targets the reader runs on another thread while this one holds the
/// write transaction (a reader blocked for 30 s fails the property); on wasm32 in the same thread.
pub fn reader_not_blocked_by_writer<S: Store + ReaderNotBlockedBound>(new_store: impl Fn() -> S) {
    const P: &str = "reader not blocked by an open writer";
    let store = new_store();
    fill(P, &store, &[(b"x", b"old")]);
    let mut w = ok(P, "begin_write", store.begin_write());
    ok(P, "put", w.put(b"x", b"new"));
    ok(P, "put", w.put(b"y", b"new"));

    #[cfg(not(target_arch = "wasm32"))]
    let seen = {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::scope(|scope| {
            let store = &store;
            scope.spawn(move || {
                let read = store.begin_read().and_then(|r| {
                    Ok((
                        r.get(b"x")?,
                        r.scan(b"", b"", Direction::Forward, usize::MAX)?,
                    ))
                });
                let _ = tx.send(read);
            });
            match rx.recv_timeout(std::time::Duration::from_secs(30)) {
                Ok(read) => ok(P, "read on another thread", read),
                Err(_) => {
                    // end the writer so that the blocked reader can finish and the scope ends
                    drop(w);
                    fail(
                        P,
                        format_args!(
                            "a reader on another thread did not finish within 30 s while a write transaction was open"
                        ),
                    )
                }
            }
        })
    };
    #[cfg(target_arch = "wasm32")]
    let seen = {
        let r = ok(P, "begin_read", store.begin_read());
        (
            ok(P, "get", r.get(b"x")),
            ok(P, "scan", r.scan(b"", b"", Direction::Forward, usize::MAX)),
        )
    };
    check!(
        P,
        seen.0.as_deref() == Some(&b"old"[..]) && seen.1 == vec![(b"x".to_vec(), b"old".to_vec())],
        "a reader during an open write transaction saw get(\"x\") = {} and scan {}",
        show_opt(seen.0.as_deref()),
        show_rows(&seen.1)
    );
}

/// What [`reader_not_blocked_by_writer`] needs of a store: `Sync` on native targets (the reader
/// runs on another thread), nothing on wasm32.
#[cfg(not(target_arch = "wasm32"))]
pub trait ReaderNotBlockedBound: Sync {}
#[cfg(not(target_arch = "wasm32"))]
impl<T: Sync + ?Sized> ReaderNotBlockedBound for T {}
/// What [`reader_not_blocked_by_writer`] needs of a store: `Sync` on native targets (the reader
/// runs on another thread), nothing on wasm32.
#[cfg(target_arch = "wasm32")]
pub trait ReaderNotBlockedBound {}
#[cfg(target_arch = "wasm32")]
impl<T: ?Sized> ReaderNotBlockedBound for T {}

/// Decode a counter value (8 bytes, little endian; absent = 0).
#[cfg(not(target_arch = "wasm32"))]
fn counter(property: &str, v: Option<Vec<u8>>) -> u64 {
    match v {
        None => 0,
        Some(v) => match <[u8; 8]>::try_from(v.as_slice()) {
            Ok(b) => u64::from_le_bytes(b),
            Err(_) => fail(
                property,
                format_args!("the counter holds {} bytes, not 8", v.len()),
            ),
        },
    }
}

/// Several threads each increment one shared counter key `increments` times, each increment a
/// read-increment-write transaction retried on [`StoreError::Conflict`]: the counter must end at
/// exactly threads × increments (no update lost, whatever kind of writers the backend has).
#[cfg(not(target_arch = "wasm32"))]
pub fn concurrent_counter<S: Store + Sync>(new_store: impl Fn() -> S) {
    const P: &str = "concurrent writers: shared counter";
    const THREADS: u64 = 4;
    const INCREMENTS: u64 = 100;
    let store = new_store();
    std::thread::scope(|scope| {
        for _ in 0..THREADS {
            scope.spawn(|| {
                for _ in 0..INCREMENTS {
                    write(P, &store, |w| {
                        let n = counter(P, w.get(b"counter")?);
                        w.put(b"counter", &(n + 1).to_le_bytes())
                    });
                }
            });
        }
    });
    let r = ok(P, "begin_read", store.begin_read());
    let n = counter(P, ok(P, "get", r.get(b"counter")));
    check!(
        P,
        n == THREADS * INCREMENTS,
        "{THREADS} threads × {INCREMENTS} increments left the counter at {n}, expected {}",
        THREADS * INCREMENTS
    );
}

/// Several threads commit transactions over disjoint keys at the same time: every write of every
/// thread lands.
#[cfg(not(target_arch = "wasm32"))]
pub fn concurrent_disjoint_writers<S: Store + Sync>(new_store: impl Fn() -> S) {
    const P: &str = "concurrent writers: disjoint keys";
    const THREADS: usize = 4;
    const TXNS: usize = 50;
    const KEYS: usize = 5;
    let store = new_store();
    std::thread::scope(|scope| {
        for t in 0..THREADS {
            let store = &store;
            scope.spawn(move || {
                for n in 0..TXNS {
                    write(P, store, |w| {
                        for k in 0..KEYS {
                            w.put(format!("t{t}:{n:03}:{k}").as_bytes(), &[t as u8, n as u8])?;
                        }
                        Ok(())
                    });
                }
            });
        }
    });
    let r = ok(P, "begin_read", store.begin_read());
    let rows = ok(P, "scan", r.scan(b"", b"", Direction::Forward, usize::MAX));
    check!(
        P,
        rows.len() == THREADS * TXNS * KEYS,
        "{THREADS} threads wrote {} distinct keys, {} are there",
        THREADS * TXNS * KEYS,
        rows.len()
    );
    for t in 0..THREADS {
        for n in 0..TXNS {
            for k in 0..KEYS {
                let key = format!("t{t}:{n:03}:{k}");
                let got = ok(P, "get", r.get(key.as_bytes()));
                check!(
                    P,
                    got == Some(vec![t as u8, n as u8]),
                    "key {key} holds {}",
                    show_opt(got.as_deref())
                );
            }
        }
    }
}

/// Readers on other threads never see part of a commit nor a moving snapshot: a writer commits
/// round after round, each setting all of 16 keys to the round's number, while readers check that
/// every snapshot holds one round in all keys, by a scan and by gets made after it.
#[cfg(not(target_arch = "wasm32"))]
pub fn concurrent_readers_see_whole_commits<S: Store + Sync>(new_store: impl Fn() -> S) {
    const P: &str = "concurrent readers see whole commits";
    const ROUNDS: u32 = 60;
    const KEYS: usize = 16;
    let store = new_store();
    let keys: Vec<Vec<u8>> = (0..KEYS).map(|i| format!("r{i:02}").into_bytes()).collect();
    let set_round = |round: u32| {
        write(P, &store, |w| {
            for k in &keys {
                w.put(k, &round.to_le_bytes())?;
            }
            Ok(())
        });
    };
    set_round(0);
    let done = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|scope| {
        for _ in 0..2 {
            scope.spawn(|| {
                let mut snapshots = 0u32;
                while !done.load(std::sync::atomic::Ordering::Acquire) || snapshots == 0 {
                    snapshots += 1;
                    let r = ok(P, "begin_read", store.begin_read());
                    let rows = ok(P, "scan", r.scan(b"r", b"s", Direction::Forward, usize::MAX));
                    check!(
                        P,
                        rows.len() == KEYS,
                        "a snapshot scan returned {} of {KEYS} keys",
                        rows.len()
                    );
                    let round = rows[0].1.clone();
                    check!(
                        P,
                        rows.iter().all(|(_, v)| *v == round),
                        "a snapshot holds several rounds at once: {}",
                        show_rows(&rows)
                    );
                    std::thread::yield_now();
                    for k in &keys {
                        let got = ok(P, "get", r.get(k));
                        check!(
                            P,
                            got.as_ref() == Some(&round),
                            "a get after the scan in the same read transaction returned {}, the scan saw {}",
                            show_opt(got.as_deref()),
                            show(&round)
                        );
                    }
                }
            });
        }
        for round in 1..=ROUNDS {
            set_round(round);
        }
        done.store(true, std::sync::atomic::Ordering::Release);
    });
}

/// The interleavings the contract says must conflict, forced on two threads: transaction A
/// begins and reads (or writes) key `k`, then B, on another thread, reads and writes `k` and
/// commits, then A writes `k` and commits. On an optimistic backend B commits while A is open,
/// so A must fail with [`StoreError::Conflict`]; on a serialized one B waits in `begin_write`
/// until A has ended (the suite gives it a second, then lets A go on) and both commit one after
/// the other. Either way: (read-write) the counter equals the number of increments that
/// committed, and (write-write) A and B never both commit a write of `k` while both were open.
#[cfg(not(target_arch = "wasm32"))]
pub fn concurrent_conflicts<S: Store + Sync>(new_store: impl Fn() -> S) {
    const P: &str = "concurrent writers: conflicting interleavings";
    use std::sync::mpsc;
    use std::time::Duration;

    /// Run `b` on another thread while `a_first` has begun transaction A; then finish A with
    /// `a_last`. Returns (A committed, B committed, B had committed before A's commit).
    fn interleave<S: Store + Sync>(
        store: &S,
        a_first: impl FnOnce(&mut dyn WriteTxn) -> Result<(), StoreError>,
        b: impl FnOnce(&mut dyn WriteTxn) -> Result<(), StoreError> + Send,
        a_last: impl FnOnce(&mut dyn WriteTxn) -> Result<(), StoreError>,
    ) -> (bool, bool, bool) {
        let outcome = |r: Result<(), StoreError>| match r {
            Ok(()) => true,
            Err(StoreError::Conflict(_)) => false,
            Err(e) => fail(
                P,
                format_args!("a transaction failed with {e}, not Conflict"),
            ),
        };
        let mut a = ok(P, "begin_write", store.begin_write());
        let first = a_first(a.as_mut());
        std::thread::scope(|scope| {
            let (tx, rx) = mpsc::channel();
            let handle = scope.spawn(move || {
                let r = store.begin_write().and_then(|mut w| {
                    b(w.as_mut())?;
                    w.commit()
                });
                let _ = tx.send(());
                r
            });
            // a serialized store keeps B waiting until A ends: give B a second, then go on
            let b_done_first = rx.recv_timeout(Duration::from_secs(1)).is_ok();
            let a_result = first
                .and_then(|()| a_last(a.as_mut()))
                .and_then(|()| a.commit());
            let b_result = match handle.join() {
                Ok(r) => r,
                Err(_) => fail(P, format_args!("transaction B's thread panicked")),
            };
            (outcome(a_result), outcome(b_result), b_done_first)
        })
    }

    let read_n = |w: &dyn WriteTxn| -> Result<u64, StoreError> { Ok(counter(P, w.get(b"k")?)) };

    // read-write: both read k and write k + 1
    let store = new_store();
    let (a, b, _) = interleave(
        &store,
        |w| read_n(w).map(|_| ()),
        |w| {
            let n = read_n(w)?;
            w.put(b"k", &(n + 1).to_le_bytes())
        },
        |w| {
            let n = read_n(w)?;
            w.put(b"k", &(n + 1).to_le_bytes())
        },
    );
    let r = ok(P, "begin_read", store.begin_read());
    let n = counter(P, ok(P, "get", r.get(b"k")));
    let committed = u64::from(a) + u64::from(b);
    check!(
        P,
        n == committed,
        "two read-increment-write transactions overlapped: {committed} committed (A {a}, B {b}) but the counter is {n}: an update was lost"
    );
    check!(
        P,
        committed >= 1,
        "neither of two overlapping increments committed"
    );

    // write-write: both write k (blind), each also a key of its own
    let store = new_store();
    let (a, b, b_first) = interleave(
        &store,
        |w| w.put(b"k", b"A"),
        |w| {
            w.put(b"k", b"B")?;
            w.put(b"b-only", b"B")
        },
        |w| w.put(b"a-only", b"A"),
    );
    check!(
        P,
        !(a && b && b_first),
        "B wrote k and committed while A, which had written k, was open, and A committed too"
    );
    let r = ok(P, "begin_read", store.begin_read());
    let a_only = ok(P, "get", r.get(b"a-only")).is_some();
    let b_only = ok(P, "get", r.get(b"b-only")).is_some();
    check!(
        P,
        a_only == a && b_only == b,
        "commit outcomes A {a}, B {b} but their own keys are present: A {a_only}, B {b_only}"
    );
}

/// Every property, each on fresh stores from `new_store` (which must return an empty store each
/// time it is called).
#[cfg(not(target_arch = "wasm32"))]
pub fn run_all<S: Store + Sync>(new_store: impl Fn() -> S) {
    run_single_threaded(&new_store);
    reader_not_blocked_by_writer(&new_store);
    concurrent_counter(&new_store);
    concurrent_disjoint_writers(&new_store);
    concurrent_conflicts(&new_store);
    concurrent_readers_see_whole_commits(&new_store);
}

/// Every property that runs in one thread (all of them on wasm32), each on fresh stores from
/// `new_store` (which must return an empty store each time it is called).
#[cfg(target_arch = "wasm32")]
pub fn run_all<S: Store>(new_store: impl Fn() -> S) {
    run_single_threaded(&new_store);
    reader_not_blocked_by_writer(&new_store);
}

fn run_single_threaded<S: Store>(new_store: &impl Fn() -> S) {
    snapshot_isolation(new_store);
    read_your_own_writes(new_store);
    rollback_on_drop(new_store);
    commit_atomicity(new_store);
    scan_order_and_limits(new_store);
    arbitrary_bytes(new_store);
    large_values_and_many_keys(new_store);
}
