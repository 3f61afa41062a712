//! Embeds every scenario file under `scenarios/` into the library, so runners that cannot read the
//! filesystem (the browser) get the same scenarios as the native ones.

use std::fmt::Write as _;
use std::path::Path;

fn main() {
    // Read when the script runs, not when it was compiled: cargo may reuse a compiled build
    // script for the same crate at another path (a second worktree sharing the target dir).
    let manifest = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let dir = Path::new(&manifest).join("scenarios");
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    let mut out = String::from(
        "/// Every scenario file as `(name, JSON text)`, sorted by name; the name is the file stem.\n\
         pub fn all() -> Vec<(&'static str, &'static str)> {\n    vec![\n",
    );
    for path in &files {
        println!("cargo:rerun-if-changed={}", path.display());
        let stem = path
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or_else(|| panic!("scenario file name is not UTF-8: {}", path.display()));
        writeln!(
            out,
            "        ({stem:?}, include_str!({:?})),",
            path.display().to_string()
        )
        .unwrap();
    }
    out.push_str("    ]\n}\n");
    let dest = Path::new(&std::env::var("OUT_DIR").unwrap()).join("scenarios.rs");
    std::fs::write(&dest, out).unwrap();
}
