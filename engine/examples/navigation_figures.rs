//! Prints read counts and timings of `@navigation` (depth 1 to 3) on a generated site of about
//! 100,000 objects: `cargo run --release -p engine --example navigation_figures`.

#[path = "../tests/support/navscale.rs"]
mod navscale;
use navscale::*;

fn main() {
    let shape = Shape {
        fanout: vec![10, 10, 10, 99],
    };
    let t = std::time::Instant::now();
    let (engine, counts, generated) = site(&shape);
    println!(
        "generated {} objects in {:.2?}",
        generated.objects,
        t.elapsed()
    );
    for auth in [true, false] {
        for depth in [1, 2, 3] {
            let m = navigation(&engine, &counts, auth, depth);
            println!(
                "@navigation depth {depth} as {:9}: {:5} items returned, {:5} gets, {:4} scans, \
                 {:5} index rows, {:>8.3} ms",
                if auth { "admin" } else { "anonymous" },
                m.returned,
                m.gets,
                m.scans,
                m.rows,
                m.micros as f64 / 1000.0
            );
        }
        check(&shape, &engine, &counts, auth);
    }
}
