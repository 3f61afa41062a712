//! Records the version of the Rust compiler that builds the engine (`@system` reports it).

use std::process::Command;

fn main() {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let version = Command::new(rustc)
        .arg("--version")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_string())
        .unwrap_or_default();
    println!("cargo:rustc-env=ENGINE_RUSTC_VERSION={version}");
    println!("cargo:rerun-if-env-changed=RUSTC");
}
