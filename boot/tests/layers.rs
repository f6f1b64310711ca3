//! The host tool's modules flow one way: src/lib.rs lists them from the top down with the
//! modules each uses, and this checks the source against that table (every `crate::NAME` a
//! module's code names is in its row, and below it), and that no two files of a module's
//! folder use each other.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

const SRC: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/src");

/// The rows of lib.rs's module table, top down: name and the modules it uses.
fn table() -> Vec<(String, BTreeSet<String>)> {
    let lib = std::fs::read_to_string(Path::new(SRC).join("lib.rs")).unwrap();
    lib.lines()
        .filter_map(|l| l.strip_prefix("//! | `"))
        .map(|row| {
            let cells: Vec<&str> = row.split(" | ").collect();
            let name = cells[0].trim().trim_end_matches('`').to_string();
            let uses = match cells[1].trim() {
                "-" => BTreeSet::new(),
                list => list.split(", ").map(str::to_string).collect(),
            };
            (name, uses)
        })
        .collect()
}

/// The `.rs` files under `dir`.
fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    out
}

/// What a file's code (comments aside) names after `prefix`: the first name of each path, every
/// name of a `prefix{a, b::c}` group. For `super::`, only in the file's own scope: an inline
/// module (`mod tests {`) ends it, as `super` means that file there.
fn named_after(text: &str, prefix: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for line in text.lines() {
        let code = line.split("//").next().unwrap();
        let trimmed = code.trim_start();
        let inline = trimmed.trim_start_matches("pub ").starts_with("mod ") && code.ends_with('{');
        if inline && prefix == "super::" {
            break;
        }
        let ident = |s: &str| -> String {
            s.chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect()
        };
        for (at, _) in code.match_indices(prefix) {
            if at > 0 && code[..at].ends_with(|c: char| c.is_alphanumeric() || c == '_') {
                continue;
            }
            let rest = &code[at + prefix.len()..];
            match rest.strip_prefix('{') {
                Some(group) => {
                    let mut depth = 0;
                    let mut item_start = true;
                    for (i, c) in group.char_indices() {
                        match c {
                            '{' => depth += 1,
                            '}' if depth == 0 => break,
                            '}' => depth -= 1,
                            ',' if depth == 0 => item_start = true,
                            c if item_start && !c.is_whitespace() => {
                                out.insert(ident(&group[i..]));
                                item_start = false;
                            }
                            _ => {}
                        }
                    }
                }
                None => {
                    out.insert(ident(rest));
                }
            }
        }
    }
    out.retain(|n| !n.is_empty() && n != "self");
    out
}

/// The modules a top-level module's files name through `crate::` (and through `super::` in
/// its own file or folder's mod.rs, which is the crate too).
fn uses_of(module: &str) -> BTreeSet<String> {
    let single = Path::new(SRC).join(format!("{module}.rs"));
    let folder = Path::new(SRC).join(module);
    let mut paths = if folder.is_dir() {
        files(&folder)
    } else {
        Vec::new()
    };
    if single.exists() {
        paths.push(single);
    }
    let mut out = BTreeSet::new();
    for path in paths {
        let text = std::fs::read_to_string(&path).unwrap();
        out.extend(named_after(&text, "crate::"));
        let top = path.parent() == Some(Path::new(SRC)) || path.ends_with("mod.rs");
        if top {
            out.extend(named_after(&text, "super::"));
        }
    }
    out.remove(module);
    out
}

#[test]
fn modules_use_only_the_modules_below_them_that_their_row_names() {
    let table = table();
    let names: Vec<&str> = table.iter().map(|(n, _)| n.as_str()).collect();
    let lib = std::fs::read_to_string(Path::new(SRC).join("lib.rs")).unwrap();
    let declared: BTreeSet<&str> = lib
        .lines()
        .filter_map(|l| l.trim_start_matches("pub ").strip_prefix("mod "))
        .map(|l| l.trim_end_matches(';'))
        .collect();
    assert_eq!(
        declared,
        names.iter().copied().collect(),
        "lib.rs's table lists every module once"
    );
    for (i, (name, uses)) in table.iter().enumerate() {
        for u in uses {
            assert!(
                names[i + 1..].contains(&u.as_str()),
                "`{name}` uses `{u}`, which is not below it in lib.rs's table"
            );
        }
        let found = uses_of(name);
        assert_eq!(
            &found, uses,
            "the modules `{name}` uses (left: its code) and lib.rs's row for it (right)"
        );
    }
}

#[test]
fn no_two_files_of_a_folder_use_each_other() {
    for entry in std::fs::read_dir(SRC).unwrap() {
        let folder = entry.unwrap().path();
        if !folder.is_dir() {
            continue;
        }
        let module = folder.file_name().unwrap().to_str().unwrap().to_string();
        let children: BTreeMap<String, PathBuf> = files(&folder)
            .into_iter()
            .filter(|p| p.parent() == Some(folder.as_path()) && !p.ends_with("mod.rs"))
            .map(|p| (p.file_stem().unwrap().to_str().unwrap().to_string(), p))
            .collect();
        let edges: BTreeMap<&str, BTreeSet<String>> = children
            .iter()
            .map(|(name, path)| {
                let text = std::fs::read_to_string(path).unwrap();
                let mut uses = named_after(&text, "super::");
                uses.extend(named_after(&text, &format!("crate::{module}::")));
                uses.retain(|u| u != name && children.contains_key(u));
                (name.as_str(), uses)
            })
            .collect();
        // Depth-first: a file met again while still on the path closes a circle.
        fn visit<'a>(
            at: &'a str,
            edges: &'a BTreeMap<&str, BTreeSet<String>>,
            path: &mut Vec<&'a str>,
            done: &mut BTreeSet<&'a str>,
        ) {
            if let Some(i) = path.iter().position(|p| *p == at) {
                panic!("the files {:?} use each other in a circle", &path[i..]);
            }
            if !done.insert(at) {
                return;
            }
            path.push(at);
            for next in &edges[at] {
                visit(next, edges, path, done);
            }
            path.pop();
        }
        let mut done = BTreeSet::new();
        for name in edges.keys() {
            visit(name, &edges, &mut Vec::new(), &mut done);
        }
    }
}
