//! `baremark asm`: an instruction sequence from the command line made into a payload, the way
//! nanoBench makes one (docs/asm.md).
//!
//! The user's statements go into a generated GNU as source ([`source`]), which the system
//! assembler turns into an object and GNU ld links with the runner library (`payloads/asm`,
//! built for bare metal and embedded here) into a static ELF at 0x400000, which then runs
//! through the same harness, records and outputs as any other payload. A statement the
//! assembler rejects is reported at its line and column in the user's text.

pub mod source;

use std::fmt;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

pub use source::{Code, Part, Spec, Statement, Syntax};

/// The runner library (`payloads/asm`, a static library for x86_64-unknown-none).
static RUNNER_LIB: &[u8] = include_bytes!(env!("BAREMARK_ASM_RUNNER_LIB"));

/// Most copies per body (the `2x` body has twice as many; the payload's budget is 64 MiB).
pub const MAX_UNROLL: u64 = 100_000;
/// Largest `--align` offset: a page, past which alignment means nothing more.
pub const MAX_ALIGN: u64 = 4095;

/// A complaint of the assembler, placed in the user's text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    pub severity: Severity,
    pub message: String,
    /// The user's statement it is about (`None`: baremark's own generated lines).
    pub at: Option<Statement>,
    /// 1-based column in the statement's line (the statement's start, or the quoted text).
    pub column: usize,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Severity {
    Error,
    Warning,
}

/// The code did not assemble: what the assembler said, placed.
#[derive(Debug)]
pub struct AsmError {
    pub diagnostics: Vec<Diagnostic>,
    /// The user's code, to quote the lines.
    pub codes: Vec<Code>,
}

impl std::error::Error for AsmError {}

impl fmt::Display for AsmError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let errors = self
            .diagnostics
            .iter()
            .filter(|d| d.severity == Severity::Error)
            .count();
        writeln!(
            f,
            "the assembler rejected the code ({errors} error{}):",
            if errors == 1 { "" } else { "s" }
        )?;
        for d in &self.diagnostics {
            write!(f, "{}", render(d, &self.codes))?;
        }
        Ok(())
    }
}

/// One diagnostic as `origin:line:column: error: message`, the line, and a caret under it.
pub fn render(d: &Diagnostic, codes: &[Code]) -> String {
    let kind = match d.severity {
        Severity::Error => "error",
        Severity::Warning => "warning",
    };
    let Some(s) = &d.at else {
        return format!(
            "  (baremark's generated code) {kind}: {} -- a bug in baremark asm, please report it\n",
            d.message
        );
    };
    let code = codes.iter().find(|c| c.part == s.part);
    let origin = code.map_or(s.part.option(), |c| c.origin.as_str());
    let mut out = format!(
        "  {origin}:{}:{}: {kind}: {}\n",
        s.line, d.column, d.message
    );
    if let Some(line) = code.and_then(|c| c.text.split('\n').nth(s.line - 1)) {
        let line = line.trim_end_matches('\r');
        out.push_str(&format!("    {line}\n"));
        let pad: String = line
            .chars()
            .take(d.column.saturating_sub(1))
            .map(|c| if c == '\t' { '\t' } else { ' ' })
            .collect();
        out.push_str(&format!("    {pad}^\n"));
    }
    if d.message.contains("already defined") && s.part == Part::Code {
        out.push_str(
            "    note: the code is copied --unroll times, so a named label is defined again in every copy; use numeric local labels (`1:` ... `jnz 1b`)\n",
        );
    }
    out
}

/// Parses GNU as's `FILE:LINE: Error: MESSAGE` lines for `file` and places each on the user's
/// statement; repeats (one per copy of the code) are dropped.
pub fn diagnostics(stderr: &str, file: &str, origins: &[Option<Statement>]) -> Vec<Diagnostic> {
    let mut out: Vec<Diagnostic> = Vec::new();
    for line in stderr.lines() {
        let Some(rest) = line.strip_prefix(file).and_then(|r| r.strip_prefix(':')) else {
            continue;
        };
        let Some((number, rest)) = rest.split_once(':') else {
            continue;
        };
        let Ok(number) = number.trim().parse::<usize>() else {
            continue;
        };
        let rest = rest.trim_start();
        let (severity, message) = if let Some(m) = rest.strip_prefix("Error:") {
            (Severity::Error, m.trim())
        } else if let Some(m) = rest.strip_prefix("Warning:") {
            (Severity::Warning, m.trim())
        } else {
            (Severity::Error, rest)
        };
        let at = origins.get(number.wrapping_sub(1)).cloned().flatten();
        let column = at.as_ref().map_or(0, |s| column_of(s, message));
        let d = Diagnostic {
            severity,
            message: message.to_string(),
            at,
            column,
        };
        if !out.contains(&d) {
            out.push(d);
        }
    }
    out
}

/// The column of what the message quotes (GNU as writes `` `text' ``), if the statement holds
/// it; else the statement's own column.
fn column_of(s: &Statement, message: &str) -> usize {
    let quoted = message
        .split_once('`')
        .and_then(|(_, rest)| rest.rsplit_once('\''))
        .map(|(q, _)| q);
    match quoted.and_then(|q| (!q.is_empty()).then(|| s.text.find(q)).flatten()) {
        Some(i) => s.column + s.text[..i].chars().count(),
        None => s.column,
    }
}

/// The assembler and linker: GNU binutils' `as` and `ld`, or `BAREMARK_AS` / `BAREMARK_LD`.
fn tool(var: &str, default: &str) -> String {
    std::env::var(var)
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| default.to_string())
}

fn run_tool(program: &str, var: &str, args: &[&str], dir: &Path) -> Result<std::process::Output> {
    Command::new(program)
        .args(args)
        .current_dir(dir)
        .output()
        .with_context(|| {
            format!(
                "cannot run `{program}` (GNU binutils, which a Rust host toolchain also needs to link): install it (e.g. `sudo apt-get install binutils`) or name another with {var}"
            )
        })
}

/// What [`build`] made.
#[derive(Debug)]
pub struct Built {
    pub elf: Vec<u8>,
    /// Warnings the assembler gave (the code assembled nevertheless).
    pub warnings: Vec<Diagnostic>,
    /// The generated functions' addresses in the ELF (`baremark_asm_*`), to place a fault.
    pub symbols: Vec<(String, u64)>,
}

/// The `baremark_asm_*` symbols of `nm`'s output, by address.
pub fn parse_nm(text: &str) -> Vec<(String, u64)> {
    let mut out: Vec<(String, u64)> = text
        .lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let addr = u64::from_str_radix(f.next()?, 16).ok()?;
            let name = f.nth(1)?;
            name.starts_with("baremark_asm_")
                .then(|| (name.to_string(), addr))
        })
        .collect();
    out.sort_by_key(|&(_, a)| a);
    out
}

/// Where in the generated code `rip` is, in the user's terms (`None`: not in it, e.g. in the
/// runner).
pub fn locate(spec: &Spec, symbols: &[(String, u64)], rip: u64) -> Option<String> {
    let addr = |name: &str| symbols.iter().find(|(n, _)| n == name).map(|&(_, a)| a);
    let quote = |code: &Code| {
        let s = source::statements(code);
        if s.len() == 1 {
            format!(" (`{}`)", s[0].text)
        } else {
            String::new()
        }
    };
    for (suffix, copies) in [("1x", spec.unroll), ("2x", 2 * spec.unroll)] {
        let (Some(start), Some(end)) = (
            addr(&format!("baremark_asm_code_{suffix}")),
            addr(&format!("baremark_asm_code_{suffix}_end")),
        ) else {
            continue;
        };
        if (start..end).contains(&rip) && copies > 0 {
            let len = (end - start) / copies;
            let copy = (rip - start) / len.max(1);
            return Some(format!(
                "in the benchmarked code{}: copy {} of {copies} (the {suffix} region), byte {} of {len}",
                quote(&spec.code),
                copy + 1,
                (rip - start) % len.max(1)
            ));
        }
    }
    // The other functions, each up to the next symbol.
    let part = symbols
        .iter()
        .zip(symbols.iter().skip(1))
        .find(|((_, a), (_, b))| (*a..*b).contains(&rip))
        .map(|((name, _), _)| name.as_str())?;
    let (what, code) = match part {
        "baremark_asm_setup" => ("in --init", spec.init.as_ref()),
        "baremark_asm_one_time_init" => ("in --one-time-init", spec.one_time_init.as_ref()),
        "baremark_asm_body_1x" | "baremark_asm_body_2x" => (
            "in --late-init (or the register loads before it)",
            spec.late_init.as_ref(),
        ),
        _ => return None,
    };
    Some(format!("{what}{}", code.map(quote).unwrap_or_default()))
}

/// The `report` record's text: the settings and the code (on one line each; the kernel takes
/// at most 1024 bytes).
pub fn report_text(spec: &Spec) -> String {
    fn one_line(code: &Code) -> String {
        let text = source::statements(code)
            .into_iter()
            .map(|s| s.text)
            .collect::<Vec<_>>()
            .join("; ");
        if text.chars().count() > 160 {
            format!("{}...", text.chars().take(157).collect::<String>())
        } else {
            text
        }
    }
    let mut text = format!(
        "bench={}\niterations={}\nunroll={}\nloop={}\nalign={}\nsyntax={}\ncode={}\n",
        spec.name,
        spec.iterations(),
        spec.unroll,
        spec.loop_count,
        spec.align,
        spec.syntax.name(),
        one_line(&spec.code)
    );
    for (key, code) in [
        ("init", &spec.init),
        ("late_init", &spec.late_init),
        ("one_time_init", &spec.one_time_init),
    ] {
        if let Some(code) = code {
            text.push_str(&format!("{key}={}\n", one_line(code)));
        }
    }
    text.push_str(&format!(
        "expect=per copy of the code: (region of {} copies) minus (region of {}), divided by {}",
        2 * spec.iterations(),
        spec.iterations(),
        spec.iterations()
    ));
    text
}

/// The symbols of ld's "undefined reference to `x'" lines, each once, as `` `x` ``.
fn undefined_symbols(stderr: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for line in stderr.lines() {
        let Some((_, rest)) = line.split_once("undefined reference to `") else {
            continue;
        };
        let Some((name, _)) = rest.split_once('\'') else {
            continue;
        };
        let name = format!("`{name}`");
        if !out.contains(&name) {
            out.push(name);
        }
    }
    out
}

/// Checks the settings the assembler would not.
pub fn check(spec: &Spec) -> Result<()> {
    let name_ok = (1..=64).contains(&spec.name.len())
        && spec
            .name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_.-".contains(&b));
    if !name_ok {
        bail!(
            "--name `{}`: a benchmark name is 1-64 characters of A-Z a-z 0-9 _ . -",
            spec.name
        );
    }
    if !(1..=MAX_UNROLL).contains(&spec.unroll) {
        bail!(
            "--unroll {}: give 1 to {MAX_UNROLL} copies (use --loop for more)",
            spec.unroll
        );
    }
    if spec.align > MAX_ALIGN {
        bail!(
            "--align {}: give an offset from 0 to {MAX_ALIGN}",
            spec.align
        );
    }
    if source::statements(&spec.code).is_empty() {
        bail!("the code to benchmark is empty (give instructions, e.g. \"add rax, rbx\")");
    }
    Ok(())
}

/// Assembles and links the benchmark in `dir`, leaving `NAME.s`, `NAME.o` and `NAME.elf`
/// there. An [`AsmError`] (inside the `anyhow::Error`) when the assembler rejects the code.
pub fn build(spec: &Spec, dir: &Path) -> Result<Built> {
    check(spec)?;
    let codes = spec.codes();
    let bad = source::bad_nops(spec);
    if !bad.is_empty() {
        return Err(AsmError {
            diagnostics: bad
                .into_iter()
                .map(|(s, message)| Diagnostic {
                    severity: Severity::Error,
                    message,
                    column: s.column,
                    at: Some(s),
                })
                .collect(),
            codes,
        }
        .into());
    }
    let assembler = tool("BAREMARK_AS", "as");
    let report = report_text(spec);
    let assemble = |unroll: Option<u64>, stem: &str| -> Result<Vec<Diagnostic>> {
        let src = source::generate(spec, &report, unroll);
        let file = format!("{stem}.s");
        std::fs::write(dir.join(&file), &src.text)
            .with_context(|| format!("writing {}", dir.join(&file).display()))?;
        let object = format!("{stem}.o");
        let out = run_tool(
            &assembler,
            "BAREMARK_AS",
            &["--64", "-o", &object, &file],
            dir,
        )?;
        let stderr = String::from_utf8_lossy(&out.stderr);
        let found = diagnostics(&stderr, &file, &src.origins);
        let failed = !out.status.success() || found.iter().any(|d| d.severity == Severity::Error);
        if failed {
            if found.is_empty() {
                bail!("`{assembler}` failed ({}): {}", out.status, stderr.trim());
            }
            return Err(AsmError {
                diagnostics: found,
                codes: codes.clone(),
            }
            .into());
        }
        Ok(found)
    };
    // One copy first: a mistake is reported once, quickly, whatever --unroll says.
    assemble(Some(1), "check")?;
    let warnings = assemble(None, &spec.name)?;
    for f in ["check.s", "check.o"] {
        let _ = std::fs::remove_file(dir.join(f));
    }

    let lib = "libbaremark_asm_runner.a";
    std::fs::write(dir.join(lib), RUNNER_LIB)
        .with_context(|| format!("writing {}", dir.join(lib).display()))?;
    let linker = tool("BAREMARK_LD", "ld");
    let object = format!("{}.o", spec.name);
    let elf = format!("{}.elf", spec.name);
    // The kernel's loader wants a static, non-PIE ELF64 at 0x400000 with W^X segments
    // (as payloads/c/Makefile links); no debug sections: the bootloader reads every byte.
    let out = run_tool(
        &linker,
        "BAREMARK_LD",
        &[
            "-static",
            "-nostdlib",
            "-no-pie",
            "-Ttext-segment=0x400000",
            "-z",
            "separate-code",
            "-z",
            "noexecstack",
            "--build-id=none",
            "--gc-sections",
            "--strip-debug",
            "-e",
            "_start",
            "-u",
            "_start",
            "-o",
            &elf,
            &object,
            lib,
        ],
        dir,
    )?;
    let _ = std::fs::remove_file(dir.join(lib));
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let undefined = undefined_symbols(&stderr);
        if !undefined.is_empty() {
            bail!(
                "the code refers to {} it does not define: {} (the code may only refer to its own labels; there is no library to link)",
                if undefined.len() == 1 {
                    "a symbol"
                } else {
                    "symbols"
                },
                undefined.join(", ")
            );
        }
        bail!(
            "the linker rejected the code ({linker} {}):\n{}",
            out.status,
            stderr.trim()
        );
    }
    let nm = run_tool(
        &tool("BAREMARK_NM", "nm"),
        "BAREMARK_NM",
        &["--defined-only", &elf],
        dir,
    )?;
    let symbols = parse_nm(&String::from_utf8_lossy(&nm.stdout));
    let path: PathBuf = dir.join(&elf);
    let elf = std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
    Ok(Built {
        elf,
        warnings,
        symbols,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn statement(text: &str, column: usize) -> Statement {
        Statement {
            part: Part::Code,
            line: 1,
            column,
            text: text.into(),
        }
    }

    #[test]
    fn assembler_lines_are_placed_on_the_statement_and_repeats_dropped() {
        let origins = vec![None, Some(statement("foo rax", 15)), None];
        let stderr = "asm.s: Assembler messages:\n\
                      asm.s:2: Error: no such instruction: `foo rax'\n\
                      asm.s:2: Error: no such instruction: `foo rax'\n\
                      asm.s:3: Warning: something of ours\n";
        let d = diagnostics(stderr, "asm.s", &origins);
        assert_eq!(d.len(), 2);
        assert_eq!(d[0].severity, Severity::Error);
        assert_eq!(d[0].message, "no such instruction: `foo rax'");
        assert_eq!(d[0].column, 15);
        assert_eq!(d[0].at.as_ref().unwrap().text, "foo rax");
        assert_eq!((d[1].severity, d[1].at.clone()), (Severity::Warning, None));
    }

    #[test]
    fn the_column_points_at_the_quoted_text() {
        let s = statement("mov rax, [rbx+", 5);
        assert_eq!(column_of(&s, "junk `rbx+' after expression"), 5 + 10);
        assert_eq!(column_of(&s, "bad expression"), 5);
    }

    #[test]
    fn a_rendered_error_quotes_the_line_with_a_caret() {
        let codes = vec![Code {
            part: Part::Code,
            origin: "CODE".into(),
            text: "add rax, rbx; foo rax".into(),
        }];
        let d = Diagnostic {
            severity: Severity::Error,
            message: "no such instruction: `foo rax'".into(),
            at: Some(statement("foo rax", 15)),
            column: 15,
        };
        assert_eq!(
            render(&d, &codes),
            "  CODE:1:15: error: no such instruction: `foo rax'\n    add rax, rbx; foo rax\n                  ^\n"
        );
    }
}
