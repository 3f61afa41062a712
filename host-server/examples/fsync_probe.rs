//! How fast can this disk make a write durable? Prints the latency of `fdatasync` after a
//! WAL-sized append in a directory, and the most durable creates per second a group commit can
//! answer at a given concurrency on that disk:
//!
//! ```text
//! cargo run --release -p host-server --example fsync_probe -- --dir DATA_DIR --writers 8
//! ```
//!
//! With `--sync full` every write group ends with one fsync of the write-ahead log, and a client
//! waits for its group's fsync before it sends its next request. With `W` concurrent writers a
//! group holds at most `W` requests, so the server cannot answer more than
//! `W / (fsync + W × CPU per create)` creates per second. The bound printed here leaves the CPU
//! out (it is the disk's part alone): no code change can go beyond it without giving up the
//! fsync per group.

use std::fs::OpenOptions;
use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

struct Args {
    dir: PathBuf,
    writers: u32,
    rounds: usize,
    bytes: usize,
}

fn parse() -> Result<Args, String> {
    let mut args = Args {
        dir: std::env::temp_dir(),
        writers: 8,
        rounds: 300,
        bytes: 8 * 4096,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it.next().ok_or_else(|| format!("{flag} needs a value"))?;
        let number = || {
            value
                .parse::<usize>()
                .map_err(|_| format!("{flag}: not a number: {value}"))
        };
        match flag.as_str() {
            "--dir" => args.dir = PathBuf::from(&value),
            "--writers" => args.writers = u32::try_from(number()?).map_err(|e| e.to_string())?,
            "--rounds" => args.rounds = number()?.max(10),
            "--bytes" => args.bytes = number()?.max(1),
            _ => return Err(format!("unknown option {flag}")),
        }
    }
    Ok(args)
}

fn main() -> std::io::Result<()> {
    let args = match parse() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("fsync_probe: {e}\nusage: fsync_probe [--dir DIR] [--writers N] [--rounds N] [--bytes N]");
            std::process::exit(2);
        }
    };
    let path = args
        .dir
        .join(format!(".fsync-probe-{}", std::process::id()));
    let mut file = OpenOptions::new()
        .create(true)
        .truncate(true)
        .write(true)
        .open(&path)?;
    let block = vec![0x5a_u8; args.bytes];
    let mut took = Vec::with_capacity(args.rounds);
    for _ in 0..args.rounds {
        file.write_all(&block)?;
        let start = Instant::now();
        file.sync_data()?;
        took.push(start.elapsed().as_secs_f64() * 1e3);
    }
    drop(file);
    std::fs::remove_file(&path)?;
    took.sort_by(f64::total_cmp);
    let at = |q: f64| took[((took.len() - 1) as f64 * q).round() as usize];
    let p50 = at(0.5);
    println!(
        "fdatasync after a {} KiB append in {}: p50 {p50:.3} ms, p90 {:.3} ms, p99 {:.3} ms ({} rounds)",
        args.bytes / 1024,
        args.dir.display(),
        at(0.9),
        at(0.99),
        args.rounds
    );
    println!(
        "durable write groups at most {:.0}/s; with {} writers at most {:.0} creates/s (fsync alone, no CPU)",
        1e3 / p50,
        args.writers,
        f64::from(args.writers) * 1e3 / p50
    );
    Ok(())
}
