//! The library's layering, checked on its source: a file of `src/` names
//! (`crate::…`) only its own top-level module and the layers below it,
//! never one beside or above it. This is what splitting the library into
//! one crate per layer would make the compiler check (docs/design.md says
//! why the library stays one crate); ARCHITECTURE.md draws the same
//! layers. Inside a folder the same holds without layers: the files and
//! subfolders of one folder name each other without a circle (the second
//! test). Test modules (`#[cfg(test)] mod …`, `tests.rs`) and comments are
//! not checked: a test may use anything.

use std::path::{Path, PathBuf};

/// The top-level modules of `src/`, bottom layer first. `lib` is the crate
/// root (`crate::Name` of a re-exported item); modules of one layer do not
/// name each other.
const LAYERS: &[&[&str]] = &[
    &["error", "progress", "rng", "id_set"],
    &["format", "checkpoint_meta", "link_metrics", "size"],
    &["io"],
    &["store"],
    &["sample"],
    &["cache", "import"],
    &["inspect", "export"],
    &["exec", "verify"],
    &["train", "loader"],
    &["lib", "internals"],
];

fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|l| l.contains(&module))
}

/// The top-level module a file of `src/` belongs to (`src/sample/labor.rs`
/// → `sample`, `src/loader.rs` → `loader`).
fn module_of(src: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(src).expect("a file under src/");
    let first = rel.components().next().expect("a file name");
    let name = first.as_os_str().to_string_lossy();
    name.strip_suffix(".rs").unwrap_or(&name).to_string()
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read a source folder") {
        let path = entry.expect("a folder entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The file's code lines before its test module, comments removed, with
/// their 1-based line numbers.
fn code_lines(text: &str) -> Vec<(usize, String)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let next = lines.get(i + 1).map_or("", |l| l.trim_start());
        let is_test_module = line.trim() == "#[cfg(test)]"
            && (next.starts_with("mod ") || (next.contains(" mod ") && next.ends_with('{')));
        if is_test_module && !line.starts_with(' ') {
            break;
        }
        let code = line.split("//").next().unwrap_or("");
        out.push((i + 1, code.to_string()));
    }
    out
}

/// The first path segment of every `crate::…` path in `code`: `crate::a::b`
/// gives `a`, `crate::{a::b, c}` gives `a` and `c`.
fn crate_heads(code: &str) -> Vec<String> {
    let mut heads = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find("crate::") {
        let before = rest[..at].chars().next_back();
        rest = &rest[at + "crate::".len()..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$') {
            continue; // `$crate::` or part of a longer name
        }
        if let Some(group) = rest.strip_prefix('{') {
            let mut depth = 0usize;
            let mut item_start = true;
            for (i, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => item_start = true,
                    c if item_start && (c.is_alphanumeric() || c == '_') => {
                        let ident: String = group[i..]
                            .chars()
                            .take_while(|c| c.is_alphanumeric() || *c == '_')
                            .collect();
                        heads.push(ident);
                        item_start = false;
                    }
                    c if c.is_whitespace() => {}
                    _ => item_start = false,
                }
            }
        } else {
            let ident: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if !ident.is_empty() {
                heads.push(ident);
            }
        }
    }
    heads
}

/// Every `crate::` reference of the library that runs sideways or up a
/// layer, as `file:line: …` lines.
fn violations(src: &Path) -> Vec<String> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    files.sort();
    let mut bad = Vec::new();
    for file in &files {
        let module = module_of(src, file);
        let Some(own) = layer_of(&module) else {
            bad.push(format!(
                "{}: module `{module}` is in no layer: add it to LAYERS in tests/layers.rs and to ARCHITECTURE.md",
                file.display()
            ));
            continue;
        };
        let text = std::fs::read_to_string(file).expect("read a source file");
        for (line, code) in code_lines(&text) {
            for head in crate_heads(&code) {
                let target = if layer_of(&head).is_some() {
                    head
                } else {
                    "lib".to_string()
                };
                if target == module {
                    continue;
                }
                let theirs = layer_of(&target).expect("a known module");
                if theirs >= own {
                    bad.push(format!(
                        "{}:{line}: `{module}` (layer {own}) names `crate::{target}` (layer {theirs}), which is not below it",
                        file.display()
                    ));
                }
            }
        }
    }
    bad
}

/// The module path of a file of `src/`: `src/exec/plan.rs` and
/// `src/exec/plan/mod.rs` are `exec::plan`, `src/lib.rs` is the root.
fn module_path(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).expect("a file under src/");
    let mut path: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if let Some(last) = path.pop() {
        let stem = last.strip_suffix(".rs").unwrap_or(&last).to_string();
        if !matches!(stem.as_str(), "mod" | "lib") {
            path.push(stem);
        }
    }
    path
}

/// Every path named in `code` from the crate root, as its segments:
/// `crate::a::{b, c::d}` gives `a::b` and `a::c::d`; `super::x` in the
/// file of module `own` is resolved against its parent.
fn named_paths(code: &str, own: &[String]) -> Vec<Vec<String>> {
    fn ident(s: &str) -> String {
        s.chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect()
    }
    // The paths of a `use` tree starting at `s` (after `prefix::`).
    fn tree(s: &str, prefix: &[String], out: &mut Vec<Vec<String>>) {
        let mut path = prefix.to_vec();
        let mut rest = s.trim_start();
        loop {
            if let Some(group) = rest.strip_prefix('{') {
                let mut depth = 0usize;
                let mut start = 0usize;
                for (i, c) in group.char_indices() {
                    match c {
                        '{' => depth += 1,
                        '}' if depth == 0 => {
                            tree(&group[start..i], &path, out);
                            return;
                        }
                        '}' => depth -= 1,
                        ',' if depth == 0 => {
                            tree(&group[start..i], &path, out);
                            start = i + 1;
                        }
                        _ => {}
                    }
                }
                return;
            }
            let name = ident(rest);
            if name.is_empty() {
                break;
            }
            rest = &rest[name.len()..];
            path.push(name);
            match rest.strip_prefix("::") {
                Some(r) => rest = r,
                None => break,
            }
        }
        out.push(path);
    }
    let mut out = Vec::new();
    for (marker, base) in [
        ("crate::", Vec::new()),
        ("super::", own[..own.len().saturating_sub(1)].to_vec()),
    ] {
        let mut rest = code;
        while let Some(at) = rest.find(marker) {
            let before = rest[..at].chars().next_back();
            rest = &rest[at + marker.len()..];
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$' || c == ':') {
                continue; // `$crate::`, `super::super::` or part of a longer name
            }
            tree(rest, &base, &mut out);
        }
    }
    out
}

/// The circles among the files and subfolders of each folder of `src`:
/// `a.rs` (or `a/`) names `b` of the same folder and `b` names `a`, or a
/// longer ring. One line per circle, `folder: a → b → a`.
fn folder_circles(src: &Path) -> Vec<String> {
    use std::collections::{BTreeMap, BTreeSet};
    let mut files = Vec::new();
    rust_files(src, &mut files);
    files.sort();
    // folder → child → children of the same folder it names.
    let mut edges: BTreeMap<Vec<String>, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
    let mut children: BTreeMap<Vec<String>, BTreeSet<String>> = BTreeMap::new();
    let modules: Vec<Vec<String>> = files.iter().map(|f| module_path(src, f)).collect();
    for m in &modules {
        for i in 0..m.len() {
            children
                .entry(m[..i].to_vec())
                .or_default()
                .insert(m[i].clone());
        }
    }
    for (file, own) in files.iter().zip(&modules) {
        if file.file_name().is_some_and(|n| n == "tests.rs") {
            continue;
        }
        let text = std::fs::read_to_string(file).expect("read a source file");
        for (_, code) in code_lines(&text) {
            for path in named_paths(&code, own) {
                let shared = own.iter().zip(&path).take_while(|(a, b)| a == b).count();
                let (Some(from), Some(to)) = (own.get(shared), path.get(shared)) else {
                    continue; // a parent naming its child, or a child its parent
                };
                let folder = own[..shared].to_vec();
                if children.get(&folder).is_some_and(|c| c.contains(to)) {
                    edges
                        .entry(folder)
                        .or_default()
                        .entry(from.clone())
                        .or_default()
                        .insert(to.clone());
                }
            }
        }
    }
    let mut circles = Vec::new();
    for (folder, graph) in &edges {
        // Depth-first search; a node on the current path reached again
        // closes a circle.
        fn visit(
            node: &str,
            graph: &BTreeMap<String, BTreeSet<String>>,
            path: &mut Vec<String>,
            done: &mut BTreeSet<String>,
            found: &mut Vec<Vec<String>>,
        ) {
            if let Some(at) = path.iter().position(|p| p == node) {
                let mut ring = path[at..].to_vec();
                ring.push(node.to_string());
                found.push(ring);
                return;
            }
            if !done.insert(node.to_string()) {
                return;
            }
            path.push(node.to_string());
            for next in graph.get(node).into_iter().flatten() {
                visit(next, graph, path, done, found);
            }
            path.pop();
        }
        let mut done = BTreeSet::new();
        let mut found = Vec::new();
        for start in graph.keys() {
            visit(start, graph, &mut Vec::new(), &mut done, &mut found);
        }
        let name = if folder.is_empty() {
            "src".to_string()
        } else {
            format!("src/{}", folder.join("/"))
        };
        for ring in found {
            circles.push(format!("{name}: {}", ring.join(" → ")));
        }
    }
    circles
}

#[test]
fn no_folder_has_a_circle_of_imports() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let circles = folder_circles(&src);
    assert!(
        circles.is_empty(),
        "files of one folder that name each other in a circle (split the shared part into a file both name):\n{}",
        circles.join("\n")
    );
}

#[test]
fn the_circle_check_sees_rings_through_groups_super_and_subfolders() {
    let own = ["exec".to_string(), "plan".to_string()];
    assert_eq!(
        named_paths("use crate::exec::{epoch::run, config::{A, B}};", &own),
        [
            vec!["exec", "epoch", "run"],
            vec!["exec", "config", "A"],
            vec!["exec", "config", "B"]
        ]
    );
    assert_eq!(
        named_paths("super::lockstep::x", &own),
        [vec!["exec", "lockstep", "x"]]
    );

    let dir = tempfile::tempdir().unwrap();
    let exec = dir.path().join("exec");
    std::fs::create_dir_all(exec.join("plan")).unwrap();
    std::fs::write(
        exec.join("mod.rs"),
        "pub mod a;\npub mod b;\npub mod plan;\n",
    )
    .unwrap();
    std::fs::write(exec.join("a.rs"), "use crate::exec::b::X;\n").unwrap();
    std::fs::write(exec.join("b.rs"), "use super::plan::probe;\n").unwrap();
    std::fs::write(exec.join("plan.rs"), "mod inner;\n").unwrap();
    // The ring closes from a file of the subfolder: exec/plan/inner.rs.
    std::fs::write(exec.join("plan/inner.rs"), "use crate::exec::{a::run};\n").unwrap();
    std::fs::write(exec.join("plan/tests.rs"), "use crate::exec::b;\n").unwrap();
    let circles = folder_circles(dir.path());
    assert_eq!(circles, ["src/exec: a → b → plan → a"], "{circles:?}");
    // Broken: no circle.
    std::fs::write(exec.join("plan/inner.rs"), "use crate::exec::config;\n").unwrap();
    assert!(folder_circles(dir.path()).is_empty());
}

#[test]
fn every_library_file_names_only_the_layers_below_its_own() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let bad = violations(&src);
    assert!(
        bad.is_empty(),
        "imports that run sideways or back up the layers (ARCHITECTURE.md):\n{}",
        bad.join("\n")
    );
}

#[test]
fn the_check_sees_groups_re_exports_and_test_modules() {
    assert_eq!(
        crate_heads("use crate::{error::Result, store::{Store, StoreSpec}, Loader};"),
        ["error", "store", "Loader"]
    );
    assert_eq!(
        crate_heads("x: crate::sample::Hop, y: $crate::io"),
        ["sample"]
    );
    let text = "use crate::io::read;\n// crate::train in a comment\n#[cfg(test)]\nmod tests {\n    use crate::loader::Loader;\n}\n";
    let lines = code_lines(text);
    let heads: Vec<String> = lines.iter().flat_map(|(_, c)| crate_heads(c)).collect();
    assert_eq!(heads, ["io"]);

    // A sideways or upward name is caught, with its file and line.
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    std::fs::create_dir(&store).unwrap();
    std::fs::write(store.join("mod.rs"), "use crate::format::csc;\n").unwrap();
    std::fs::write(store.join("gather.rs"), "\nuse crate::exec::plan;\n").unwrap();
    std::fs::write(dir.path().join("rng.rs"), "use crate::Loader;\n").unwrap();
    let bad = violations(dir.path());
    assert_eq!(bad.len(), 2, "{bad:?}");
    assert!(bad
        .iter()
        .any(|b| b.contains("gather.rs:2") && b.contains("crate::exec")));
    assert!(bad
        .iter()
        .any(|b| b.contains("rng.rs:1") && b.contains("crate::lib")));
}
