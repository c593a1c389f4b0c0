//! The shape of the source tree: imports among `src/` modules run one way.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;

/// Module name -> the crate modules its code (tests included) names as `crate::module`.
type Graph = BTreeMap<String, BTreeSet<String>>;

/// The top-level modules of `src/` and what each imports. A file `src/a/b.rs` belongs to `a`.
fn import_graph(src: &Path) -> Graph {
    let mut graph = Graph::new();
    let mut files = Vec::new();
    collect_rust_files(src, &mut files);
    for file in files {
        let relative = file.strip_prefix(src).expect("under src");
        let first = relative.components().next().expect("a component");
        let module = Path::new(first.as_os_str())
            .file_stem()
            .expect("a name")
            .to_string_lossy()
            .into_owned();
        let text = fs::read_to_string(&file).expect("readable source");
        let imports = graph.entry(module.clone()).or_default();
        for name in crate_paths(&text) {
            if name != module {
                imports.insert(name);
            }
        }
    }
    graph
}

fn collect_rust_files(dir: &Path, files: &mut Vec<std::path::PathBuf>) {
    for entry in fs::read_dir(dir).expect("readable directory") {
        let path = entry.expect("an entry").path();
        if path.is_dir() {
            collect_rust_files(&path, files);
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
}

/// The first segment of every `crate::...` path in code (comments left out), including each
/// name of a `crate::{a, b::c}` group.
fn crate_paths(text: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for line in text.lines() {
        let code = line.split("//").next().unwrap_or("");
        let mut rest = code;
        while let Some(at) = rest.find("crate::") {
            let after = &rest[at + "crate::".len()..];
            let preceded_by_word = rest[..at]
                .chars()
                .next_back()
                .is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$');
            if !preceded_by_word {
                if let Some(group) = after.strip_prefix('{') {
                    let group = group.split('}').next().unwrap_or("");
                    names.extend(group.split(',').filter_map(first_segment));
                } else if let Some(name) = first_segment(after) {
                    names.insert(name);
                }
            }
            rest = after;
        }
    }
    names
}

fn first_segment(path: &str) -> Option<String> {
    let name: String = path
        .trim_start()
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect();
    (!name.is_empty() && name != "self").then_some(name)
}

/// One cycle of the graph, as the path that closes it, if there is one.
fn find_cycle(graph: &Graph) -> Option<Vec<String>> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        Open,
        Done,
    }
    fn visit(
        node: &str,
        graph: &Graph,
        marks: &mut BTreeMap<String, Mark>,
        path: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        match marks.get(node) {
            Some(Mark::Done) => return None,
            Some(Mark::Open) => {
                let from = path.iter().position(|n| n == node).expect("on the path");
                let mut cycle = path[from..].to_vec();
                cycle.push(node.to_string());
                return Some(cycle);
            }
            None => {}
        }
        marks.insert(node.to_string(), Mark::Open);
        path.push(node.to_string());
        for next in graph.get(node).into_iter().flatten() {
            if let Some(cycle) = visit(next, graph, marks, path) {
                return Some(cycle);
            }
        }
        path.pop();
        marks.insert(node.to_string(), Mark::Done);
        None
    }
    let mut marks = BTreeMap::new();
    graph
        .keys()
        .find_map(|node| visit(node, graph, &mut marks, &mut Vec::new()))
}

#[test]
fn imports_among_modules_run_one_way() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let graph = import_graph(&src);
    // The walk saw the tree: the library's modules and their known edges are there.
    assert!(graph["runner"].contains("driver"), "{graph:?}");
    assert!(graph["settings"].contains("cli"), "{graph:?}");
    if let Some(cycle) = find_cycle(&graph) {
        panic!("an import cycle among src/ modules: {}", cycle.join(" -> "));
    }
}

#[test]
fn the_cycle_check_finds_a_cycle_and_reads_groups() {
    let source = "use crate::{a, b::C};\nuse crate::c::D; // crate::e\nlet x = crate::f::g();\n";
    let names: Vec<String> = crate_paths(source).into_iter().collect();
    assert_eq!(names, ["a", "b", "c", "f"]);
    let graph = |edges: &[(&str, &str)]| {
        let mut graph = Graph::new();
        for (from, to) in edges {
            graph
                .entry(from.to_string())
                .or_default()
                .insert(to.to_string());
            graph.entry(to.to_string()).or_default();
        }
        graph
    };
    let cycle =
        find_cycle(&graph(&[("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")])).expect("a cycle");
    assert_eq!(cycle.first(), cycle.last());
    assert_eq!(cycle.len(), 4);
    assert_eq!(
        find_cycle(&graph(&[("a", "b"), ("a", "c"), ("b", "c")])),
        None
    );
}

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn read(path: &str) -> String {
    fs::read_to_string(Path::new(ROOT).join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The README is what a user reads in two minutes, and its test command is the one CI runs.
#[test]
fn the_readme_is_short_and_ci_runs_its_test_command() {
    let readme = read("README.md");
    assert!(
        readme.len() < 12 * 1024,
        "README.md is {} bytes",
        readme.len()
    );
    assert!(readme.contains("\n    cargo test\n"), "the test command");
    assert!(
        readme.contains("\n    cargo run --release -- "),
        "the run command"
    );
    let ci = read(".ci/run");
    assert!(
        ci.lines().any(|line| line.trim() == "cargo test"),
        ".ci/run runs the README's test command"
    );
}

/// The documents, and the sources' comments (rustdoc is a document too), say the rules
/// themselves, never where they came from outside the repository.
#[test]
fn no_document_points_outside_the_repository() {
    let mut sources = Vec::new();
    collect_rust_files(&Path::new(ROOT).join("src"), &mut sources);
    let sources: Vec<String> = sources
        .iter()
        .map(|file| {
            let relative = file.strip_prefix(ROOT).expect("under the root");
            relative.to_string_lossy().into_owned()
        })
        .collect();
    let documents = [
        "README.md",
        "CONTRIBUTING.md",
        "docs/guide.md",
        "docs/reference.md",
        "man/sections.toml",
        "config.example.toml",
        "CHANGELOG.md",
        "BENCHMARKS.md",
        "RELIABILITY.md",
    ];
    for path in documents
        .iter()
        .copied()
        .chain(sources.iter().map(String::as_str))
    {
        let text = read(path).to_lowercase();
        for phrase in ["fine point", "the contract", "contract.md"] {
            assert!(!text.contains(phrase), "{path} mentions {phrase:?}");
        }
    }
}
