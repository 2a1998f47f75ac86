//! The layering rule of `src/lib.rs`, "dependencies point down only", checked on the sources:
//! every `crate::LAYER` path in a layer's library code must name the layer itself or one below
//! it. Test code (files named `*tests.rs`, and each item marked `#[cfg(test)]`, to its closing
//! brace) may reach up, to check a layer against a higher one; doc comments are not
//! dependencies. Every other line of every file is read, including library code that follows a
//! test module.

use std::path::{Path, PathBuf};

/// The layers from the top down, as the table in `src/lib.rs` lists them.
const LAYERS_TOP_DOWN: &[&str] = &[
    "prelude",
    "watch",
    "failback",
    "verify",
    "undo",
    "apply",
    "replication",
    "precise",
    "record_match",
    "translate",
    "select",
    "mm2",
    "client",
    "responses",
    "wire",
    "auth",
    "records",
    "config",
];

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

/// The layers a line of code names through `crate::`, grouped imports (`crate::{a, b}`) included.
fn layers_named(line: &str) -> Vec<String> {
    let mut named = Vec::new();
    for (at, _) in line.match_indices("crate::") {
        let rest = &line[at + "crate::".len()..];
        // In a group, only the first segment of each item is a module of the crate.
        let items: Vec<&str> = match rest.strip_prefix('{') {
            Some(group) => group.split('}').next().unwrap_or("").split(',').collect(),
            None => vec![rest],
        };
        let idents = items.into_iter().map(|item| {
            item.trim()
                .split("::")
                .next()
                .unwrap_or("")
                .trim_matches(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        });
        named.extend(idents.into_iter().map(str::to_string));
    }
    named
}

/// The lines of library code in a file, with their 0-based numbers: comments and the items
/// marked `#[cfg(test)]` are left out (a `mod x;` line, or a braced item to its closing brace),
/// and reading goes on after them.
fn library_lines(text: &str) -> Vec<(usize, &str)> {
    let mut kept = Vec::new();
    let mut lines = text.lines().enumerate();
    while let Some((number, line)) = lines.next() {
        let code = line.trim_start();
        if code.starts_with("//") {
            continue;
        }
        if !code.starts_with("#[cfg(test)]") {
            kept.push((number, code));
            continue;
        }
        // Skip the test item: further attributes, then the item up to its `;` or matching `}`.
        let mut depth = 0i32;
        let mut opened = false;
        for (_, item) in lines.by_ref() {
            let item = item.trim_start();
            if !opened && item.starts_with("#[") {
                continue;
            }
            for c in item.chars() {
                match c {
                    '{' => {
                        depth += 1;
                        opened = true;
                    }
                    '}' => depth -= 1,
                    _ => {}
                }
            }
            if (opened && depth <= 0) || (!opened && item.trim_end().ends_with(';')) {
                break;
            }
        }
    }
    kept
}

/// Every `(file, line number, used layer)` where a layer's library code names a higher layer.
fn upward_uses(src: &Path) -> Vec<String> {
    let mut found = Vec::new();
    for (rank, layer) in LAYERS_TOP_DOWN.iter().enumerate() {
        let mut files = Vec::new();
        rust_files(&src.join(layer), &mut files);
        for file in files {
            let name = file.file_name().unwrap().to_string_lossy();
            if name.ends_with("tests.rs") || file.components().any(|c| c.as_os_str() == "tests") {
                continue;
            }
            let text = std::fs::read_to_string(&file).unwrap();
            for (number, code) in library_lines(&text) {
                for used in layers_named(code) {
                    let Some(used_rank) = LAYERS_TOP_DOWN.iter().position(|l| *l == used) else {
                        continue;
                    };
                    if used_rank < rank {
                        found.push(format!(
                            "{}:{}: {layer} uses {used}, a higher layer",
                            file.display(),
                            number + 1
                        ));
                    }
                }
            }
        }
    }
    found
}

#[test]
fn dependencies_point_down_only() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let violations = upward_uses(&src);
    assert!(violations.is_empty(), "{}", violations.join("\n"));
}

#[test]
fn every_module_of_the_library_is_a_layer_in_the_table() {
    let lib =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/lib.rs")).unwrap();
    let modules: Vec<&str> = lib
        .lines()
        .filter_map(|l| l.trim().strip_prefix("pub mod "))
        .map(|l| l.trim_end_matches(';'))
        .collect();
    assert!(!modules.is_empty(), "no `pub mod` found in src/lib.rs");
    for module in modules {
        assert!(
            LAYERS_TOP_DOWN.contains(&module),
            "src/lib.rs has module {module}, which the layering table of tests/layering.rs lacks"
        );
    }
}

#[test]
fn library_code_after_a_test_module_is_read() {
    let text = "use crate::a;\n#[cfg(test)]\nmod tests {\n    use crate::b;\n    fn f() { }\n}\n\
                use crate::c;\n#[cfg(test)]\nmod more;\nuse crate::d;\n";
    let kept: Vec<&str> = library_lines(text).into_iter().map(|(_, l)| l).collect();
    assert_eq!(kept, ["use crate::a;", "use crate::c;", "use crate::d;"]);
}

#[test]
fn the_check_sees_an_upward_use() {
    // The scanner itself: a use of a higher layer, alone or in a group, is found.
    assert_eq!(layers_named("use crate::mm2::policy::X;"), ["mm2"]);
    assert_eq!(
        layers_named("use crate::{config::Properties, mm2::ReplicationPolicy};"),
        ["config", "mm2"]
    );
    assert_eq!(layers_named("let x = crate::client::DEFAULT;"), ["client"]);
    assert!(layers_named("use super::keys;").is_empty());
}

// ---- no two files import each other ---------------------------------------------------------
//
// A file depends on another when its library code names an item defined there: through a `use`
// (private ones; a `pub use` only re-exports, and is followed to where the item is defined) or a
// path in the code (`crate::a::b`, `super::x`, `self::x`, `child::x`). The files of a crate and
// these dependencies form a graph that must have no cycle: a cycle means two files that can only
// be understood, changed or tested together. The library and the command line are checked, each
// from its own root, over the modules their library code declares (`#[cfg(test)]` ones left out).

use std::collections::{BTreeMap, BTreeSet};

/// One crate's library modules: module path (`["client", "retry"]`) to file, and back.
struct Crate {
    files: BTreeMap<Vec<String>, PathBuf>,
}

impl Crate {
    /// The modules reachable from `root` (`lib.rs` or `main.rs`) through `mod x;` lines of
    /// library code.
    fn load(root: &Path) -> Crate {
        let mut files = BTreeMap::new();
        let mut pending = vec![(Vec::<String>::new(), root.to_path_buf())];
        while let Some((module, file)) = pending.pop() {
            let text = std::fs::read_to_string(&file).unwrap();
            let dir = match file.file_name().unwrap().to_str().unwrap() {
                "lib.rs" | "main.rs" | "mod.rs" => file.parent().unwrap().to_path_buf(),
                _ => file.with_extension(""),
            };
            for (_, line) in library_lines(&text) {
                let Some(name) = declared_module(line) else {
                    continue;
                };
                let flat = dir.join(format!("{name}.rs"));
                let child = if flat.exists() {
                    flat
                } else {
                    dir.join(name).join("mod.rs")
                };
                let mut path = module.clone();
                path.push(name.to_string());
                if !files.contains_key(&path) {
                    pending.push((path, child));
                }
            }
            files.insert(module, file);
        }
        Crate { files }
    }

    fn is_module(&self, path: &[String]) -> bool {
        self.files.contains_key(path)
    }
}

/// `x` of a `mod x;` line (with any visibility), if the line is one.
fn declared_module(line: &str) -> Option<&str> {
    let rest = line
        .trim_start_matches("pub(crate) ")
        .trim_start_matches("pub ");
    let name = rest.strip_prefix("mod ")?.strip_suffix(';')?.trim();
    name.chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '_')
        .then_some(name)
}

/// The code of a line without a trailing `//` comment (one outside a string literal).
fn without_comment(line: &str) -> &str {
    let mut quotes = 0;
    let bytes = line.as_bytes();
    for i in 0..bytes.len() {
        match bytes[i] {
            b'"' if i == 0 || bytes[i - 1] != b'\\' => quotes += 1,
            b'/' if quotes % 2 == 0 && bytes.get(i + 1) == Some(&b'/') => return &line[..i],
            _ => {}
        }
    }
    line
}

/// A `use` declaration's paths, each with the name it binds (`None` for `*` and `_`).
fn use_paths(text: &str) -> Vec<(Vec<String>, Option<String>)> {
    fn tokens(text: &str) -> Vec<String> {
        let mut out = Vec::new();
        let mut word = String::new();
        for c in text.chars() {
            if c.is_ascii_alphanumeric() || c == '_' {
                word.push(c);
                continue;
            }
            if !word.is_empty() {
                out.push(std::mem::take(&mut word));
            }
            if matches!(c, '{' | '}' | ',' | '*') {
                out.push(c.to_string());
            }
        }
        if !word.is_empty() {
            out.push(word);
        }
        out
    }
    fn tree(
        tokens: &[String],
        at: &mut usize,
        prefix: &[String],
        out: &mut Vec<(Vec<String>, Option<String>)>,
    ) {
        let mut path = prefix.to_vec();
        while let Some(token) = tokens.get(*at) {
            match token.as_str() {
                "{" => {
                    *at += 1;
                    while tokens.get(*at).is_some_and(|t| t != "}") {
                        tree(tokens, at, &path, out);
                        if tokens.get(*at).is_some_and(|t| t == ",") {
                            *at += 1;
                        }
                    }
                    *at += 1;
                    return;
                }
                "*" => {
                    *at += 1;
                    out.push((path, None));
                    return;
                }
                "," | "}" => break,
                "as" => {
                    *at += 1;
                    let alias = tokens.get(*at).cloned().filter(|a| a != "_");
                    *at += 1;
                    out.push((path, alias));
                    return;
                }
                "self" => {
                    *at += 1;
                    let name = path.last().cloned();
                    out.push((path.clone(), name));
                    return;
                }
                segment => {
                    path.push(segment.to_string());
                    *at += 1;
                }
            }
        }
        let name = path.last().cloned();
        out.push((path, name));
    }
    let tokens = tokens(text);
    let mut out = Vec::new();
    let mut at = 0;
    tree(&tokens, &mut at, &[], &mut out);
    out
}

/// A file's `use` declarations, joined over lines: (line number, re-export?, use tree).
fn use_declarations(lines: &[(usize, &str)]) -> Vec<(usize, bool, String)> {
    let mut out = Vec::new();
    let mut open: Option<(usize, bool, String)> = None;
    for &(number, line) in lines {
        let code = without_comment(line).trim();
        if let Some((_, _, text)) = open.as_mut() {
            text.push(' ');
            text.push_str(code);
        } else {
            let (public, rest) = match code.split_once("use ") {
                Some((visibility, rest))
                    if visibility.is_empty() || visibility.starts_with("pub") =>
                {
                    (!visibility.is_empty(), rest)
                }
                _ => continue,
            };
            open = Some((number, public, rest.to_string()));
        }
        if code.ends_with(';') {
            let (number, public, text) = open.take().unwrap();
            out.push((number, public, text.trim_end_matches(';').to_string()));
        }
    }
    out
}

/// The numbers of the lines that belong to a `use` declaration, its continuation lines
/// included: a re-export spread over lines does not name its own items.
fn use_declaration_lines(lines: &[(usize, &str)]) -> BTreeSet<usize> {
    let starts: BTreeSet<usize> = use_declarations(lines)
        .into_iter()
        .map(|(number, _, _)| number)
        .collect();
    let mut inside = BTreeSet::new();
    let mut open = false;
    for &(number, line) in lines {
        open |= starts.contains(&number);
        if open {
            inside.insert(number);
            open = !without_comment(line).trim().ends_with(';');
        }
    }
    inside
}

/// The paths named in a line of code: `crate::…`, `super::…`, `self::…` and `child::…` for a
/// child module of `module`, as written (segments up to the first non-identifier).
fn code_paths(line: &str, krate: &Crate, module: &[String]) -> Vec<Vec<String>> {
    let code = without_comment(line);
    let mut out = Vec::new();
    let bytes = code.as_bytes();
    let ident = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let mut i = 0;
    while i < bytes.len() {
        if !ident(bytes[i]) || (i > 0 && (ident(bytes[i - 1]) || bytes[i - 1] == b':')) {
            i += 1;
            continue;
        }
        let mut segments = Vec::new();
        let mut j = i;
        loop {
            let start = j;
            while j < bytes.len() && ident(bytes[j]) {
                j += 1;
            }
            segments.push(code[start..j].to_string());
            if code[j..].starts_with("::") && bytes.get(j + 2).is_some_and(|&b| ident(b)) {
                j += 2;
            } else {
                break;
            }
        }
        let first = segments[0].as_str();
        let child = {
            let mut path = module.to_vec();
            path.push(first.to_string());
            krate.is_module(&path)
        };
        if segments.len() > 1 && (matches!(first, "crate" | "super" | "self") || child) {
            out.push(segments);
        }
        i = j.max(i + 1);
    }
    out
}

/// Whether `line`'s code holds `word` as a whole identifier (not inside a `use` line).
fn names_word(line: &str, word: &str) -> bool {
    let code = without_comment(line);
    if code.trim_start().starts_with("use ")
        || code.contains(" use ")
        || declared_module(code.trim()).is_some()
    {
        return false;
    }
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    code.match_indices(word)
        .any(|(at, _)| !code[..at].ends_with(ident) && !code[at + word.len()..].starts_with(ident))
}

/// `path` as written in `module`, made absolute; `None` for another crate's path.
fn absolute(path: &[String], krate: &Crate, module: &[String]) -> Option<Vec<String>> {
    let mut base = module.to_vec();
    let mut rest = path;
    match rest.first().map(String::as_str) {
        Some("crate") => {
            base.clear();
            rest = &rest[1..];
        }
        Some("self") => rest = &rest[1..],
        Some("super") => {
            while rest.first().is_some_and(|s| s == "super") {
                base.pop()?;
                rest = &rest[1..];
            }
        }
        Some(first) => {
            let mut child = base.clone();
            child.push(first.to_string());
            if !krate.is_module(&child) {
                return None;
            }
        }
        None => return None,
    }
    base.extend(rest.iter().cloned());
    Some(base)
}

/// Per file: the names its `use` lines bind, to absolute paths (for following re-exports).
type Bindings = BTreeMap<PathBuf, BTreeMap<String, Vec<String>>>;

/// The file that defines what the absolute `path` names: the deepest module on the path, or,
/// when the item there is only imported, the file its import leads to.
fn defining_file(
    path: &[String],
    krate: &Crate,
    bindings: &Bindings,
    depth: u8,
) -> Option<PathBuf> {
    let mut module = Vec::new();
    let mut at = 0;
    while at < path.len() && {
        let mut next = module.clone();
        next.push(path[at].clone());
        krate.is_module(&next)
    } {
        module.push(path[at].clone());
        at += 1;
    }
    let file = krate.files.get(&module)?.clone();
    if at < path.len()
        && depth < 8
        && let Some(target) = bindings.get(&file).and_then(|b| b.get(&path[at]))
    {
        let mut target = target.clone();
        target.extend(path[at + 1..].iter().cloned());
        return defining_file(&target, krate, bindings, depth + 1);
    }
    Some(file)
}

/// Every dependency between two files of the crate rooted at `root`: (from, to) with the line
/// of `from` that names `to`.
fn file_dependencies(root: &Path) -> BTreeMap<(PathBuf, PathBuf), usize> {
    let krate = Crate::load(root);
    let texts: BTreeMap<&Vec<String>, String> = krate
        .files
        .iter()
        .map(|(module, file)| (module, std::fs::read_to_string(file).unwrap()))
        .collect();
    let mut bindings = Bindings::new();
    let mut uses = Vec::new();
    for (module, text) in &texts {
        let file = &krate.files[*module];
        let lines = library_lines(text);
        let in_uses = use_declaration_lines(&lines);
        for (number, public, tree) in use_declarations(&lines) {
            for (path, name) in use_paths(&tree) {
                let Some(path) = absolute(&path, &krate, module) else {
                    continue;
                };
                // A re-export is a use too when the file's own code names what it re-exports.
                let used_here = !public
                    || name.as_ref().is_some_and(|name| {
                        lines
                            .iter()
                            .any(|(n, l)| !in_uses.contains(n) && names_word(l, name))
                    });
                if let Some(name) = name {
                    bindings
                        .entry(file.clone())
                        .or_default()
                        .insert(name, path.clone());
                }
                if used_here {
                    uses.push((file.clone(), number, path));
                }
            }
        }
        for (number, line) in &lines {
            if use_declarations(&[(*number, line)]).is_empty() && !line.contains("use ") {
                for path in code_paths(line, &krate, module) {
                    if let Some(path) = absolute(&path, &krate, module) {
                        uses.push((file.clone(), *number, path));
                    }
                }
            }
        }
    }
    let mut edges = BTreeMap::new();
    for (from, number, path) in uses {
        if let Some(to) = defining_file(&path, &krate, &bindings, 0)
            && to != from
        {
            edges.entry((from, to)).or_insert(number + 1);
        }
    }
    edges
}

/// The groups of files that depend on each other (strongly connected, more than one file).
fn import_cycles(edges: &BTreeMap<(PathBuf, PathBuf), usize>) -> Vec<Vec<PathBuf>> {
    let mut next: BTreeMap<&PathBuf, Vec<&PathBuf>> = BTreeMap::new();
    for (from, to) in edges.keys() {
        next.entry(from).or_default().push(to);
    }
    // Two files are in one cycle when each reaches the other.
    let reach = |start: &PathBuf| {
        let mut seen = BTreeSet::new();
        let mut stack = vec![start];
        while let Some(file) = stack.pop() {
            for &to in next.get(file).into_iter().flatten() {
                if seen.insert(to) {
                    stack.push(to);
                }
            }
        }
        seen
    };
    let reaches: BTreeMap<&PathBuf, BTreeSet<&PathBuf>> =
        next.keys().map(|&f| (f, reach(f))).collect();
    let mut cycles: Vec<Vec<PathBuf>> = Vec::new();
    let mut placed = BTreeSet::new();
    for (&file, reached) in &reaches {
        if placed.contains(file) || !reached.contains(file) {
            continue;
        }
        let cycle: Vec<PathBuf> = reached
            .iter()
            .filter(|other| reaches.get(*other).is_some_and(|r| r.contains(file)))
            .map(|f| (*f).clone())
            .collect();
        placed.extend(cycle.iter().cloned());
        cycles.push(cycle);
    }
    cycles
}

fn describe_cycles(root: &Path) -> Vec<String> {
    let edges = file_dependencies(root);
    let base = Path::new(env!("CARGO_MANIFEST_DIR"));
    let show = |p: &Path| p.strip_prefix(base).unwrap_or(p).display().to_string();
    import_cycles(&edges)
        .into_iter()
        .map(|cycle| {
            let members: BTreeSet<&PathBuf> = cycle.iter().collect();
            let links: Vec<String> = edges
                .iter()
                .filter(|((from, to), _)| members.contains(from) && members.contains(to))
                .map(|((from, to), line)| format!("  {}:{line} uses {}", show(from), show(to)))
                .collect();
            format!("files that import each other:\n{}", links.join("\n"))
        })
        .collect()
}

#[test]
fn no_two_files_import_each_other() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    // Both crates are walked from their roots through their `mod` lines.
    for (root, at_least) in [("lib.rs", 80), ("bin/mm2-offsets/main.rs", 20)] {
        let modules = Crate::load(&src.join(root)).files.len();
        assert!(modules >= at_least, "{root}: only {modules} modules found");
        assert!(!file_dependencies(&src.join(root)).is_empty());
    }
    let mut cycles = describe_cycles(&src.join("lib.rs"));
    cycles.extend(describe_cycles(&src.join("bin/mm2-offsets/main.rs")));
    assert!(cycles.is_empty(), "{}", cycles.join("\n"));
}

#[test]
fn the_cycle_check_reads_uses_and_paths() {
    assert_eq!(
        use_paths("crate::{a::{B, c as d}, e::*, f::self}"),
        [
            (
                vec!["crate".into(), "a".into(), "B".into()],
                Some("B".into())
            ),
            (
                vec!["crate".into(), "a".into(), "c".into()],
                Some("d".into())
            ),
            (vec!["crate".into(), "e".into()], None),
            (vec!["crate".into(), "f".into()], Some("f".into())),
        ]
    );
    let lines = [
        (3, "pub use x::{"),
        (4, "    A, B,"),
        (5, "};"),
        (6, "use y::C;"),
    ];
    let declared = use_declarations(&lines);
    assert_eq!(declared[0], (3, true, "x::{ A, B, }".to_string()));
    assert_eq!(declared[1], (6, false, "y::C".to_string()));
    // The continuation lines of a re-export are part of it, not code that names its items.
    assert_eq!(
        use_declaration_lines(&[
            (1, "pub use x::{"),
            (2, "    A, B,"),
            (3, "};"),
            (4, "f(A);")
        ]),
        BTreeSet::from([1, 2, 3])
    );
    assert_eq!(
        without_comment("let a = \"x//y\"; // crate::z"),
        "let a = \"x//y\"; "
    );
    // A cycle of three files is one group; a file on a path into it is not part of it.
    let p = |s: &str| PathBuf::from(s);
    let edges: BTreeMap<(PathBuf, PathBuf), usize> = [
        ((p("a"), p("b")), 1),
        ((p("b"), p("c")), 1),
        ((p("c"), p("a")), 1),
        ((p("d"), p("a")), 1),
    ]
    .into();
    assert_eq!(import_cycles(&edges), [vec![p("a"), p("b"), p("c")]]);
}
