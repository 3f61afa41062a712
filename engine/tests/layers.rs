//! The engine's modules form layers that only look down, without cycles.
//!
//! This test reads every source file under `engine/src`, collects the `crate::...` paths its
//! code names (comments and `#[cfg(test)]` sections excluded), and checks them against [`LAYERS`]:
//! a module may use modules of its own layer or of layers below it, never above; and the modules
//! must not depend on each other in a cycle, also not within a layer. A new module must be given
//! a layer here, or the test fails.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The layers, bottom first: each entry is a layer's name and its units. A unit is a module path
/// (`auth::password`); a file belongs to the longest unit that prefixes its module path, and a
/// `crate::a::b::c` path names the longest unit that prefixes `a::b::c`.
const LAYERS: &[(&str, &[&str])] = &[
    (
        "plain types, store and keyspace",
        &[
            "clock",
            "http",
            "error",
            "store",
            "keys",
            "generation",
            "events",
            "auth::jwt",
            "auth::password",
        ],
    ),
    (
        "model and rules as data",
        &["model", "security", "cache", "embedding", "llm"],
    ),
    ("engine-wide state", &["state"]),
    ("request context", &["context"]),
    ("event delivery", &["subscriber"]),
    ("content tree", &["tree"]),
    (
        "basic services",
        &[
            "permissions",
            "site",
            "auth::users",
            "auth::groups",
            "counters",
            "statistics",
            "blobs",
            "idempotency",
        ],
    ),
    (
        "domain services",
        &[
            "auth",
            "content_types",
            "calendar",
            "workflow",
            "versioning",
            "locking",
            "comments",
            "aliases",
            "links",
            "multilingual",
            "navigation",
            "configuration",
            "actions",
            "controlpanels",
            "vocabularies",
            "inherit",
            "accounts",
            "sharing",
            "catalog",
            "recyclebin",
            "replace",
            "forms",
            "i18n",
            "files",
            "uploads",
            "exports",
            "copying",
            "operations",
            "jobs",
            "rules",
            "related",
            "ai",
            "replica",
            "changes",
        ],
    ),
    (
        "wiring of the services",
        &["registry", "setup", "migrations", "health"],
    ),
    ("HTTP-shaped api", &["api"]),
    ("facade", &["engine"]),
];

/// `src/a/b.rs` → `a::b`; `src/a/mod.rs` → `a`; `src/lib.rs` → `""`.
fn module_path(src: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(src).unwrap_or(file).with_extension("");
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if parts.last().is_some_and(|p| p == "mod" || p == "lib") {
        parts.pop();
    }
    parts.join("::")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("read {dir:?}: {e}"));
    for entry in entries {
        let path = entry.expect("dir entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The code of a file without comments and without its `#[cfg(test)]` section.
fn code_of(text: &str) -> String {
    let mut out = String::new();
    for line in text.lines() {
        let t = line.trim_start();
        if t.starts_with("#[cfg(test)]") {
            break;
        }
        if t.starts_with("//") {
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

fn is_ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// The leading `ident::ident...` path of `s` (module segments, then the item).
fn leading_path(s: &str) -> Vec<String> {
    let mut segs = Vec::new();
    let mut rest = s.trim_start();
    loop {
        let end = rest.find(|c: char| !is_ident_char(c)).unwrap_or(rest.len());
        if end == 0 {
            break;
        }
        segs.push(rest[..end].to_string());
        rest = &rest[end..];
        match rest.strip_prefix("::") {
            Some(r) if !r.starts_with('{') => rest = r,
            _ => break,
        }
    }
    segs
}

/// Every path named after `crate::` in `code`, including each item of `crate::{a, b::c}` groups.
fn crate_paths(code: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(i) = rest.find("crate::") {
        let before_ok = rest[..i].chars().last().is_none_or(|c| !is_ident_char(c));
        rest = &rest[i + "crate::".len()..];
        if !before_ok {
            continue;
        }
        if let Some(group) = rest.strip_prefix('{') {
            // A group: split its top-level items.
            let mut depth = 0usize;
            let mut item = String::new();
            for c in group.chars() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        out.push(leading_path(&item));
                        item.clear();
                        continue;
                    }
                    _ => {}
                }
                item.push(c);
            }
            out.push(leading_path(&item));
        } else {
            out.push(leading_path(rest));
        }
    }
    out.retain(|p| !p.is_empty());
    out
}

/// The unit (from [`LAYERS`]) that the module path `segs` falls in, with its layer index.
fn unit_of(segs: &[String]) -> Option<(&'static str, usize)> {
    (1..=segs.len()).rev().find_map(|n| {
        let prefix = segs[..n].join("::");
        LAYERS.iter().enumerate().find_map(|(layer, (_, units))| {
            units.iter().find(|u| **u == prefix).map(|u| (*u, layer))
        })
    })
}

#[test]
fn modules_only_use_their_own_layer_or_lower_ones_and_form_no_cycle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    assert!(files.len() > 20, "found only {} source files", files.len());

    let mut problems = Vec::new();
    let mut graph: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for file in &files {
        let module = module_path(&src, file);
        if module.is_empty() {
            continue; // lib.rs declares the modules and re-exports the facade
        }
        let segs: Vec<String> = module.split("::").map(str::to_string).collect();
        let Some((unit, layer)) = unit_of(&segs) else {
            problems.push(format!("{module} ({file:?}) has no layer in LAYERS"));
            continue;
        };
        graph.entry(unit).or_default();
        let text = std::fs::read_to_string(file).expect("read source");
        for path in crate_paths(&code_of(&text)) {
            if path[0].starts_with(|c: char| c.is_ascii_uppercase()) {
                problems.push(format!(
                    "{module} uses crate::{}, a re-export of the crate root; name its module",
                    path.join("::")
                ));
                continue;
            }
            let Some((to, to_layer)) = unit_of(&path) else {
                problems.push(format!(
                    "{module} uses crate::{}, which is in no layer",
                    path.join("::")
                ));
                continue;
            };
            if to == unit {
                continue;
            }
            // The api layer works through the domain and the tree, never on keys or the store.
            if unit == "api" && matches!(to, "keys" | "store" | "generation") {
                problems.push(format!(
                    "{module} (the api) uses crate::{}: the keyspace belongs to the layers below",
                    path.join("::")
                ));
            }
            if to_layer > layer {
                problems.push(format!(
                    "{module} (layer \"{}\") uses crate::{} (layer \"{}\"), a layer above it",
                    LAYERS[layer].0,
                    path.join("::"),
                    LAYERS[to_layer].0
                ));
            }
            graph.entry(unit).or_default().insert(to);
        }
    }

    // No cycles between units (also within one layer): depth-first search for a back edge.
    fn visit<'a>(
        n: &'a str,
        graph: &BTreeMap<&'a str, BTreeSet<&'a str>>,
        state: &mut BTreeMap<&'a str, u8>,
        stack: &mut Vec<&'a str>,
        cycles: &mut Vec<String>,
    ) {
        state.insert(n, 1);
        stack.push(n);
        for &m in graph.get(n).into_iter().flatten() {
            match state.get(m).copied().unwrap_or(0) {
                0 => visit(m, graph, state, stack, cycles),
                1 => {
                    let from = stack.iter().position(|s| *s == m).unwrap_or(0);
                    let mut cycle: Vec<&str> = stack[from..].to_vec();
                    cycle.push(m);
                    cycles.push(format!("import cycle: {}", cycle.join(" -> ")));
                }
                _ => {}
            }
        }
        stack.pop();
        state.insert(n, 2);
    }
    let mut state = BTreeMap::new();
    let mut cycles = Vec::new();
    for &n in graph.keys() {
        if state.get(n).copied().unwrap_or(0) == 0 {
            visit(n, &graph, &mut state, &mut Vec::new(), &mut cycles);
        }
    }
    problems.extend(cycles);

    assert!(
        problems.is_empty(),
        "{} layering problem(s):\n{}",
        problems.len(),
        problems.join("\n")
    );
}

#[test]
fn the_path_parser_sees_plain_and_grouped_imports() {
    let code = code_of(
        "use crate::tree;\n// crate::api in a comment\nuse crate::{site, auth::users::get};\n\
         fn f() { crate::locking::put(x); not_crate::x(); }\n#[cfg(test)]\nuse crate::engine;\n",
    );
    let paths: Vec<String> = crate_paths(&code).iter().map(|p| p.join("::")).collect();
    assert_eq!(
        paths,
        ["tree", "site", "auth::users::get", "locking::put"].map(String::from)
    );
    let users: Vec<String> = ["auth", "users", "get"].map(String::from).to_vec();
    assert_eq!(unit_of(&users), Some(("auth::users", 6)));
    let mut violations = 0;
    // A domain module naming the facade would be a violation.
    if let (Some((_, from)), Some((_, to))) = (
        unit_of(&["tree".to_string()]),
        unit_of(&["engine".to_string()]),
    ) {
        if to > from {
            violations += 1;
        }
    }
    assert_eq!(violations, 1);
}
