//! The shape of the source tree: imports among `src/` modules run one way, among the top-level
//! modules and among the modules of every sub-folder alike.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// Module -> the crate modules its code (tests included) names. A module is its path below the
/// crate, `log::json` for `src/log/json.rs`; a folder's `mod.rs` is the folder's module.
type Graph = BTreeMap<String, BTreeSet<String>>;

/// Every module of `src/` and the modules each names: through `crate::`, `super::` and
/// `self::` paths, and by the bare name of a module of its own (`json::lines` in
/// `log/mod.rs`). A path names the deepest module it passes through.
fn import_graph(src: &Path) -> Graph {
    let mut files = Vec::new();
    collect_rust_files(src, &mut files);
    let modules: Vec<(Vec<String>, PathBuf)> = files
        .into_iter()
        .map(|file| (module_path(src, &file), file))
        .collect();
    let known: BTreeSet<Vec<String>> = modules.iter().map(|(path, _)| path.clone()).collect();
    let mut graph = Graph::new();
    for (module, file) in &modules {
        let text = fs::read_to_string(file).expect("readable source");
        graph.insert(module.join("::"), imports_of(&text, module, &known));
    }
    graph
}

/// The modules, other than itself, that the code of `module` names.
fn imports_of(text: &str, module: &[String], known: &BTreeSet<Vec<String>>) -> BTreeSet<String> {
    named_paths(text, module, known)
        .iter()
        .map(|named| deepest_module(named, known))
        .filter(|target| !target.is_empty() && target != module)
        .map(|target| target.join("::"))
        .collect()
}

/// `src/a/b.rs` and `src/a/b/mod.rs` are `a::b`; `src/lib.rs` is `lib`.
fn module_path(src: &Path, file: &Path) -> Vec<String> {
    let relative = file
        .strip_prefix(src)
        .expect("under src")
        .with_extension("");
    let mut path: Vec<String> = relative
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if path.len() > 1 && path.last().is_some_and(|last| last == "mod") {
        path.pop();
    }
    path
}

/// The longest start of `path` that is a module of the tree.
fn deepest_module(path: &[String], known: &BTreeSet<Vec<String>>) -> Vec<String> {
    (1..=path.len())
        .rev()
        .map(|n| path[..n].to_vec())
        .find(|start| known.contains(start))
        .unwrap_or_default()
}

fn collect_rust_files(dir: &Path, files: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).expect("readable directory") {
        let path = entry.expect("an entry").path();
        if path.is_dir() {
            collect_rust_files(&path, files);
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
}

/// The full paths, from the crate's root, of what the code of `module` (comments and strings
/// left out) names through `crate::`, `super::`, `self::` or one of its own modules' names, each name of
/// a `{a, b::c}` group apart. A `super::` inside an inline `mod tests { ... }` first leaves that
/// block (rustfmt closes a block at the indent that opened it).
fn named_paths(text: &str, module: &[String], known: &BTreeSet<Vec<String>>) -> Vec<Vec<String>> {
    let children: BTreeSet<&str> = known
        .iter()
        .filter(|path| path.len() == module.len() + 1 && path.starts_with(module))
        .map(|path| path[module.len()].as_str())
        .collect();
    let mut named = Vec::new();
    let mut open_blocks: Vec<usize> = Vec::new();
    let mut code = String::new();
    let mut line_depths = Vec::new();
    for line in code_only(text).lines() {
        let indent = line.len() - line.trim_start().len();
        if open_blocks.last() == Some(&indent) && line.trim() == "}" {
            open_blocks.pop();
        }
        line_depths.push((code.len(), open_blocks.len()));
        code.push_str(line);
        code.push('\n');
        let trimmed = line.trim_start();
        let declaration = trimmed
            .strip_prefix("pub(crate) ")
            .or_else(|| trimmed.strip_prefix("pub(super) "))
            .or_else(|| trimmed.strip_prefix("pub "))
            .unwrap_or(trimmed);
        if declaration.starts_with("mod ") && declaration.trim_end().ends_with('{') {
            open_blocks.push(indent);
        }
    }
    let depth_at = |at: usize| {
        let line = line_depths.partition_point(|(start, _)| *start <= at) - 1;
        line_depths[line].1
    };
    let mut at = 0;
    while at < code.len() {
        let rest = &code[at..];
        let word: String = rest
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        let preceded = code[..at]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$' || c == ':');
        if word.is_empty() || preceded || !rest[word.len()..].starts_with("::") {
            at += rest
                .chars()
                .next()
                .map_or(1, char::len_utf8)
                .max(word.len());
            continue;
        }
        let (base, tail) = match word.as_str() {
            "crate" => (Vec::new(), &rest["crate::".len()..]),
            "self" => (module.to_vec(), &rest["self::".len()..]),
            "super" => {
                let mut tail = rest;
                let mut supers: usize = 0;
                while let Some(after) = tail.strip_prefix("super::") {
                    supers += 1;
                    tail = after;
                }
                let files_left = supers.saturating_sub(depth_at(at));
                let base = module[..module.len().saturating_sub(files_left)].to_vec();
                (base, tail)
            }
            child if children.contains(child) => {
                let mut base = module.to_vec();
                base.push(word.clone());
                (base, &rest[word.len() + "::".len()..])
            }
            _ => {
                at += word.len();
                continue;
            }
        };
        use_tree(tail, &base, &mut named);
        at = code.len() - tail.len();
    }
    named
}

/// Reads a path's tail after `base::`: `a::b`, `a::{b, c::d}` or `{a, b}`, adding each full path.
fn use_tree(tail: &str, base: &[String], named: &mut Vec<Vec<String>>) {
    let mut path = base.to_vec();
    let mut rest = tail.trim_start();
    loop {
        if let Some(group) = rest.strip_prefix('{') {
            let mut depth = 0;
            let mut start = 0;
            for (i, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => {
                        use_tree(&group[start..i], &path, named);
                        return;
                    }
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        use_tree(&group[start..i], &path, named);
                        start = i + 1;
                    }
                    _ => {}
                }
            }
            return;
        }
        let name: String = rest
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        if name.is_empty() || name == "self" {
            break;
        }
        path.push(name.clone());
        match rest[name.len()..].strip_prefix("::") {
            Some(after) => rest = after.trim_start(),
            None => break,
        }
    }
    named.push(path);
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

/// Among all the files of `src/`, across folders too (the floors hold each folder apart).
#[test]
fn imports_among_all_modules_run_one_way() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let graph = import_graph(&src);
    assert!(graph["fleet::redis"].contains("fleet::rules"), "{graph:?}");
    assert!(graph["runner"].contains("driver"), "{graph:?}");
    if let Some(cycle) = find_cycle(&graph) {
        panic!("an import cycle among src/ modules: {}", cycle.join(" -> "));
    }
}

#[test]
fn the_cycle_check_finds_a_cycle_and_reads_paths() {
    let known: BTreeSet<Vec<String>> = ["r", "r::a", "r::b", "r::a::c", "x", "x::y"]
        .iter()
        .map(|m| m.split("::").map(String::from).collect())
        .collect();
    let source = "use super::{b::F, G};\nuse crate::{x::{y::Z,\n    W}};\nuse self::c::H; // crate::e\n\
                  let v = c::k();\n#[cfg(test)]\nmod tests {\n    use super::*;\n}\n";
    let module = ["r".to_string(), "a".to_string()];
    let names: Vec<String> = imports_of(source, &module, &known).into_iter().collect();
    assert_eq!(names, ["r", "r::a::c", "r::b", "x", "x::y"]);
    let tests_leave_the_file = "#[cfg(test)]\nmod tests {\n    use super::super::b;\n}\n";
    let names: Vec<String> = imports_of(tests_leave_the_file, &module, &known)
        .into_iter()
        .collect();
    assert_eq!(names, ["r::b"]);
    let old_source =
        "use crate::{a, b::C};\nuse crate::c::D; // crate::e\nlet x = crate::f::g();\n";
    let flat: BTreeSet<Vec<String>> = ["a", "b", "c", "f", "m"]
        .iter()
        .map(|m| vec![m.to_string()])
        .collect();
    let names: Vec<String> = imports_of(old_source, &["m".to_string()], &flat)
        .into_iter()
        .collect();
    assert_eq!(names, ["a", "b", "c", "f"]);
    // What follows `//` in a string is code; a path in a string or a comment is none.
    let strings =
        "let url = \"redis://h\"; let v = crate::f::g();\nlet s = \"crate::a\"; /* crate::b */\n";
    let names: Vec<String> = imports_of(strings, &["m".to_string()], &flat)
        .into_iter()
        .collect();
    assert_eq!(names, ["f"]);
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

/// Every push and pull request runs what CI runs on a clean clone, and nothing there writes.
#[test]
fn the_ci_workflow_runs_ci_run_read_only() {
    let workflow = read(".github/workflows/ci.yml");
    assert!(
        workflow
            .lines()
            .any(|line| line.trim() == "- run: bash .ci/run"),
        "{workflow}"
    );
    assert!(
        workflow.contains("\npermissions:\n  contents: read\n"),
        "{workflow}"
    );
    assert!(
        !workflow
            .lines()
            .any(|line| !line.trim_start().starts_with('#') && line.contains("write")),
        "{workflow}"
    );
    assert!(
        workflow.contains("persist-credentials: false"),
        "{workflow}"
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

/// Whether an `r` at `i` may open a raw string: it starts a word, or follows the `b` or `c`
/// that starts one (`br"..."`, `cr"..."`).
fn raw_string_may_start(chars: &[char], i: usize) -> bool {
    let word_char =
        |at: usize| at < chars.len() && (chars[at].is_alphanumeric() || chars[at] == '_');
    match i.checked_sub(1) {
        None => true,
        Some(before) if matches!(chars[before], 'b' | 'c') => before == 0 || !word_char(before - 1),
        Some(before) => !word_char(before),
    }
}

/// `text` with comments, strings and character literals blanked out (newlines kept), so that
/// the braces left are the code's.
fn code_only(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let blank = |c: char| if c == '\n' { '\n' } else { ' ' };
    let mut i = 0;
    while i < chars.len() {
        let rest = &chars[i..];
        if rest.starts_with(&['/', '/']) {
            while i < chars.len() && chars[i] != '\n' {
                out.push(' ');
                i += 1;
            }
        } else if rest.starts_with(&['/', '*']) {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i..].starts_with(&['/', '*']) {
                    depth += 1;
                    out.push_str("  ");
                    i += 2;
                } else if chars[i..].starts_with(&['*', '/']) {
                    depth -= 1;
                    out.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    out.push(blank(chars[i]));
                    i += 1;
                }
            }
        } else if chars[i] == 'r'
            && matches!(rest.get(1), Some('"' | '#'))
            && raw_string_may_start(&chars, i)
        {
            let hashes = rest[1..].iter().take_while(|&&c| c == '#').count();
            if rest.get(1 + hashes) != Some(&'"') {
                out.push(chars[i]);
                i += 1;
                continue;
            }
            let end: Vec<char> = std::iter::once('"')
                .chain((0..hashes).map(|_| '#'))
                .collect();
            let mut j = i + 2 + hashes;
            while j < chars.len() && !chars[j..].starts_with(&end) {
                j += 1;
            }
            let stop = (j + end.len()).min(chars.len());
            out.extend(chars[i..stop].iter().map(|&c| blank(c)));
            i = stop;
        } else if chars[i] == '"' {
            out.push(' ');
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                let step = if chars[i] == '\\' { 2 } else { 1 };
                for c in &chars[i..(i + step).min(chars.len())] {
                    out.push(blank(*c));
                }
                i += step;
            }
            out.push(' ');
            i += 1;
        } else if chars[i] == '\'' && (rest.get(1) == Some(&'\\') || rest.get(2) == Some(&'\'')) {
            // A character literal ('{', '\''), not a lifetime ('a).
            let mut j = i + 1;
            if chars[j] == '\\' {
                j += 2;
            }
            while j < chars.len() && chars[j] != '\'' {
                j += 1;
            }
            out.extend(chars[i..=j.min(chars.len() - 1)].iter().map(|&c| blank(c)));
            i = j + 1;
        } else {
            out.push(chars[i]);
            i += 1;
        }
    }
    out
}

/// `text`'s production code: `code_only`, with every item under `#[cfg(test)]` (a test module
/// to its closing brace, wherever in the file it stands, a `mod tests;` to its semicolon)
/// blanked too, so that lines keep their numbers.
fn production_code(text: &str) -> String {
    const MARK: &str = "#[cfg(test)]";
    let mut code: Vec<char> = code_only(text).chars().collect();
    let mark: Vec<char> = MARK.chars().collect();
    let mut at = 0;
    while at + mark.len() <= code.len() {
        if code[at..at + mark.len()] != mark[..] || !an_item_follows(&code[at + mark.len()..]) {
            at += 1;
            continue;
        }
        let (mut depth, mut end) = (0usize, code.len() - 1);
        for (i, c) in code.iter().enumerate().skip(at + mark.len()) {
            match c {
                ';' if depth == 0 => {
                    end = i;
                    break;
                }
                '{' => depth += 1,
                '}' => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        end = i;
                        break;
                    }
                }
                _ => {}
            }
        }
        for c in &mut code[at..=end] {
            if *c != '\n' {
                *c = ' ';
            }
        }
        at = end + 1;
    }
    code.into_iter().collect()
}

/// Whether `after` (what follows an attribute) starts an item, past other attributes: a
/// `#[cfg(test)]` on a match arm, a field or a variant is not a test item, and blanking from
/// it would hide the rest of the function it stands in.
fn an_item_follows(after: &[char]) -> bool {
    let text: String = after.iter().take(400).collect();
    let head = item_head(&text);
    let word: String = head
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == '!')
        .collect();
    matches!(
        word.as_str(),
        "mod"
            | "fn"
            | "impl"
            | "use"
            | "struct"
            | "enum"
            | "const"
            | "static"
            | "type"
            | "trait"
            | "union"
            | "macro_rules!"
    ) || text.trim_start().starts_with("pub")
}

/// What an item's first line says after its attributes, its visibility (`pub`, `pub(crate)`,
/// `pub(in a::b)`) and its qualifiers (`const`, `unsafe`, `async`, `extern "C"`, `default`).
fn item_head(line: &str) -> &str {
    let mut rest = line.trim_start();
    loop {
        let before = rest;
        if rest.starts_with("#[") || rest.starts_with("pub(") {
            let (open, close) = if rest.starts_with('#') {
                ('[', ']')
            } else {
                ('(', ')')
            };
            let mut depth = 0;
            for (i, c) in rest.char_indices() {
                if c == open {
                    depth += 1;
                } else if c == close {
                    depth -= 1;
                    if depth == 0 {
                        rest = &rest[i + 1..];
                        break;
                    }
                }
            }
        }
        for word in ["pub", "const", "unsafe", "async", "extern", "default"] {
            if let Some(after) = rest.strip_prefix(word)
                && after.starts_with(char::is_whitespace)
            {
                rest = after;
            }
        }
        rest = rest.trim_start();
        if rest == before {
            return rest;
        }
    }
}

/// Each function and `impl` block of the production code of `text`: its first line's words
/// from `fn` or `impl` up to the name, its line number and its length in lines.
fn items(text: &str) -> Vec<(String, usize, usize)> {
    let code = production_code(text);
    let lines: Vec<&str> = code.lines().collect();
    let mut found = Vec::new();
    for (start, line) in lines.iter().enumerate() {
        let head = item_head(line);
        let name = if let Some(after) = head.strip_prefix("fn ") {
            after
                .trim_start()
                .split(['(', '<', ' '])
                .next()
                .unwrap_or("")
                .to_string()
        } else if head.starts_with("impl ") || head.starts_with("impl<") {
            head.trim_end_matches('{').trim().to_string()
        } else {
            continue;
        };
        let (mut depth, mut opened) = (0i64, false);
        for (end, body) in lines[start..].iter().enumerate() {
            // On the first line, only what follows the head: an attribute's brackets are not
            // the body's braces.
            let body = if end == 0 { head } else { body };
            for c in body.chars() {
                match c {
                    '{' => {
                        depth += 1;
                        opened = true;
                    }
                    '}' => depth -= 1,
                    _ => {}
                }
            }
            if !opened && body.trim_end().ends_with(';') {
                break;
            }
            if opened && depth <= 0 {
                found.push((name.clone(), start + 1, end + 1));
                break;
            }
            if start + end + 1 == lines.len() {
                // Never closed, as this reader sees it: counted to the end of the file, so
                // that it is looked at rather than left out.
                found.push((name.clone(), start + 1, end + 1));
            }
        }
    }
    found
}

/// The type an inherent `impl` block adds methods to (`impl<T> Run<T>` -> `Run`); `None` for
/// an `impl Trait for Type`, whose methods are the trait's.
fn inherent_type(impl_head: &str) -> Option<String> {
    let mut depth = 0;
    let mut words = String::new();
    for c in impl_head.strip_prefix("impl")?.chars() {
        match c {
            '<' => depth += 1,
            '>' => depth -= 1,
            _ if depth == 0 => words.push(c),
            _ => {}
        }
    }
    let words: Vec<&str> = words.split_whitespace().collect();
    if words.contains(&"for") {
        return None;
    }
    words
        .first()
        .map(|path| path.rsplit("::").next().unwrap_or(path).to_string())
}

/// Each source file of `src/` with its path from the repository's root, but the modules that
/// are tests whole (declared under `#[cfg(test)]`).
fn production_sources() -> Vec<(String, String)> {
    let mut files = Vec::new();
    collect_rust_files(&Path::new(ROOT).join("src"), &mut files);
    files
        .into_iter()
        .filter(|file| {
            let name = file.file_name().and_then(|name| name.to_str());
            !matches!(name, Some("tests.rs" | "test_support.rs"))
        })
        .map(|file| {
            let text = fs::read_to_string(&file).unwrap();
            (file.strip_prefix(ROOT).unwrap().display().to_string(), text)
        })
        .collect()
}

/// The text of CONTRIBUTING.md's `### TITLE` section, to the next heading; panics when there is
/// none, so that a renamed heading cannot make a check read nothing.
fn contributing_section(title: &str) -> String {
    let contributing = read("CONTRIBUTING.md");
    let section = contributing
        .split(&format!("### {title}\n"))
        .nth(1)
        .unwrap_or_else(|| panic!("CONTRIBUTING.md has no section {title:?}"));
    section.split("\n#").next().unwrap_or("").to_string()
}

/// No production function over 80 lines and no type with more than 300 lines of its own
/// methods (its inherent `impl` blocks, in all files, added up), but those that CONTRIBUTING.md
/// names, each with the reason it stays long: what is longer is split into named steps, so
/// that each can be read, and tested, on its own.
#[test]
fn no_function_or_type_is_longer_than_it_can_be_read() {
    let kept = contributing_section("Long functions kept");
    let mut too_long = Vec::new();
    let mut methods: BTreeMap<String, (usize, Vec<String>)> = BTreeMap::new();
    let mut seen = 0;
    for (relative, text) in production_sources() {
        for (name, line, length) in items(&text) {
            seen += 1;
            let named = format!("`{relative}` `{name}`");
            if name.starts_with("impl") {
                match inherent_type(&name) {
                    Some(kind) => {
                        let (total, places) = methods.entry(kind).or_default();
                        *total += length;
                        places.push(format!("{relative}:{line} ({length})"));
                    }
                    // A trait's impl block is held to the 300 lines on its own.
                    None if length > 300 && !kept.contains(&named) => {
                        too_long.push(format!("{named} (line {line}): {length} lines"));
                    }
                    None => {}
                }
                continue;
            }
            if length > 80 && !kept.contains(&named) {
                too_long.push(format!("{named} (line {line}): {length} lines"));
            }
        }
    }
    for (kind, (total, places)) in &methods {
        if *total > 300 && !kept.contains(&format!("`impl {kind}`")) {
            too_long.push(format!(
                "`impl {kind}`: {total} lines in {}",
                places.join(", ")
            ));
        }
    }
    assert!(seen > 500, "the walk saw the functions: {seen}");
    assert!(methods.contains_key("Runner"), "the walk saw the impls");
    assert!(
        too_long.is_empty(),
        "too long to read, and not in CONTRIBUTING's list:\n{}",
        too_long.join("\n")
    );
}

#[test]
fn lengths_are_counted_in_code_not_in_strings_or_comments() {
    let text = "pub(crate) fn a(x: u8) -> char {\n    let s = \"}}{\"; // }\n    let c = '}';\n    \
                let r = r#\"}\"#;\n    /* } */ 'x'\n}\nimpl<'a> B<'a> {\n    fn c(&self) {}\n}\nfn d();\n\
                #[cfg(test)]\npub(crate) mod tests {\n    fn long() {\n    }\n}\n";
    assert_eq!(
        items(text),
        [
            ("a".to_string(), 1, 6),
            ("impl<'a> B<'a>".to_string(), 7, 3),
            ("c".to_string(), 8, 1),
        ]
    );
}

/// A `#[cfg(test)]` inside a body (a match arm, a field) hides nothing: the function around
/// it is measured whole; a raw byte string's backslash ends nothing; an item this reader
/// cannot see close is counted to the end of the file.
#[test]
fn no_attribute_or_string_hides_a_function() {
    let text = "fn a(x: u8) -> u8 {\n    match x {\n        #[cfg(test)]\n        0 => 1,\n        \
                _ => 2,\n    }\n}\nfn b() {\n    let p = br\"C:\\\";\n    let q = cr\"x\";\n}\n\
                fn c() {\n    let s = S {\n        #[cfg(test)]\n        t: 1,\n    };\n}\n";
    let names: Vec<(String, usize, usize)> = items(text);
    assert_eq!(
        names,
        [
            ("a".to_string(), 1, 7),
            ("b".to_string(), 8, 4),
            ("c".to_string(), 12, 6),
        ]
    );
    let unclosed = "fn open() {\n    let x = 1;\n";
    assert_eq!(items(unclosed), [("open".to_string(), 1, 2)]);
}

/// A test module declared at the top of a file hides none of the production code below it;
/// attributes and any visibility before `fn` are read past; `impl` blocks add up by type.
#[test]
fn no_item_hides_from_the_length_count() {
    let text = "#[cfg(test)]\nmod tests;\n#[cfg(test)]\nmod inline {\n    fn t() {\n    }\n}\n\
                #[inline] pub fn a() {\n}\npub(in crate::x) fn b() {\n}\n\
                #[must_use] pub(crate) const unsafe fn c() {\n}\n\
                impl<T: Clone> Run<T> {\n}\nimpl fmt::Display for Run<u8> {\n}\n\
                #[cfg(test)]\nfn helper() {\n}\n";
    let names: Vec<(String, usize)> = items(text)
        .into_iter()
        .map(|(name, line, _)| (name, line))
        .collect();
    assert_eq!(
        names,
        [
            ("a".to_string(), 8),
            ("b".to_string(), 10),
            ("c".to_string(), 12),
            ("impl<T: Clone> Run<T>".to_string(), 14),
            ("impl fmt::Display for Run<u8>".to_string(), 16),
        ]
    );
    assert_eq!(
        inherent_type("impl<T: Clone> Run<T>").as_deref(),
        Some("Run")
    );
    assert_eq!(inherent_type("impl self::Run").as_deref(), Some("Run"));
    assert_eq!(inherent_type("impl fmt::Display for Run<u8>"), None);
    assert_eq!(inherent_type("impl<'a> Iterator for Lines<'a>"), None);
}

/// The names of the types `text` defines in its production code: each `struct`, `enum`,
/// `trait`, `union` and `type` alias, with its line.
fn type_names(text: &str) -> Vec<(String, usize)> {
    let code = production_code(text);
    let mut found = Vec::new();
    for (number, line) in code.lines().enumerate() {
        let head = item_head(line);
        let Some((keyword, rest)) = head.split_once(char::is_whitespace) else {
            continue;
        };
        if !matches!(keyword, "struct" | "enum" | "trait" | "union" | "type") {
            continue;
        }
        let name = rest
            .trim_start()
            .split(['<', '(', '{', ';', ':', '=', ' '])
            .next()
            .unwrap_or("");
        if !name.is_empty() {
            found.push((name.to_string(), number + 1));
        }
    }
    found
}

/// One name, one type: no two types of `src/`'s production code, in any modules, share a
/// name, so that a name read anywhere (in a log, a review, a search) says which type it is.
#[test]
fn no_two_types_share_a_name() {
    let mut seen: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut count = 0;
    for (relative, text) in production_sources() {
        for (name, line) in type_names(&text) {
            count += 1;
            seen.entry(name)
                .or_default()
                .push(format!("{relative}:{line}"));
        }
    }
    assert!(count > 100, "the walk saw the types: {count}");
    let shared: Vec<String> = seen
        .into_iter()
        .filter(|(_, places)| places.len() > 1)
        .map(|(name, places)| format!("{name}: {}", places.join(", ")))
        .collect();
    assert!(
        shared.is_empty(),
        "types that share a name:\n{}",
        shared.join("\n")
    );
}

#[test]
fn type_names_are_read_from_code_only() {
    let text = "/// struct Doc\npub(crate) struct A<'a> {\n    s: &'a str,\n}\nenum B { X }\n\
                type C = u8;\npub trait D: Sized {}\nlet s = \"struct E\";\nimpl F for G {}\n\
                #[cfg(test)]\nmod tests {\n    struct H;\n}\n#[derive(Debug)] pub(in crate::x) struct I;\n";
    let names: Vec<String> = type_names(text).into_iter().map(|(name, _)| name).collect();
    assert_eq!(names, ["A", "B", "C", "D", "I"]);
}

/// CONTRIBUTING.md's floors: for `src/` and each sub-folder, lists of the modules, the top
/// floor first. Folder ("" for `src/`, `driver/` for `src/driver/`) -> module -> floor.
fn documented_floors(contributing: &str) -> BTreeMap<String, BTreeMap<String, usize>> {
    let mut floors: BTreeMap<String, BTreeMap<String, usize>> = BTreeMap::new();
    let mut current: Option<String> = None;
    for line in contributing.lines() {
        if let Some(rest) = line.strip_prefix("Floors of `src/") {
            let folder = rest.split('`').next().unwrap_or("").to_string();
            floors.entry(folder.clone()).or_default();
            current = Some(folder);
            continue;
        }
        let Some(folder) = &current else { continue };
        if line.trim().is_empty() || line.starts_with("   ") {
            continue;
        }
        let Some((number, item)) = line.split_once(". ") else {
            current = None;
            continue;
        };
        let Ok(floor) = number.parse::<usize>() else {
            current = None;
            continue;
        };
        let mut rest = item;
        while let Some(after) = rest.strip_prefix('`') {
            let Some((name, after)) = after.split_once('`') else {
                break;
            };
            let listed = floors.get_mut(folder).expect("the folder's entry");
            assert!(
                listed.insert(name.to_string(), floor).is_none(),
                "CONTRIBUTING.md lists `src/{folder}` `{name}` twice"
            );
            rest = after
                .strip_prefix(", ")
                .or_else(|| after.strip_prefix(" and "))
                .unwrap_or(after);
        }
    }
    floors
}

/// The edges of `graph` among the modules of one folder of `src/` (`""`, `driver/`), named as
/// CONTRIBUTING.md names them: a folder's `mod.rs` is `mod`. Test-only modules are left out.
fn folder_graph(graph: &Graph, folder: &str) -> Graph {
    let name = |module: &str| -> Option<String> {
        if folder.is_empty() {
            let top = module.split("::").next().unwrap_or(module);
            return (!matches!(top, "main" | "test_support")).then(|| top.to_string());
        }
        let prefix = folder.trim_end_matches('/');
        if module == prefix {
            return Some("mod".to_string());
        }
        let file = module.strip_prefix(prefix)?.strip_prefix("::")?;
        (!file.contains("::") && file != "tests").then(|| file.to_string())
    };
    let mut within = Graph::new();
    for (module, imports) in graph {
        let Some(from) = name(module) else { continue };
        let edges = within.entry(from.clone()).or_default();
        edges.extend(
            imports
                .iter()
                .filter_map(|m| name(m))
                .filter(|m| *m != from),
        );
    }
    within
}

/// Each module on its floor, as CONTRIBUTING.md lists them, and every import going down: the
/// layout a newcomer reads is the one the code has.
#[test]
fn every_module_imports_only_the_floors_below_its_own() {
    let src = Path::new(ROOT).join("src");
    let graph = import_graph(&src);
    let documented = documented_floors(&read("CONTRIBUTING.md"));
    let mut folders: BTreeSet<String> = fs::read_dir(&src)
        .expect("src/")
        .map(|entry| entry.expect("an entry").path())
        .filter(|path| path.is_dir())
        .map(|path| format!("{}/", path.file_name().unwrap().to_string_lossy()))
        .collect();
    folders.insert(String::new());
    assert_eq!(
        documented.keys().cloned().collect::<BTreeSet<_>>(),
        folders,
        "CONTRIBUTING.md lists the floors of src/ and of each folder in it"
    );
    let mut wrong = Vec::new();
    for (folder, floors) in &documented {
        let within = folder_graph(&graph, folder);
        let modules: BTreeSet<&String> = within.keys().collect();
        let listed: BTreeSet<&String> = floors.keys().collect();
        for missing in modules.difference(&listed) {
            wrong.push(format!("`src/{folder}` `{missing}` is on no floor"));
        }
        for unknown in listed.difference(&modules) {
            wrong.push(format!(
                "`src/{folder}` `{unknown}` is listed but is no module"
            ));
        }
        for (from, imports) in &within {
            for to in imports {
                if let (Some(high), Some(low)) = (floors.get(from), floors.get(to))
                    && low <= high
                {
                    wrong.push(format!(
                        "`src/{folder}` `{from}` (floor {high}) imports `{to}` (floor {low})"
                    ));
                }
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "CONTRIBUTING.md's floors and the code disagree:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn the_floors_are_read_from_their_lists() {
    let text = "Floors of `src/`, the top one first:\n\n1. `lib`: the wiring,\n   over `x`.\n\
                2. `cli`, `settings` and `log`: more.\n\nFloors of `src/driver/`:\n\n\
                1. `mod`: in.\nA paragraph `after`.\n";
    let floors = documented_floors(text);
    let top: Vec<(&str, usize)> = floors[""].iter().map(|(m, f)| (m.as_str(), *f)).collect();
    assert_eq!(top, [("cli", 2), ("lib", 1), ("log", 2), ("settings", 2)]);
    assert_eq!(floors["driver/"].len(), 1);
    let mut graph = Graph::new();
    graph.insert("driver".into(), ["driver::run".into(), "cli".into()].into());
    graph.insert("driver::run".into(), BTreeSet::new());
    graph.insert("driver::tests".into(), ["driver".into()].into());
    graph.insert("main".into(), BTreeSet::new());
    let inside = folder_graph(&graph, "driver/");
    assert_eq!(inside.len(), 2);
    assert!(inside["mod"].contains("run"));
    let top = folder_graph(&graph, "");
    assert_eq!(top.keys().collect::<Vec<_>>(), ["driver"]);
    assert_eq!(top["driver"].iter().collect::<Vec<_>>(), ["cli"]);
}

/// `unsafe` code only in the files CONTRIBUTING.md's "System calls" names, each under the
/// reason rustix or std has no safe way for it.
#[test]
fn unsafe_code_is_only_where_contributing_says() {
    let section = contributing_section("System calls");
    let mut unnamed = Vec::new();
    let mut seen = 0;
    for (relative, text) in production_sources() {
        let code = production_code(&text);
        if !code
            .split(|c: char| !c.is_alphanumeric() && c != '_')
            .any(|w| w == "unsafe")
        {
            continue;
        }
        seen += 1;
        let file = relative.strip_prefix("src/").unwrap_or(&relative);
        if !section.contains(&format!("`{file}`")) {
            unnamed.push(relative);
        }
    }
    assert!(seen > 5, "the walk saw the unsafe code: {seen}");
    assert!(
        unnamed.is_empty(),
        "unsafe code in files CONTRIBUTING.md's System calls does not name: {unnamed:?}"
    );
}
