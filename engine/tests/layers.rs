//! The engine's modules form layers that only look down, without cycles.
//!
//! This test reads every source file under `engine/src`, collects the module paths its code names
//! (`crate::`, `self::` and `super::` paths; comments and `#[cfg(test)]` sections excluded), and
//! checks them against [`LAYERS`]:
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
        "core: plain types, store and keyspace",
        &[
            "core",
            "core::clock",
            "core::http",
            "core::error",
            "core::store",
            "core::keys",
            "core::net",
            "core::images",
            "core::generation",
            "core::events",
            "people::auth::jwt",
            "people::auth::password",
        ],
    ),
    (
        "core: model and rules as data",
        &[
            "core::model",
            "core::security",
            "runtime::cache",
            "ai::embedding",
            "ai::llm",
        ],
    ),
    ("runtime: engine-wide state", &["runtime", "runtime::state"]),
    ("runtime: request context", &["runtime::context"]),
    ("runtime: event delivery", &["runtime::subscriber"]),
    ("content: the tree", &["content::tree"]),
    (
        "basic services",
        &[
            "people::permissions",
            "site::settings",
            "site::profile",
            "people::auth::users",
            "people::auth::groups",
            "content::counters",
            "site::statistics",
            "content::blobs",
            "sync::idempotency",
        ],
    ),
    (
        "domain services",
        &[
            "content",
            "people",
            "ai",
            "automation",
            "sync",
            "site",
            "people::auth",
            "people::auth::external",
            "content::content_types",
            "content::calendar",
            "content::workflow",
            "content::versioning",
            "content::locking",
            "content::comments",
            "content::aliases",
            "content::links",
            "content::multilingual",
            "content::multilingual::profiles",
            "content::navigation",
            "site::configuration",
            "site::actions",
            "site::controlpanels",
            "catalog::vocabularies",
            "content::inherit",
            "people::accounts",
            "people::sharing",
            "catalog",
            "content::recyclebin",
            "content::relations",
            "content::undo",
            "content::replace",
            "automation::forms",
            "site::i18n",
            "content::files",
            "content::uploads",
            "content::exports",
            "content::operations",
            "automation::jobs",
            "automation::mail",
            "automation::rules",
            "ai::related",
            "ai::assistant",
            "sync::replica",
            "sync::changes",
        ],
    ),
    (
        "wiring of the services",
        &[
            "site::registry",
            "site::setup",
            "site::nick_defaults",
            "site::migrations",
            "site::health",
        ],
    ),
    (
        "api: infrastructure",
        &[
            "api",
            "api::extract",
            "api::query",
            "api::etag",
            "api::idempotency",
            "api::router",
            "api::batching",
            "api::expansion",
            "api::time",
        ],
    ),
    (
        "api: representations",
        &[
            "api::file_fields",
            "api::summaries",
            "api::serialize",
            "api::nick_items",
        ],
    ),
    // Every other module of `api` is one endpoint family; families may use each other.
    ("api: endpoint families", &["api::*"]),
    ("facade and host surface", &["engine", "host"]),
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

/// Every module path that `code` (the code of module `module`) names through `crate::`, `self::`
/// or `super::` (repeated), resolved to a path from the crate root, including each item of
/// `crate::{a, b::c}` groups.
fn crate_paths(module: &[String], code: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let mut rest = code;
    loop {
        let next = ["crate::", "self::", "super::"]
            .iter()
            .filter_map(|p| rest.find(p).map(|i| (i, *p)))
            .min();
        let Some((i, prefix)) = next else { break };
        let before_ok = rest[..i]
            .chars()
            .last()
            .is_none_or(|c| !is_ident_char(c) && c != ':' && c != '$');
        rest = &rest[i + prefix.len()..];
        if !before_ok {
            continue;
        }
        let mut base: Vec<String> = match prefix {
            "crate::" => Vec::new(),
            "self::" => module.to_vec(),
            _ => module[..module.len().saturating_sub(1)].to_vec(),
        };
        if prefix == "super::" {
            while let Some(r) = rest.strip_prefix("super::") {
                base.pop();
                rest = r;
            }
        }
        let with_base = |p: Vec<String>| base.iter().cloned().chain(p).collect::<Vec<_>>();
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
                        out.push(with_base(leading_path(&item)));
                        item.clear();
                        continue;
                    }
                    _ => {}
                }
                item.push(c);
            }
            out.push(with_base(leading_path(&item)));
        } else {
            out.push(with_base(leading_path(rest)));
        }
    }
    out.retain(|p| !p.is_empty());
    out
}

/// The unit (from [`LAYERS`]) that the module path `segs` falls in, with its layer index: the
/// longest unit that prefixes it; `api::*` stands for each module of `api` not listed itself.
fn unit_of(segs: &[String]) -> Option<(String, usize)> {
    (1..=segs.len()).rev().find_map(|n| {
        let prefix = segs[..n].join("::");
        LAYERS.iter().enumerate().find_map(|(layer, (_, units))| {
            units.iter().find_map(|u| {
                if *u == prefix {
                    Some((prefix.clone(), layer))
                } else if let Some(parent) = u.strip_suffix("::*") {
                    // a module of `api` (lower case), not an item of `api` itself
                    let is_family = n == 2
                        && segs[0] == parent
                        && segs[1].starts_with(|c: char| c.is_ascii_lowercase());
                    let listed = LAYERS.iter().any(|(_, us)| us.contains(&prefix.as_str()));
                    (is_family && !listed).then(|| (prefix.clone(), layer))
                } else {
                    None
                }
            })
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
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
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
        graph.entry(unit.clone()).or_default();
        let text = std::fs::read_to_string(file).expect("read source");
        for path in crate_paths(&segs, &code_of(&text)) {
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
            let api = |u: &str| u == "api" || u.starts_with("api::");
            if api(&unit)
                && matches!(
                    to.as_str(),
                    "core::keys" | "core::store" | "core::generation"
                )
            {
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
            graph.entry(unit.clone()).or_default().insert(to);
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
    let graph: BTreeMap<&str, BTreeSet<&str>> = graph
        .iter()
        .map(|(k, v)| (k.as_str(), v.iter().map(String::as_str).collect()))
        .collect();
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
fn the_path_parser_sees_plain_grouped_and_relative_imports() {
    let module: Vec<String> = ["api", "content"].map(String::from).to_vec();
    let code = code_of(
        "use crate::content::tree;\n// crate::api in a comment\nuse crate::{site::settings, people::auth::users::get};\n\
         use super::router::Route;\nuse super::{etag, serialize::summary};\nuse self::inner::X;\n\
         fn f() { crate::content::locking::put(x); not_crate::x(); a::super_x(); }\n\
         #[cfg(test)]\nuse crate::engine;\n",
    );
    let paths: Vec<String> = crate_paths(&module, &code)
        .iter()
        .map(|p| p.join("::"))
        .collect();
    assert_eq!(
        paths,
        [
            "content::tree",
            "site::settings",
            "people::auth::users::get",
            "api::router::Route",
            "api::etag",
            "api::serialize::summary",
            "api::content::inner::X",
            "content::locking::put",
        ]
        .map(String::from)
    );
    let users: Vec<String> = ["people", "auth", "users", "get"]
        .map(String::from)
        .to_vec();
    assert_eq!(
        unit_of(&users),
        Some(("people::auth::users".to_string(), 6))
    );
    // Every module of `api` not listed is a family of its own, above the api's infrastructure.
    let family = unit_of(&module).expect("api::content has a layer");
    let router = unit_of(&["api".to_string(), "router".to_string()]).expect("router");
    assert_eq!(family.0, "api::content");
    assert!(family.1 > router.1);
    // `super::super::` climbs two levels.
    let deep: Vec<String> = ["a", "b", "c"].map(String::from).to_vec();
    let p = crate_paths(&deep, "use super::super::x::Y;\n");
    assert_eq!(p, vec![["a", "x", "Y"].map(String::from).to_vec()]);
}
