//! `@navigation` and `@breadcrumbs` read only what they return: a store wrapper counts every read
//! while the endpoints answer on a large generated site.
//!
//! `cargo test -p engine --test navigation_scale` checks the counts on a site of about 20,000
//! objects; `cargo run --release -p engine --example navigation_figures` prints the counts and
//! timings on 100,000 objects (figures only, no timed assertions).

#[path = "support/navscale.rs"]
mod navscale;
use engine::{Method, Request};
use navscale::*;

#[test]
fn navigation_depth_3_reads_only_what_it_returns() {
    let shape = Shape {
        fanout: vec![10, 10, 10, 20],
    };
    let (engine, counts, generated) = site(&shape);
    assert!(generated.objects > 20_000);
    for auth in [true, false] {
        let m = check(&shape, &engine, &counts, auth);
        assert_eq!(m.returned, expected_returned(&shape, !auth, 3));
        // Nothing of the 20,000 pages below level 3 is read.
        assert!(m.gets < generated.objects / 10);
    }
}

#[test]
fn breadcrumbs_read_only_the_ancestors() {
    let shape = Shape {
        fanout: vec![10, 10, 10, 20],
    };
    let (engine, counts, _) = site(&shape);
    let req = Request::new(
        Method::Get,
        "/folder-1/folder-2/folder-3/page-7/@breadcrumbs",
        BASE,
    )
    .header("Authorization", "Basic YWRtaW46c2VjcmV0");
    engine.handle(req.clone());
    counts.reset();
    let resp = engine.handle(req);
    assert_eq!(resp.status, 200);
    let body = resp.json_body();
    assert_eq!(body["items"].as_array().map(Vec::len), Some(4));
    assert_eq!(body["root"], BASE);
    let (gets, _, rows) = counts.get();
    // The context and its 4 ancestors are read by path (2 reads each) twice: once for the View
    // check on the context, once for the breadcrumbs; plus the user and the settings.
    assert!(
        gets <= 2 * 2 * 5 + OVERHEAD,
        "breadcrumbs made {gets} reads"
    );
    assert!(rows <= OVERHEAD, "breadcrumbs scanned {rows} rows");
}
