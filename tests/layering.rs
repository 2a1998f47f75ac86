//! The layering rule of `src/lib.rs`, "dependencies point down only", checked on the sources:
//! every `crate::LAYER` path in a layer's library code must name the layer itself or one below
//! it. Test code (files named `*tests.rs`, and each item marked `#[cfg(test)]`, to its closing
//! brace) may reach up, to check a layer against a higher one; doc comments are not
//! dependencies. Every other line of every file is read, including library code that follows a
//! test module.

use std::path::{Path, PathBuf};

/// The layers from the top down, as the table in `src/lib.rs` lists them.
const LAYERS_TOP_DOWN: &[&str] = &[
    "watch",
    "apply",
    "precise",
    "translate",
    "select",
    "mm2",
    "client",
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
