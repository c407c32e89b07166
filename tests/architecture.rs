//! The module graph stays one-way: the top-level modules of `src/` stand in declared layers
//! ([`LAYERS`]) and import only their own layer or the ones below; no import cycle between
//! them, nor between sibling modules inside any of them. Imports are read from the source text
//! (`crate::a::b`, `super::x`, `super::{x, y}`, `crate::a::{b, c}`); unit-test modules are left
//! out, since tests may reach anywhere.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

type Graph = BTreeMap<String, BTreeSet<String>>;

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// `src/a/b.rs` and `src/a/b/mod.rs` are both `["a", "b"]`.
fn module_path(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).unwrap().with_extension("");
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    parts
}

/// The code outside `#[cfg(test)]` items, wherever they stand: a test module, a single
/// function or a `use` (a file of its own named `tests.rs` is left out by its name).
fn production_code(text: &str) -> String {
    let mut kept = String::new();
    let mut rest = text;
    while let Some(at) = rest.find("#[cfg(test)]") {
        kept.push_str(&rest[..at]);
        rest = &rest[at + "#[cfg(test)]".len()..];
        rest = &rest[item_end(rest)..];
    }
    kept.push_str(rest);
    kept
}

/// The length of the item at the start of `text`: up to its first `;` when that comes before
/// any `{` (`use a::b;`, `mod tests;`), else up to the brace that closes the first `{`. Braces
/// inside string and char literals and comments do not count.
fn item_end(text: &str) -> usize {
    let bytes = text.as_bytes();
    let mut depth = 0usize;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => {
                i += 1;
                while i < bytes.len() && bytes[i] != b'"' {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
            }
            b'\'' if bytes.get(i + 2) == Some(&b'\'') => i += 2,
            b'\'' if bytes.get(i + 1) == Some(&b'\\') => {
                i += 2;
                while i < bytes.len() && bytes[i] != b'\'' {
                    i += 1;
                }
            }
            b'/' if bytes.get(i + 1) == Some(&b'/') => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
            }
            b';' if depth == 0 => return i + 1,
            b'{' => depth += 1,
            b'}' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return i + 1;
                }
            }
            _ => {}
        }
        i += 1;
    }
    bytes.len()
}

fn words_after<'t>(text: &'t str, prefix: &str) -> Vec<&'t str> {
    text.match_indices(prefix)
        .filter(|(at, _)| {
            !text[..*at]
                .chars()
                .next_back()
                .is_some_and(|c| c.is_alphanumeric() || c == '_')
        })
        .map(|(at, _)| &text[at + prefix.len()..])
        .collect()
}

/// The module paths a piece of source refers to, absolute from the crate root.
fn references(text: &str, module: &[String]) -> Vec<Vec<String>> {
    // `super` is the parent module, whether the file is `a/b.rs` or `a/b/mod.rs`.
    let parent_of_self = module[..module.len().saturating_sub(1)].to_vec();
    let ident = |s: &str| -> String {
        s.chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect()
    };
    let path_then_group = |rest: &str| -> Vec<Vec<String>> {
        // `a::b::{c, d}` or `a::b::c`: the segments, and each name of a trailing group.
        let mut segments = Vec::new();
        let mut rest = rest;
        loop {
            if let Some(group) = rest.strip_prefix('{') {
                let inner = group.split('}').next().unwrap_or("");
                return inner
                    .split(',')
                    .map(|n| ident(n.trim()))
                    .filter(|n| !n.is_empty())
                    .map(|n| {
                        let mut p = segments.clone();
                        p.push(n);
                        p
                    })
                    .collect();
            }
            let name = ident(rest);
            if name.is_empty() {
                return vec![segments];
            }
            rest = &rest[name.len()..];
            segments.push(name);
            match rest.strip_prefix("::") {
                Some(r) => rest = r,
                None => return vec![segments],
            }
        }
    };
    let mut refs = Vec::new();
    for rest in words_after(text, "crate::") {
        refs.extend(path_then_group(rest));
    }
    for rest in words_after(text, "super::") {
        for p in path_then_group(rest) {
            let mut full = parent_of_self.clone();
            full.extend(p);
            refs.push(full);
        }
    }
    refs
}

fn graphs() -> (Graph, Graph) {
    graphs_of(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"))
}

/// The top-level and sibling import graphs of the crate whose source is `src`.
fn graphs_of(src: &Path) -> (Graph, Graph) {
    let src = src.to_path_buf();
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut top = Graph::new();
    let mut siblings = Graph::new();
    for file in files {
        let module = module_path(&src, &file);
        if module.is_empty()
            || module == ["main"]
            || module == ["lib"]
            || module
                .last()
                .is_some_and(|m| m == "tests" || m.ends_with("_tests"))
        {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap();
        for target in references(&production_code(&text), &module) {
            if target.is_empty() {
                continue;
            }
            if target[0] != module[0] {
                top.entry(module[0].clone())
                    .or_default()
                    .insert(target[0].clone());
            }
            // Siblings: same parent, different child.
            let depth = module.len() - 1;
            if depth >= 1
                && target.len() > depth
                && target[..depth] == module[..depth]
                && target[depth] != module[depth]
            {
                siblings
                    .entry(module[..=depth].join("::"))
                    .or_default()
                    .insert(target[..=depth].join("::"));
            }
        }
    }
    (top, siblings)
}

/// Every cycle's members (strongly connected components of two or more nodes).
fn cycles(graph: &Graph) -> Vec<Vec<String>> {
    let nodes: BTreeSet<&String> = graph.keys().chain(graph.values().flatten()).collect();
    let reaches = |from: &String| -> BTreeSet<String> {
        let mut seen = BTreeSet::new();
        let mut todo = vec![from.clone()];
        while let Some(n) = todo.pop() {
            for next in graph.get(&n).into_iter().flatten() {
                if seen.insert(next.clone()) {
                    todo.push(next.clone());
                }
            }
        }
        seen
    };
    let reach: BTreeMap<&String, BTreeSet<String>> =
        nodes.iter().map(|n| (*n, reaches(n))).collect();
    let mut found: BTreeSet<Vec<String>> = BTreeSet::new();
    for n in &nodes {
        let mut component: Vec<String> = nodes
            .iter()
            .filter(|m| reach[*n].contains(**m) && reach[**m].contains(*n))
            .map(|m| (*m).clone())
            .collect();
        component.sort();
        if component.len() > 1 {
            found.insert(component);
        }
    }
    found.into_iter().collect()
}

#[test]
fn top_level_modules_import_each_other_one_way_only() {
    let (top, _) = graphs();
    assert!(
        top.contains_key("engine") && top.contains_key("exec"),
        "{top:?}"
    );
    assert_eq!(cycles(&top), Vec::<Vec<String>>::new(), "{top:#?}");
}

#[test]
fn sibling_modules_import_each_other_one_way_only() {
    let (_, siblings) = graphs();
    assert!(!siblings.is_empty());
    assert_eq!(
        cycles(&siblings),
        Vec::<Vec<String>>::new(),
        "{siblings:#?}"
    );
}

#[test]
fn the_checker_sees_a_cycle() {
    let mut g = Graph::new();
    g.entry("a".into()).or_default().insert("b".into());
    g.entry("b".into()).or_default().insert("c".into());
    g.entry("c".into()).or_default().insert("a".into());
    g.entry("c".into()).or_default().insert("d".into());
    assert_eq!(
        cycles(&g),
        vec![vec!["a".to_string(), "b".into(), "c".into()]]
    );
    let refs = references(
        "use super::{x, y::z};\nuse crate::api::{types, client::Client};",
        &["engine".into(), "call".into()],
    );
    assert!(
        refs.contains(&vec!["engine".into(), "x".into()]),
        "{refs:?}"
    );
    assert!(
        refs.contains(&vec!["engine".into(), "y".into()]),
        "{refs:?}"
    );
    assert!(
        refs.contains(&vec!["api".into(), "client".into()]),
        "{refs:?}"
    );
}

#[test]
fn test_only_items_are_left_out_wherever_they_stand() {
    let text = "use crate::a::X;\n#[cfg(test)]\npub fn new() -> S { let s = \"}\"; crate::b::f(s) }\nfn g() { crate::c::h() }\n#[cfg(test)]\nuse crate::d::Y;\n#[cfg(test)]\nmod tests { fn t() { crate::e::z('}') } }\n";
    let kept = production_code(text);
    for (module, expected) in [
        ("a", true),
        ("b", false),
        ("c", true),
        ("d", false),
        ("e", false),
    ] {
        assert_eq!(
            kept.contains(&format!("crate::{module}::")),
            expected,
            "{module} in {kept}"
        );
    }
}

/// The front ends (the terminal ones and the wave-3 systems) stand side by side: none imports
/// another, so each reaches brains and the engine only through what lies below them.
#[test]
fn front_ends_never_import_each_other() {
    const FRONT_ENDS: [&str; 8] = [
        "cli", "repl", "serve", "daemon", "bundle", "agent", "eval", "memory",
    ];
    let (top, _) = graphs();
    for (from, targets) in &top {
        if !FRONT_ENDS.contains(&from.as_str()) {
            continue;
        }
        let crossing: Vec<&String> = targets
            .iter()
            .filter(|t| FRONT_ENDS.contains(&t.as_str()))
            .collect();
        assert!(crossing.is_empty(), "{from} imports {crossing:?}");
    }
}

/// Every file a user's clone has, under the folders that must not reach outside it.
fn repository_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        if name == "node_modules" || name == "target" || name.starts_with('.') {
            continue;
        }
        if path.is_dir() {
            repository_files(&path, out);
        } else if std::fs::read_to_string(&path).is_ok() {
            out.push(path);
        }
    }
}

/// Paths outside the repository that `text` (a file at `file`) names: the folder beside the
/// repository that only developers have, a `CARGO_MANIFEST_DIR` path that climbs out, and
/// Markdown links that leave the repository.
fn outside_paths(root: &Path, file: &Path, text: &str) -> Vec<String> {
    let beside = ["..", "/shared"].concat();
    let mut found: Vec<String> = text
        .match_indices(&beside)
        .map(|(at, _)| text[at..].chars().take(60).collect())
        .collect();
    let manifest = ["CARGO_MANIFEST_DIR", "\"))"].concat();
    for (at, _) in text.match_indices(&manifest) {
        let rest: String = text[at + manifest.len()..]
            .chars()
            .filter(|c| !c.is_whitespace())
            .take(12)
            .collect();
        if rest.starts_with(".join(\"..") {
            found.push(format!("CARGO_MANIFEST_DIR{rest}"));
        }
    }
    if file.extension().is_some_and(|e| e == "md") {
        for (at, _) in text.match_indices("](") {
            let target: String = text[at + 2..].chars().take_while(|c| *c != ')').collect();
            if target.contains("://") || target.starts_with('#') || target.starts_with("mailto:") {
                continue;
            }
            let mut depth = file
                .parent()
                .unwrap()
                .strip_prefix(root)
                .unwrap()
                .components()
                .count() as i64;
            for part in target.split('#').next().unwrap_or("").split('/') {
                match part {
                    ".." => depth -= 1,
                    "" | "." => {}
                    _ => depth += 1,
                }
                if depth < 0 {
                    found.push(target.clone());
                    break;
                }
            }
        }
    }
    found
}

/// A user's clone has nothing beside it: no source, test, bench or page may read or cite a
/// path outside the repository.
#[test]
fn the_repository_stands_alone() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = vec![root.join("README.md")];
    for dir in [
        "src", "tests", "benches", "docs", "prompts", "tools", "examples",
    ] {
        if root.join(dir).is_dir() {
            repository_files(&root.join(dir), &mut files);
        }
    }
    let mut outside = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        for path in outside_paths(root, file, &text) {
            outside.push(format!(
                "{}: {path}",
                file.strip_prefix(root).unwrap().display()
            ));
        }
    }
    assert!(files.len() > 100, "only {} files", files.len());
    assert!(
        outside.is_empty(),
        "paths outside the repository: {outside:#?}"
    );
}

#[test]
fn the_stand_alone_check_sees_paths_that_leave() {
    let root = Path::new("/repo");
    let rs = Path::new("/repo/src/a.rs");
    let beside = ["..", "/shared/x.md"].concat();
    assert_eq!(outside_paths(root, rs, &format!("see {beside}")).len(), 1);
    let climb = ["Path::new(env!(\"CARGO_MANIFEST_DIR\")).join(\"..", "/x\")"].concat();
    assert_eq!(outside_paths(root, rs, &climb).len(), 1);
    let inside = "Path::new(env!(\"CARGO_MANIFEST_DIR\")).join(\"tests/fixtures\")";
    assert!(outside_paths(root, rs, inside).is_empty());
    let doc = Path::new("/repo/docs/a.md");
    assert!(outside_paths(root, doc, "[readme](../README.md)").is_empty());
    assert_eq!(outside_paths(root, doc, "[x](../../other/y.md)").len(), 1);
    let readme = Path::new("/repo/README.md");
    assert_eq!(outside_paths(root, readme, "[x](../y.md)").len(), 1);
    assert!(outside_paths(root, readme, "[x](https://a/../b)").is_empty());
}

/// The layers of the crate, top to bottom. A module imports only modules of its own layer or
/// of layers below it; every top-level module stands in one. `docs/architecture.md` draws it.
const LAYERS: &[(&str, &[&str])] = &[
    ("the binary's router", &["cli"]),
    ("the benchmark of the front ends", &["bench"]),
    (
        "front ends",
        &[
            "repl", "serve", "daemon", "bundle", "sdk", "agent", "eval", "memory",
        ],
    ),
    ("session assembly and brains", &["app", "brain"]),
    ("sub-agents and personas", &["agents"]),
    ("the query loop", &["engine"]),
    (
        "the executor and tool sources",
        &["exec", "mcp", "skills", "plugins"],
    ),
    ("tools", &["tools"]),
    (
        "permissions, checkpoints, sessions",
        &["permissions", "checkpoint", "session", "knowledge"],
    ),
    (
        "wire types and settings",
        &[
            "api",
            "settings",
            "event",
            "stream_json",
            "ui_event",
            "mock",
            "frontmatter",
            "paws",
        ],
    ),
    ("the operating system and text", &["sys", "text"]),
];

fn layer_of(module: &str) -> Option<usize> {
    LAYERS
        .iter()
        .position(|(_, members)| members.contains(&module))
}

/// Every import of `graph` that goes up a layer, and every module that stands in none.
fn layering_faults(graph: &Graph) -> Vec<String> {
    let mut faults = Vec::new();
    for (from, targets) in graph {
        let Some(own) = layer_of(from) else {
            faults.push(format!("{from} stands in no layer"));
            continue;
        };
        for to in targets {
            match layer_of(to) {
                None => faults.push(format!("{to} stands in no layer")),
                Some(theirs) if theirs < own => faults.push(format!(
                    "{from} ({}) imports {to} ({}), a layer above it",
                    LAYERS[own].0, LAYERS[theirs].0
                )),
                Some(_) => {}
            }
        }
    }
    faults.sort();
    faults.dedup();
    faults
}

#[test]
fn imports_only_go_down_the_layers() {
    let (top, _) = graphs();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut faults = layering_faults(&top);
    for entry in std::fs::read_dir(&src).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        if !matches!(name.as_str(), "lib" | "main") && layer_of(&name).is_none() {
            faults.push(format!("{name} stands in no layer"));
        }
    }
    assert_eq!(faults, Vec::<String>::new());
}

/// A synthetic crate where a low module imports the engine: the check names that import.
#[test]
fn the_layer_check_sees_an_upward_import() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    for (file, text) in [
        (
            "engine/mod.rs",
            "use crate::tools::Tool;\npub struct Engine;\n",
        ),
        (
            "tools/mod.rs",
            "use crate::sys::process;\npub trait Tool {}\n",
        ),
        ("sys/mod.rs", "pub fn spawn() { crate::engine::Engine; }\n"),
        ("sys/process.rs", "use super::spawn;\n"),
    ] {
        let path = src.join(file);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    let (top, _) = graphs_of(&src);
    assert_eq!(
        layering_faults(&top),
        ["sys (the operating system and text) imports engine (the query loop), a layer above it"]
    );
    let mut unknown = Graph::new();
    unknown
        .entry("gadgets".into())
        .or_default()
        .insert("sys".into());
    assert_eq!(layering_faults(&unknown), ["gadgets stands in no layer"]);
}

/// The README stays a newcomer's page (its first lines are the two commands; reference pages
/// live in `docs/`), and every relative link of it and of the pages leads to a file.
#[test]
fn the_readme_is_short_and_every_page_link_leads_to_a_file() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    assert!(
        readme.lines().count() < 300,
        "the README has grown past 300 lines"
    );
    assert!(
        readme.contains("cargo run --release -- demo") && readme.contains("cargo test --locked")
    );
    let mut pages = vec![root.join("README.md")];
    for entry in std::fs::read_dir(root.join("docs")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "md") {
            pages.push(path);
        }
    }
    let mut broken = Vec::new();
    for page in &pages {
        let text = std::fs::read_to_string(page).unwrap();
        for link in text.split("](").skip(1) {
            let Some(target) = link.split(')').next() else {
                continue;
            };
            let target = target.split('#').next().unwrap_or("");
            if target.is_empty() || target.contains("://") {
                continue;
            }
            if !page.parent().unwrap().join(target).exists() {
                broken.push(format!("{}: {target}", page.display()));
            }
        }
    }
    assert!(broken.is_empty(), "links to nothing: {broken:#?}");
}
