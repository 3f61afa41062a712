//! Native micro-benchmark of [`engine::MemStore`]: the figures quoted for its snapshot design.
//!
//! ```text
//! cargo run --release -p engine --example memstore_figures
//! ```
//!
//! The store holds 50,000 keys (about the keyspace of a site with 10,000 objects): keys of 30 to 40
//! bytes, values of 200 bytes. Printed, each as the mean over many repetitions:
//! - `open`: `MemStore::from_pairs` of all 50,000 pairs (what the browser host does at open);
//! - `commit 1 key` / `commit 50 keys`: `begin_write`, puts of existing keys, `commit`;
//! - `snapshot get`: `begin_read` and one `get`; `get in open read`: one `get` in a read
//!   transaction opened earlier;
//! - the same gets and a 100-key scan while an old reader pins a snapshot and writers keep
//!   committing over the keys it reads (the case that keeps older versions alive).
//!
//! Timing figures only; nothing here asserts on them.

use std::hint::black_box;
use std::time::Instant;

use engine::{Direction, MemStore, Store};

const KEYS: usize = 50_000;

fn key(i: usize) -> Vec<u8> {
    format!("o:{:08x}-0000-4000-8000-{:012x}", i * 7919 % 1_000_003, i).into_bytes()
}

fn value(i: usize, round: usize) -> Vec<u8> {
    let mut v = format!("{{\"i\":{i},\"round\":{round}}}").into_bytes();
    v.resize(200, b' ');
    v
}

/// Run `f` `n` times and print the mean time per run.
fn measure(name: &str, n: usize, mut f: impl FnMut(usize)) {
    let t0 = Instant::now();
    for i in 0..n {
        f(i);
    }
    let per = t0.elapsed().as_secs_f64() / n as f64;
    if per >= 1e-3 {
        println!("{name:<44} {:>10.3} ms", per * 1e3);
    } else {
        println!("{name:<44} {:>10.3} µs", per * 1e6);
    }
}

fn main() -> Result<(), engine::StoreError> {
    let keys: Vec<Vec<u8>> = (0..KEYS).map(key).collect();
    let pairs: Vec<(Vec<u8>, Vec<u8>)> = keys
        .iter()
        .enumerate()
        .map(|(i, k)| (k.clone(), value(i, 0)))
        .collect();
    let mut sorted = pairs.clone();
    sorted.sort();
    println!("MemStore, {KEYS} keys of ~37 bytes, values of 200 bytes");

    let mut store = MemStore::new();
    measure("open (from_pairs, 50k sorted pairs)", 10, |_| {
        store = MemStore::from_pairs(sorted.clone());
    });
    let store = store;

    let mut round = 1;
    measure("commit 1 key", 20_000, |i| {
        let k = &keys[i * 31 % KEYS];
        let Ok(mut w) = store.begin_write() else {
            return;
        };
        let _ = w.put(k, &value(i, round));
        let _ = w.commit();
    });
    round += 1;
    measure("commit 50 keys", 2_000, |i| {
        let Ok(mut w) = store.begin_write() else {
            return;
        };
        for j in 0..50 {
            let _ = w.put(&keys[(i * 50 + j) * 13 % KEYS], &value(j, round));
        }
        let _ = w.commit();
    });
    measure("snapshot get (begin_read + get)", 200_000, |i| {
        if let Ok(r) = store.begin_read() {
            black_box(r.get(&keys[i * 17 % KEYS]).ok());
        }
    });
    let r = store.begin_read()?;
    measure("get in open read", 200_000, |i| {
        black_box(r.get(&keys[i * 17 % KEYS]).ok());
    });
    measure("scan 100 keys in open read", 20_000, |i| {
        black_box(
            r.scan(&keys[i % KEYS][..6], b"", Direction::Forward, 100)
                .ok(),
        );
    });
    drop(r);

    // An old reader pins a snapshot while every key is rewritten: every key then has two
    // versions until the reader ends.
    let old = store.begin_read()?;
    let seen_first = old.get(&keys[0])?;
    round += 1;
    {
        let mut w = store.begin_write()?;
        for (i, k) in keys.iter().enumerate() {
            w.put(k, &value(i, round))?;
        }
        w.commit()?;
    }
    measure("get in the pinned old snapshot", 200_000, |i| {
        black_box(old.get(&keys[i * 17 % KEYS]).ok());
    });
    measure("scan 100 keys in the pinned old snapshot", 20_000, |i| {
        black_box(
            old.scan(&keys[i % KEYS][..6], b"", Direction::Forward, 100)
                .ok(),
        );
    });
    round += 1;
    measure("commit 1 key while the old reader is open", 20_000, |i| {
        let Ok(mut w) = store.begin_write() else {
            return;
        };
        let _ = w.put(&keys[i * 31 % KEYS], &value(i, round));
        let _ = w.commit();
    });
    let seen_last = old.get(&keys[0])?;
    drop(old);
    println!(
        "old reader kept its snapshot: {} (a store without snapshots prints false)",
        seen_first == seen_last
    );
    measure("commit 1 key after the old reader ended", 20_000, |i| {
        let Ok(mut w) = store.begin_write() else {
            return;
        };
        let _ = w.put(&keys[i * 31 % KEYS], &value(i, round));
        let _ = w.commit();
    });
    println!("keys: {}", store.len());
    Ok(())
}
