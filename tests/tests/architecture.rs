//! The architecture test (in the manner of ArchUnit): the imports of the kernel and host crates
//! against the maps in docs/design.md, and no import circle anywhere.
//!
//! - **Layers.** docs/design.md's "The kernel's map" and "The host tool's map" list a crate's
//!   top-level modules from the top down, each with the modules it may use. Every `crate::`
//!   path, `super::` path that leaves a module, and exported macro (`say!` is
//!   `output::console`'s) is an import; one of a module the map does not allow fails the test,
//!   naming the file, the line and the import. A module missing from the map fails too, and a
//!   map whose modules may use one above them (which would allow a circle) is refused.
//! - **Circles.** At every level of every crate (kernel, kernel/hw, boot, events, screen), the
//!   children of a module must import each other without a circle: two files under
//!   `kernel/src/output/` may not import each other, even where the map allows both. A child's
//!   use of its own parent (`super::Item`) is not an import between siblings.
//!
//! What it reads is the source text with comments and string literals blanked, so a path in a
//! doc comment is not an import. It cannot see an import that goes through a re-export of the
//! parent (`super::Item` where the parent has `pub use sibling::Item`): keep such re-exports
//! for the crate's public API.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// A crate's source: (path relative to its `src`, text).
type Sources = Vec<(PathBuf, String)>;

/// The crates checked, their source folders, and the heading of their map in docs/design.md.
const CRATES: &[(&str, &str, Option<&str>)] = &[
    ("kernel", "kernel/src", Some("The kernel's map")),
    ("hw", "kernel/hw/src", None),
    ("boot", "boot/src", Some("The host tool's map")),
    ("events", "events/src", None),
    ("screen", "screen/src", None),
];

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

fn read_sources(dir: &Path) -> Sources {
    fn walk(root: &Path, dir: &Path, out: &mut Sources) {
        let mut entries: Vec<_> = std::fs::read_dir(dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|e| e.unwrap().path())
            .collect();
        entries.sort();
        for p in entries {
            if p.is_dir() {
                walk(root, &p, out);
            } else if p.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&p).unwrap();
                out.push((p.strip_prefix(root).unwrap().to_path_buf(), text));
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out
}

/// The module a file is (`task/run/hw.rs` -> task::run::hw, `task/mod.rs` -> task; `lib.rs`,
/// `main.rs` and `src/bin/*` -> the root).
fn module_of(rel: &Path) -> Vec<String> {
    let mut parts: Vec<String> = rel
        .iter()
        .map(|c| c.to_string_lossy().into_owned())
        .collect();
    if parts.first().is_some_and(|p| p == "bin") {
        return Vec::new();
    }
    let file = parts.pop().unwrap();
    match file.as_str() {
        "mod.rs" => {}
        "lib.rs" | "main.rs" if parts.is_empty() => {}
        f => parts.push(f.trim_end_matches(".rs").to_string()),
    }
    parts
}

/// The text with comments, string and character literals replaced by spaces (line breaks kept).
fn blank(text: &str) -> String {
    let c: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let keep_lines = |s: &[char], out: &mut String| {
        for &ch in s {
            out.push(if ch == '\n' { '\n' } else { ' ' });
        }
    };
    while i < c.len() {
        let rest = &c[i..];
        let starts = |p: &str| {
            p.chars()
                .enumerate()
                .all(|(k, ch)| rest.get(k) == Some(&ch))
        };
        if starts("//") {
            let end = rest.iter().position(|&ch| ch == '\n').unwrap_or(rest.len());
            keep_lines(&rest[..end], &mut out);
            i += end;
        } else if starts("/*") {
            let (mut depth, mut k) = (1, 2);
            while k < rest.len() && depth > 0 {
                if rest[k] == '/' && rest.get(k + 1) == Some(&'*') {
                    depth += 1;
                    k += 2;
                } else if rest[k] == '*' && rest.get(k + 1) == Some(&'/') {
                    depth -= 1;
                    k += 2;
                } else {
                    k += 1;
                }
            }
            keep_lines(&rest[..k], &mut out);
            i += k;
        } else if (starts("r#") || starts("r\"") || starts("br#") || starts("br\""))
            && (i == 0 || !(c[i - 1].is_alphanumeric() || c[i - 1] == '_'))
        {
            let skip = if rest[0] == 'b' { 2 } else { 1 };
            let hashes = rest[skip..].iter().take_while(|&&ch| ch == '#').count();
            if rest.get(skip + hashes) != Some(&'"') {
                out.push(c[i]);
                i += 1;
                continue;
            }
            let close: String = std::iter::once('"')
                .chain(std::iter::repeat_n('#', hashes))
                .collect();
            let body = &rest[skip + hashes + 1..];
            let end = (0..body.len())
                .find(|&k| {
                    close
                        .chars()
                        .enumerate()
                        .all(|(j, ch)| body.get(k + j) == Some(&ch))
                })
                .map_or(body.len(), |k| k + close.len());
            keep_lines(&rest[..skip + hashes + 1 + end], &mut out);
            i += skip + hashes + 1 + end;
        } else if rest[0] == '"' {
            let mut k = 1;
            while k < rest.len() && rest[k] != '"' {
                k += if rest[k] == '\\' { 2 } else { 1 };
            }
            keep_lines(&rest[..(k + 1).min(rest.len())], &mut out);
            i += k + 1;
        } else if rest[0] == '\'' {
            // A character literal ('x', '\n', '\u{..}'), or a lifetime ('a), which is kept.
            let len = if rest.get(1) == Some(&'\\') {
                rest.iter()
                    .skip(2)
                    .position(|&ch| ch == '\'')
                    .map(|p| p + 3)
            } else if rest.get(2) == Some(&'\'') {
                Some(3)
            } else {
                None
            };
            match len {
                Some(n) => {
                    keep_lines(&rest[..n.min(rest.len())], &mut out);
                    i += n;
                }
                None => {
                    out.push('\'');
                    i += 1;
                }
            }
        } else {
            out.push(c[i]);
            i += 1;
        }
    }
    out
}

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Ident(String),
    Punct(&'static str),
}

/// Identifiers (with `$crate`) and the punctuation paths are made of, with their line numbers.
fn tokens(text: &str) -> Vec<(Tok, usize)> {
    let c: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let (mut i, mut line) = (0, 1);
    while i < c.len() {
        let ch = c[i];
        if ch == '\n' {
            line += 1;
            i += 1;
        } else if ch.is_alphabetic() || ch == '_' || (ch == '$' && c.get(i + 1) == Some(&'c')) {
            let start = i;
            i += 1;
            while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                i += 1;
            }
            let word: String = c[start..i].iter().collect();
            out.push((Tok::Ident(word.trim_start_matches("r#").to_string()), line));
        } else if ch == ':' && c.get(i + 1) == Some(&':') {
            out.push((Tok::Punct("::"), line));
            i += 2;
        } else {
            let p = match ch {
                '{' => Some("{"),
                '}' => Some("}"),
                ',' => Some(","),
                ';' => Some(";"),
                '!' => Some("!"),
                '#' => Some("#"),
                '[' => Some("["),
                ']' => Some("]"),
                _ => None,
            };
            if let Some(p) = p {
                out.push((Tok::Punct(p), line));
            }
            i += 1;
        }
    }
    out
}

/// One import: the module it names (file modules only) and where.
#[derive(Clone, Debug)]
struct Import {
    from: Vec<String>,
    file: PathBuf,
    line: usize,
    to: Vec<String>,
    text: String,
    /// In a `#[cfg(test)]` inline module: counted for the layers, not for circles (a test of
    /// `switch` may use the simulated PMU, which uses `backend`, which uses `switch`).
    test_only: bool,
}

struct Model {
    modules: BTreeSet<Vec<String>>,
    imports: Vec<Import>,
}

impl Model {
    fn new(sources: &Sources) -> Model {
        let modules: BTreeSet<Vec<String>> = sources.iter().map(|(p, _)| module_of(p)).collect();
        // Exported macros: `#[macro_export] macro_rules! NAME`, used as `NAME!`.
        let mut macros: BTreeMap<String, Vec<String>> = BTreeMap::new();
        let blanked: Vec<(PathBuf, Vec<(Tok, usize)>)> = sources
            .iter()
            .map(|(p, t)| (p.clone(), tokens(&blank(t))))
            .collect();
        for (p, toks) in &blanked {
            for w in toks.windows(4) {
                if let [
                    (Tok::Ident(a), _),
                    (Tok::Punct("!"), _),
                    (Tok::Ident(name), _),
                    _,
                ] = w
                    && a == "macro_rules"
                {
                    let exported = sources
                        .iter()
                        .find(|(q, _)| q == p)
                        .is_some_and(|(_, t)| t.contains("#[macro_export]"));
                    if exported {
                        macros.insert(name.clone(), module_of(p));
                    }
                }
            }
        }
        let mut imports = Vec::new();
        for (p, toks) in &blanked {
            let file_module = module_of(p);
            // (name, brace depth, under `#[cfg(test)]`)
            let mut inline: Vec<(String, usize, bool)> = Vec::new();
            let mut depth = 0usize;
            let mut k = 0;
            while k < toks.len() {
                let here: Vec<String> = file_module
                    .iter()
                    .cloned()
                    .chain(inline.iter().map(|(n, _, _)| n.clone()))
                    .collect();
                match &toks[k].0 {
                    Tok::Punct("{") => depth += 1,
                    Tok::Punct("}") => {
                        depth = depth.saturating_sub(1);
                        if inline.last().is_some_and(|&(_, d, _)| d == depth) {
                            inline.pop();
                        }
                    }
                    Tok::Ident(w)
                        if w == "mod" && matches!(toks.get(k + 2), Some((Tok::Punct("{"), _))) =>
                    {
                        if let Some((Tok::Ident(name), _)) = toks.get(k + 1) {
                            let test = cfg_test_before(toks, k)
                                || inline.last().is_some_and(|&(_, _, t)| t);
                            inline.push((name.clone(), depth, test));
                        }
                    }
                    Tok::Ident(w)
                        if (w == "crate" || w == "$crate" || w == "super")
                            && !matches!(
                                k.checked_sub(1).map(|j| &toks[j].0),
                                Some(Tok::Punct("::"))
                            ) =>
                    {
                        let test_only = inline.last().is_some_and(|&(_, _, t)| t);
                        let (paths, next) = read_paths(toks, k);
                        let is_macro = matches!(toks.get(next), Some((Tok::Punct("!"), _)));
                        for path in paths {
                            let last = path.last().cloned().unwrap_or_default();
                            let (to, text) = match macros.get(&last) {
                                Some(m) if is_macro => (m.clone(), format!("{last}!")),
                                _ => match resolve(&modules, &here, &path) {
                                    Some(to) => (to, path.join("::")),
                                    None => continue,
                                },
                            };
                            imports.push(Import {
                                from: file_module.clone(),
                                file: p.clone(),
                                line: toks[k].1,
                                to,
                                text,
                                test_only,
                            });
                        }
                        k = next;
                        continue;
                    }
                    Tok::Ident(name)
                        if matches!(toks.get(k + 1), Some((Tok::Punct("!"), _)))
                            && macros.contains_key(name) =>
                    {
                        imports.push(Import {
                            from: file_module.clone(),
                            file: p.clone(),
                            line: toks[k].1,
                            to: macros[name].clone(),
                            text: format!("{name}!"),
                            test_only: inline.last().is_some_and(|&(_, _, t)| t),
                        });
                    }
                    _ => {}
                }
                k += 1;
            }
        }
        Model { modules, imports }
    }
}

/// Whether the `mod` at `toks[k]` (or `pub mod`) has `#[cfg(test)]` right before it.
fn cfg_test_before(toks: &[(Tok, usize)], k: usize) -> bool {
    let k = match k.checked_sub(1).map(|j| &toks[j].0) {
        Some(Tok::Ident(w)) if w == "pub" => k - 1,
        _ => k,
    };
    let want = [
        Tok::Punct("#"),
        Tok::Punct("["),
        Tok::Ident("cfg".into()),
        Tok::Ident("test".into()),
        Tok::Punct("]"),
    ];
    k >= want.len() && toks[k - want.len()..k].iter().map(|t| &t.0).eq(want.iter())
}

/// The paths that start at `toks[k]` (`crate::a::{b, c::d}` gives two), and the index after.
fn read_paths(toks: &[(Tok, usize)], k: usize) -> (Vec<Vec<String>>, usize) {
    fn path(toks: &[(Tok, usize)], mut k: usize, prefix: Vec<String>) -> (Vec<Vec<String>>, usize) {
        let mut cur = prefix;
        loop {
            match toks.get(k).map(|t| &t.0) {
                Some(Tok::Ident(w)) => {
                    cur.push(w.clone());
                    k += 1;
                }
                Some(Tok::Punct("{")) => {
                    let mut all = Vec::new();
                    k += 1;
                    loop {
                        match toks.get(k).map(|t| &t.0) {
                            Some(Tok::Punct("}")) => return (all, k + 1),
                            Some(Tok::Punct(",")) => k += 1,
                            None => return (all, k),
                            _ => {
                                let (mut ps, next) = path(toks, k, cur.clone());
                                all.append(&mut ps);
                                // `as alias` after an item.
                                k = next;
                                while let Some(Tok::Ident(_)) = toks.get(k).map(|t| &t.0) {
                                    k += 1;
                                }
                            }
                        }
                    }
                }
                _ => return (vec![cur], k),
            }
            if matches!(toks.get(k).map(|t| &t.0), Some(Tok::Punct("::"))) {
                k += 1;
            } else {
                return (vec![cur], k);
            }
        }
    }
    path(toks, k, Vec::new())
}

/// The file module a path names (its longest prefix that is one), from module `here`.
fn resolve(
    modules: &BTreeSet<Vec<String>>,
    here: &[String],
    path: &[String],
) -> Option<Vec<String>> {
    let mut at: Vec<String> = here.to_vec();
    let mut rest = path;
    match rest.first().map(String::as_str) {
        Some("crate" | "$crate") => {
            at.clear();
            rest = &rest[1..];
        }
        Some("super") => {
            while rest.first().is_some_and(|s| s == "super") {
                at.pop()?;
                rest = &rest[1..];
            }
        }
        _ => return None,
    }
    // From an inline module (`mod tests`), `super` may land in the file's own module.
    while !modules.contains(&at) && !at.is_empty() {
        at.pop();
    }
    for seg in rest {
        if seg == "self" {
            break;
        }
        let mut next = at.clone();
        next.push(seg.clone());
        if modules.contains(&next) {
            at = next;
        } else {
            break;
        }
    }
    Some(at)
}

/// A map: each top-level module with the modules it may use, from the top down.
#[derive(Debug)]
struct Map {
    rows: Vec<(String, BTreeSet<String>)>,
}

/// The map under `heading` in docs/design.md: the table rows `| `name` | ... | `a`, `b` |`.
fn read_map(design: &str, heading: &str) -> Result<Map, String> {
    let start = design
        .lines()
        .position(|l| l.starts_with('#') && l.trim_start_matches('#').trim() == heading)
        .ok_or_else(|| format!("docs/design.md has no section `{heading}`"))?;
    let mut rows = Vec::new();
    for line in design.lines().skip(start + 1) {
        if line.starts_with('#') {
            break;
        }
        let cells: Vec<&str> = line.trim().trim_matches('|').split('|').collect();
        if !line.trim_start().starts_with("| `") || cells.len() < 3 {
            continue;
        }
        let ticked = |s: &str| -> Vec<String> {
            s.split('`')
                .skip(1)
                .step_by(2)
                .map(|w| w.trim_end_matches('/').to_string())
                .collect()
        };
        let name = ticked(cells[0])
            .into_iter()
            .next()
            .ok_or_else(|| format!("a row of `{heading}` names no module: {line}"))?;
        rows.push((name, ticked(cells[cells.len() - 1]).into_iter().collect()));
    }
    if rows.is_empty() {
        return Err(format!("`{heading}` in docs/design.md has no table rows"));
    }
    Ok(Map { rows })
}

/// Everything wrong with `sources` (a crate at `dir`) against `map` and for circles.
fn violations(dir: &str, sources: &Sources, map: Option<&Map>) -> Vec<String> {
    let model = Model::new(sources);
    let mut bad = Vec::new();
    let at = |i: &Import| format!("{dir}/{}:{}", i.file.display(), i.line);
    if let Some(map) = map {
        let tops: BTreeSet<String> = model
            .modules
            .iter()
            .filter_map(|m| m.first().cloned())
            .collect();
        let names: Vec<&String> = map.rows.iter().map(|(n, _)| n).collect();
        for t in &tops {
            if !names.contains(&t) {
                bad.push(format!(
                    "{dir}/{t}: a top-level module the map does not list"
                ));
            }
        }
        for (i, (name, uses)) in map.rows.iter().enumerate() {
            if !tops.contains(name) {
                bad.push(format!("the map lists `{name}`, which {dir} does not have"));
            }
            for u in uses {
                if !map.rows[i + 1..].iter().any(|(n, _)| n == u) {
                    bad.push(format!(
                        "the map lets `{name}` use `{u}`, which does not stand below it"
                    ));
                }
            }
        }
        for imp in &model.imports {
            let (Some(from), Some(to)) = (imp.from.first(), imp.to.first()) else {
                continue;
            };
            if from == to {
                continue;
            }
            let allowed = map
                .rows
                .iter()
                .find(|(n, _)| n == from)
                .is_some_and(|(_, uses)| uses.contains(to));
            if !allowed {
                bad.push(format!(
                    "{}: `{from}` imports `{}` (module `{to}`), which the map in docs/design.md \
                     does not let it use",
                    at(imp),
                    imp.text
                ));
            }
        }
    }
    // Circles among the children of every module.
    let parents: BTreeSet<Vec<String>> = model
        .modules
        .iter()
        .flat_map(|m| (0..m.len()).map(move |n| m[..n].to_vec()))
        .collect();
    for parent in parents {
        let child = |m: &[String]| -> Option<String> {
            (m.len() > parent.len() && m[..parent.len()] == parent[..])
                .then(|| m[parent.len()].clone())
        };
        let mut edges: BTreeMap<String, BTreeMap<String, &Import>> = BTreeMap::new();
        for imp in model.imports.iter().filter(|i| !i.test_only) {
            if let (Some(a), Some(b)) = (child(&imp.from), child(&imp.to))
                && a != b
            {
                edges.entry(a).or_default().entry(b).or_insert(imp);
            }
        }
        if let Some(cycle) = find_cycle(&edges) {
            let mut s = format!(
                "an import circle among the modules of {}:",
                if parent.is_empty() {
                    format!("{dir} (the crate root)")
                } else {
                    format!("{dir}/{}", parent.join("/"))
                }
            );
            for w in cycle.windows(2) {
                let imp = edges[&w[0]][&w[1]];
                let _ = write!(s, "\n    {} -> {} ({}: {})", w[0], w[1], at(imp), imp.text);
            }
            bad.push(s);
        }
    }
    bad
}

/// A circle in `edges` (first node repeated at the end), if there is one.
fn find_cycle(edges: &BTreeMap<String, BTreeMap<String, &Import>>) -> Option<Vec<String>> {
    fn visit(
        n: &str,
        edges: &BTreeMap<String, BTreeMap<String, &Import>>,
        state: &mut BTreeMap<String, u8>,
        stack: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        state.insert(n.to_string(), 1);
        stack.push(n.to_string());
        for m in edges.get(n).into_iter().flat_map(|e| e.keys()) {
            match state.get(m.as_str()).copied().unwrap_or(0) {
                1 => {
                    let from = stack.iter().position(|s| s == m).unwrap();
                    let mut c = stack[from..].to_vec();
                    c.push(m.clone());
                    return Some(c);
                }
                0 => {
                    if let Some(c) = visit(m, edges, state, stack) {
                        return Some(c);
                    }
                }
                _ => {}
            }
        }
        stack.pop();
        state.insert(n.to_string(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for n in edges.keys() {
        if state.get(n.as_str()).copied().unwrap_or(0) == 0
            && let Some(c) = visit(n, edges, &mut state, &mut Vec::new())
        {
            return Some(c);
        }
    }
    None
}

fn design() -> String {
    std::fs::read_to_string(workspace().join("docs/design.md")).expect("docs/design.md")
}

#[test]
fn every_import_follows_the_maps_and_no_crate_has_an_import_circle() {
    let design = design();
    let mut bad = Vec::new();
    let mut counted = Vec::new();
    for &(name, dir, heading) in CRATES {
        let sources = read_sources(&workspace().join(dir));
        assert!(sources.len() > 3, "{dir}: no sources read");
        let map = heading.map(|h| read_map(&design, h).unwrap_or_else(|e| panic!("{e}")));
        let model = Model::new(&sources);
        counted.push(format!(
            "{name}: {} files, {} imports",
            sources.len(),
            model.imports.len()
        ));
        bad.extend(violations(dir, &sources, map.as_ref()));
    }
    println!("read: {}", counted.join("; "));
    assert!(
        bad.is_empty(),
        "{} violations:\n{}",
        bad.len(),
        bad.join("\n")
    );
}

#[test]
fn the_kernel_has_about_a_dozen_top_level_entries_each_in_the_map() {
    let entries: Vec<String> = std::fs::read_dir(workspace().join("kernel/src"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n != "lib.rs" && n != "main.rs")
        .collect();
    assert!(
        entries.len() <= 12,
        "kernel/src has {} entries: {entries:?}",
        entries.len()
    );
    let map = read_map(&design(), "The kernel's map").unwrap();
    for e in &entries {
        assert!(
            map.rows.iter().any(|(n, _)| n == e),
            "kernel/src/{e} is not a folder of the map"
        );
    }
}

#[test]
fn no_source_file_is_over_1500_lines() {
    let mut long = Vec::new();
    for &(_, dir, _) in CRATES {
        for (p, text) in read_sources(&workspace().join(dir)) {
            let n = text.lines().count();
            if n > 1500 {
                long.push(format!("{dir}/{}: {n} lines", p.display()));
            }
        }
    }
    assert!(
        long.is_empty(),
        "split by responsibility:\n{}",
        long.join("\n")
    );
}

/// The kernel's real sources with one file added.
fn kernel_with(file: &str, text: &str) -> Sources {
    let mut s = read_sources(&workspace().join("kernel/src"));
    s.push((PathBuf::from(file), text.to_string()));
    s
}

/// The violations that are forbidden imports (not the circles they also make).
fn layer_violations(bad: Vec<String>) -> Vec<String> {
    bad.into_iter()
        .filter(|b| b.contains("does not let it use"))
        .collect()
}

#[test]
fn a_planted_forbidden_import_is_caught_and_named() {
    let map = read_map(&design(), "The kernel's map").unwrap();
    // The platform stands at the bottom: it may not use the boot sequence, nor print.
    let planted = kernel_with(
        "platform/planted.rs",
        "//! crate::boot in a comment is not an import\nuse crate::boot::run;\n\
         fn f() { crate::say!(\"x\"); let _ = \"crate::task\"; }\n",
    );
    let bad = layer_violations(violations("kernel/src", &planted, Some(&map)));
    assert_eq!(bad.len(), 2, "{bad:#?}");
    assert!(bad[0].contains("kernel/src/platform/planted.rs:2: `platform` imports `crate::boot::run` (module `boot`)"), "{}", bad[0]);
    assert!(
        bad[1].contains("planted.rs:3: `platform` imports `say!` (module `output`)"),
        "{}",
        bad[1]
    );
    // A group and `super::` paths are read too.
    let grouped = kernel_with(
        "devices/planted.rs",
        "use crate::{platform::cpu, output::{record::Record, console}};\nuse super::super::task;\n",
    );
    let bad = layer_violations(violations("kernel/src", &grouped, Some(&map)));
    assert_eq!(bad.len(), 3, "{bad:#?}");
    assert!(
        bad[0].contains(":1: `devices` imports `crate::output::record::Record`"),
        "{}",
        bad[0]
    );
    assert!(
        bad[1].contains(":1: `devices` imports `crate::output::console`"),
        "{}",
        bad[1]
    );
    assert!(
        bad[2].contains(":2: `devices` imports `super::super::task`"),
        "{}",
        bad[2]
    );
}

#[test]
fn a_planted_circle_is_caught_at_any_level() {
    let map = read_map(&design(), "The kernel's map").unwrap();
    // Two files of one folder, each allowed by the map, importing each other.
    let circle = kernel_with(
        "output/planted.rs",
        "use super::fanout::line;\npub fn f() {}\n",
    );
    let mut circle = circle;
    for (p, t) in &mut circle {
        if p == Path::new("output/fanout.rs") {
            t.push_str("\nfn planted() { super::planted::f(); }\n");
        }
    }
    let bad: Vec<String> = violations("kernel/src", &circle, Some(&map))
        .into_iter()
        .filter(|b| b.contains("planted"))
        .collect();
    assert_eq!(bad.len(), 1, "{bad:#?}");
    assert!(
        bad[0].starts_with("an import circle among the modules of kernel/src/output:"),
        "{}",
        bad[0]
    );
    assert!(
        bad[0].contains("fanout -> planted") && bad[0].contains("planted -> fanout"),
        "{}",
        bad[0]
    );
}

#[test]
fn a_map_that_allows_an_upward_import_is_refused() {
    let design = "## The kernel's map\n| folder | owns | may use |\n|---|---|---|\n\
                  | `a` | x | `b` |\n| `b` | y | `a` |\n";
    let map = read_map(design, "The kernel's map").unwrap();
    let sources = vec![
        (PathBuf::from("a/mod.rs"), String::new()),
        (PathBuf::from("b/mod.rs"), String::new()),
    ];
    let bad = violations("k", &sources, Some(&map));
    assert_eq!(
        bad,
        vec!["the map lets `b` use `a`, which does not stand below it"]
    );
}

#[test]
fn comments_strings_and_lifetimes_are_blanked_right() {
    let src = "fn f<'a>(x: &'a str) -> char { let _ = r#\"crate::a\"#; /* crate::b /* nested */ */ \
               let _ = b\"crate::c\"; '\\'' } // crate::d\nuse crate::e;";
    let toks = tokens(&blank(src));
    let crates: Vec<usize> = toks
        .iter()
        .filter(|(t, _)| *t == Tok::Ident("crate".into()))
        .map(|(_, l)| *l)
        .collect();
    assert_eq!(crates, vec![2], "{toks:?}");
}
