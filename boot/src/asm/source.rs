//! The generated assembly source of `baremark asm`: the user's statements placed into the
//! functions the runner (`payloads/asm`) calls, with a map from every generated line back to
//! the statement it came from, so the assembler's complaints point at the user's text.
//!
//! The layout (docs/asm.md, "The generated code"):
//!
//! ```text
//! baremark_asm_setup:          save; scratch pointers, other registers 0; --init; keep all 16
//!                              registers in `state`; restore
//! baremark_asm_one_time_init:  save; scratch pointers; --one-time-init; restore
//! baremark_asm_body_1x:        save; load the 16 registers from `state`; --late-init;
//!                              [mov r15, LOOP]; jmp code; (padding) code: .rept UNROLL: CODE;
//!                              [dec r15; jnz code]; restore
//! baremark_asm_body_2x:        the same with 2 * UNROLL copies
//! ```
//!
//! "save" and "restore" keep the callee-saved registers and RSP in memory, not on the stack,
//! because the user's code may move RSP (it starts on a scratch area, as in nanoBench).

use std::fmt::Write as _;

/// Which syntax the user's statements are in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Syntax {
    /// Intel, without `%` prefixes (GNU as `.intel_syntax noprefix`), as nanoBench takes it.
    Intel,
    /// AT&T (GNU as's default: `addq %rbx, %rax`).
    Att,
}

impl Syntax {
    pub fn name(self) -> &'static str {
        match self {
            Syntax::Intel => "intel",
            Syntax::Att => "att",
        }
    }
}

/// Which part of the benchmark a piece of code is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Part {
    /// The measured code.
    Code,
    /// Before every repetition, outside the measured window.
    Init,
    /// Inside the window, before the copies (cancels out in `2U - U`).
    LateInit,
    /// Once, before the benchmark.
    OneTimeInit,
}

impl Part {
    /// The option that gives this part's text on the command line.
    pub fn option(self) -> &'static str {
        match self {
            Part::Code => "CODE",
            Part::Init => "--init",
            Part::LateInit => "--late-init",
            Part::OneTimeInit => "--one-time-init",
        }
    }
}

/// Code as the user gave it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Code {
    pub part: Part,
    /// Where it came from, for messages: the option (`CODE`, `--init`) or the file's path.
    pub origin: String,
    pub text: String,
}

/// One statement of the user's code and where it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Statement {
    pub part: Part,
    /// 1-based line and column (in characters) of its first character in `Code::text`.
    pub line: usize,
    pub column: usize,
    /// The statement as written (without the separator, a comment or surrounding blanks).
    pub text: String,
}

/// Splits code into statements as GNU as does for x86: at newlines and `;` (its statement
/// separator), with `#` starting a comment to the end of the line; neither counts inside a
/// string or character literal.
pub fn statements(code: &Code) -> Vec<Statement> {
    let mut out = Vec::new();
    for (index, line) in code.text.split('\n').enumerate() {
        let mut start = 0; // byte offset of the current statement
        let mut quote: Option<char> = None;
        let mut escaped = false;
        let mut end_of_code = line.len();
        let mut cuts = Vec::new();
        for (i, c) in line.char_indices() {
            if let Some(q) = quote {
                if escaped {
                    escaped = false;
                } else if c == '\\' {
                    escaped = true;
                } else if c == q {
                    quote = None;
                }
                continue;
            }
            match c {
                '"' => quote = Some('"'),
                '#' => {
                    end_of_code = i;
                    break;
                }
                ';' => {
                    cuts.push((start, i));
                    start = i + 1;
                }
                _ => {}
            }
        }
        cuts.push((start, end_of_code));
        for (from, to) in cuts {
            let piece = &line[from..to];
            let text = piece.trim();
            if text.is_empty() {
                continue;
            }
            let lead = piece.len() - piece.trim_start().len();
            out.push(Statement {
                part: code.part,
                line: index + 1,
                column: line[..from + lead].chars().count() + 1,
                text: text.trim_end_matches('\r').trim_end().to_string(),
            });
        }
    }
    out
}

/// nanoBench's extension: a statement `|n` (1 <= n <= 15) is an n-byte NOP. The bytes are the
/// recommended multi-byte NOPs (Intel SDM vol. 2, NOP), longer ones with 0x66 prefixes and a
/// CS override, as nanoBench writes them.
pub fn nop_bytes(n: usize) -> Option<Vec<u8>> {
    const BASE: [&[u8]; 9] = [
        &[0x90],
        &[0x66, 0x90],
        &[0x0f, 0x1f, 0x00],
        &[0x0f, 0x1f, 0x40, 0x00],
        &[0x0f, 0x1f, 0x44, 0x00, 0x00],
        &[0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00],
        &[0x0f, 0x1f, 0x80, 0x00, 0x00, 0x00, 0x00],
        &[0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00],
        &[0x66, 0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00],
    ];
    match n {
        1..=9 => Some(BASE[n - 1].to_vec()),
        10..=15 => {
            let mut bytes = vec![0x66; n - 9];
            bytes.push(0x2e);
            bytes.extend_from_slice(BASE[7]);
            Some(bytes)
        }
        _ => None,
    }
}

/// A `|n` statement's length, if the statement is one (`Err` for `|` with a bad length).
pub fn nop_statement(text: &str) -> Option<Result<usize, String>> {
    let rest = text.strip_prefix('|')?;
    Some(match rest.trim().parse::<usize>() {
        Ok(n) if (1..=15).contains(&n) => Ok(n),
        _ => Err(format!(
            "`{text}`: a NOP statement is `|n` with n from 1 to 15 (an n-byte NOP)"
        )),
    })
}

/// What a benchmark is made of.
#[derive(Clone, Debug)]
pub struct Spec {
    pub name: String,
    pub syntax: Syntax,
    pub code: Code,
    pub init: Option<Code>,
    pub late_init: Option<Code>,
    pub one_time_init: Option<Code>,
    /// Copies of the code in the `1x` body (>= 1).
    pub unroll: u64,
    /// Iterations of the loop around the copies (0: no loop; R15 is then the loop counter).
    pub loop_count: u64,
    /// Bytes past a 64-byte boundary where the first copy starts.
    pub align: u64,
}

impl Spec {
    /// Copies in one measured region (the `1x` body): the harness's `iterations`.
    pub fn iterations(&self) -> u64 {
        self.unroll * self.loop_count.max(1)
    }

    /// Every piece of code given, the code first.
    pub fn codes(&self) -> Vec<Code> {
        self.parts().cloned().collect()
    }

    fn parts(&self) -> impl Iterator<Item = &Code> {
        std::iter::once(&self.code)
            .chain(&self.init)
            .chain(&self.late_init)
            .chain(&self.one_time_init)
    }
}

/// Each scratch area (R14, RDI, RSI, RBP, RSP point into the middle of one).
pub const SCRATCH_BYTES: u64 = 1 << 20;

/// The registers of `state`, in order (its byte offset is 8 * index).
const STATE_REGS: [&str; 16] = [
    "rax", "rbx", "rcx", "rdx", "rsi", "rdi", "rbp", "rsp", "r8", "r9", "r10", "r11", "r12", "r13",
    "r14", "r15",
];

/// The registers given a scratch area, in area order (nanoBench's R14, RDI, RSI, RSP, RBP).
pub const SCRATCH_REGS: [&str; 5] = ["r14", "rdi", "rsi", "rbp", "rsp"];

/// The source and where each line came from.
#[derive(Debug)]
pub struct Source {
    pub text: String,
    /// For each line (index 0 is line 1): the user's statement on it, if any.
    pub origins: Vec<Option<Statement>>,
}

struct Writer {
    text: String,
    origins: Vec<Option<Statement>>,
}

impl Writer {
    fn line(&mut self, line: impl AsRef<str>) {
        self.text.push_str(line.as_ref());
        self.text.push('\n');
        self.origins.push(None);
    }

    fn user(&mut self, line: String, statement: &Statement) {
        self.text.push_str(&line);
        self.text.push('\n');
        self.origins.push(Some(statement.clone()));
    }
}

/// A string as a GNU as `.ascii` operand.
fn ascii(s: &str) -> String {
    let mut out = String::from("\"");
    for b in s.bytes() {
        match b {
            b'"' => out.push_str("\\\""),
            b'\\' => out.push_str("\\\\"),
            0x20..=0x7e => out.push(b as char),
            _ => {
                let _ = write!(out, "\\{b:03o}");
            }
        }
    }
    out.push('"');
    out
}

/// The statements of a part, in the user's syntax; `|n` statements become their bytes.
fn emit_part(w: &mut Writer, spec: &Spec, code: Option<&Code>) {
    let Some(code) = code else { return };
    if spec.syntax == Syntax::Att {
        w.line(".att_syntax prefix");
    }
    for s in statements(code) {
        match nop_statement(&s.text) {
            Some(Ok(n)) => {
                let bytes = nop_bytes(n).expect("1..=15");
                let list: Vec<String> = bytes.iter().map(|b| format!("{b:#04x}")).collect();
                w.user(format!("    .byte {}", list.join(", ")), &s);
            }
            // Left to the assembler, which rejects it at this line; `check_nops` says why first.
            Some(Err(_)) | None => w.user(format!("    {}", s.text), &s),
        }
    }
    if spec.syntax == Syntax::Att {
        w.line(".intel_syntax noprefix");
    }
}

/// The `|n` statements with a bad length, as (statement, message).
pub fn bad_nops(spec: &Spec) -> Vec<(Statement, String)> {
    spec.parts()
        .flat_map(statements)
        .filter_map(|s| match nop_statement(&s.text) {
            Some(Err(message)) => Some((s, message)),
            _ => None,
        })
        .collect()
}

/// The whole source; `unroll` overrides the spec's (the quick check assembles one copy).
pub fn generate(spec: &Spec, report: &str, unroll: Option<u64>) -> Source {
    let unroll = unroll.unwrap_or(spec.unroll);
    let mut w = Writer {
        text: String::new(),
        origins: Vec::new(),
    };
    w.line("# Generated by `baremark asm` (docs/asm.md): the user's code in the functions the");
    w.line("# runner (payloads/asm) calls. Lines with the user's statements are marked.");
    w.line(".intel_syntax noprefix");
    w.line("");
    w.line(".section .bss.baremark_asm, \"aw\", @nobits");
    w.line(".p2align 12");
    w.line(format!(
        "baremark_asm_scratch: .skip {}",
        SCRATCH_BYTES * SCRATCH_REGS.len() as u64
    ));
    w.line(".p2align 3");
    w.line("baremark_asm_saved: .skip 7 * 8   # rbx, rbp, r12-r15, rsp of the caller");
    w.line("baremark_asm_state: .skip 16 * 8  # the registers --init left (rax ... r15)");
    w.line("");
    w.line(".section .rodata.baremark_asm, \"a\", @progbits");
    w.line(".p2align 3");
    w.line(".global baremark_asm_params");
    w.line("baremark_asm_params:  # payloads/asm Params, version 1");
    w.line(format!(
        "    .quad 1, {}, .Lbm_name, .Lbm_name_end - .Lbm_name, .Lbm_report, .Lbm_report_end - .Lbm_report",
        unroll * spec.loop_count.max(1)
    ));
    w.line(format!(".Lbm_name: .ascii {}", ascii(&spec.name)));
    w.line(".Lbm_name_end:");
    w.line(format!(".Lbm_report: .ascii {}", ascii(report)));
    w.line(".Lbm_report_end:");
    w.line("");
    w.line(".section .text.baremark_asm, \"ax\", @progbits");
    w.line(".macro BM_SAVE");
    for (i, r) in ["rbx", "rbp", "r12", "r13", "r14", "r15", "rsp"]
        .iter()
        .enumerate()
    {
        w.line(format!(
            "    mov qword ptr [rip + baremark_asm_saved + {}], {r}",
            8 * i
        ));
    }
    w.line(".endm");
    w.line(".macro BM_RETURN");
    w.line("    mov rsp, qword ptr [rip + baremark_asm_saved + 48]");
    for (i, r) in ["rbx", "rbp", "r12", "r13", "r14", "r15"]
        .iter()
        .enumerate()
    {
        w.line(format!(
            "    mov {r}, qword ptr [rip + baremark_asm_saved + {}]",
            8 * i
        ));
    }
    w.line("    cld  # the C ABI wants DF clear; the user's code may have set it");
    w.line("    ret");
    w.line(".endm");
    w.line(".macro BM_SCRATCH  # nanoBench's start: scratch pointers, the rest 0");
    for r in STATE_REGS {
        if !SCRATCH_REGS.contains(&r) {
            w.line(format!("    xor {r}, {r}"));
        }
    }
    for (i, r) in SCRATCH_REGS.iter().enumerate() {
        w.line(format!(
            "    lea {r}, [rip + baremark_asm_scratch + {}]",
            SCRATCH_BYTES * i as u64 + SCRATCH_BYTES / 2
        ));
    }
    w.line(".endm");
    w.line("");
    w.line(".global baremark_asm_setup");
    w.line(".type baremark_asm_setup, @function");
    w.line("baremark_asm_setup:");
    w.line("    BM_SAVE");
    w.line("    BM_SCRATCH");
    w.line("# --init");
    emit_part(&mut w, spec, spec.init.as_ref());
    for (i, r) in STATE_REGS.iter().enumerate() {
        w.line(format!(
            "    mov qword ptr [rip + baremark_asm_state + {}], {r}",
            8 * i
        ));
    }
    w.line("    BM_RETURN");
    w.line("");
    w.line(".global baremark_asm_one_time_init");
    w.line(".type baremark_asm_one_time_init, @function");
    w.line("baremark_asm_one_time_init:");
    w.line("    BM_SAVE");
    w.line("    BM_SCRATCH");
    w.line("# --one-time-init");
    emit_part(&mut w, spec, spec.one_time_init.as_ref());
    w.line("    BM_RETURN");
    for (suffix, copies) in [("1x", unroll), ("2x", 2 * unroll)] {
        w.line("");
        w.line(".p2align 6");
        w.line(format!(".global baremark_asm_body_{suffix}"));
        w.line(format!(".type baremark_asm_body_{suffix}, @function"));
        w.line(format!("baremark_asm_body_{suffix}:"));
        w.line("    BM_SAVE");
        // RSP last but from memory like the rest: the loads are RIP-relative.
        for (i, r) in STATE_REGS.iter().enumerate() {
            w.line(format!(
                "    mov {r}, qword ptr [rip + baremark_asm_state + {}]",
                8 * i
            ));
        }
        w.line("# --late-init");
        emit_part(&mut w, spec, spec.late_init.as_ref());
        if spec.loop_count > 0 {
            w.line(format!("    mov r15, {}", spec.loop_count));
        }
        // The copies start `align` bytes past a 64-byte boundary; the padding is jumped over.
        w.line(format!("    jmp baremark_asm_code_{suffix}"));
        w.line(".p2align 6, 0xcc");
        if spec.align > 0 {
            w.line(format!(".skip {}, 0xcc", spec.align));
        }
        w.line(format!(".global baremark_asm_code_{suffix}"));
        w.line(format!("baremark_asm_code_{suffix}:"));
        w.line(format!(".rept {copies}"));
        w.line("# CODE");
        emit_part(&mut w, spec, Some(&spec.code));
        w.line(".endr");
        w.line(format!(".global baremark_asm_code_{suffix}_end"));
        w.line(format!("baremark_asm_code_{suffix}_end:"));
        if spec.loop_count > 0 {
            w.line("    dec r15");
            w.line(format!("    jnz baremark_asm_code_{suffix}"));
        }
        w.line("    BM_RETURN");
        w.line(format!(
            ".size baremark_asm_body_{suffix}, . - baremark_asm_body_{suffix}"
        ));
    }
    w.line(".section .note.GNU-stack, \"\", @progbits");
    Source {
        text: w.text,
        origins: w.origins,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(text: &str) -> Code {
        Code {
            part: Part::Code,
            origin: "CODE".into(),
            text: text.into(),
        }
    }

    #[test]
    fn statements_split_at_semicolons_and_newlines_with_their_columns() {
        let s = statements(&code(
            "ADD RAX, RBX;  add rbx, rax\n\n  imul rcx, rcx # c; d\n",
        ));
        let got: Vec<_> = s
            .iter()
            .map(|s| (s.line, s.column, s.text.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                (1, 1, "ADD RAX, RBX"),
                (1, 16, "add rbx, rax"),
                (3, 3, "imul rcx, rcx")
            ]
        );
    }

    #[test]
    fn separators_inside_strings_are_text() {
        let s = statements(&code(".ascii \"a;b#c\"; nop"));
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].text, ".ascii \"a;b#c\"");
        assert_eq!((s[1].column, s[1].text.as_str()), (17, "nop"));
    }

    #[test]
    fn nops_have_their_length_and_nanobench_bytes() {
        for n in 1..=15 {
            assert_eq!(nop_bytes(n).unwrap().len(), n);
        }
        // nanoBench's |15: six 0x66, CS override, the 8-byte NOP.
        assert_eq!(
            nop_bytes(15).unwrap(),
            [
                0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x2e, 0x0f, 0x1f, 0x84, 0, 0, 0, 0, 0
            ]
        );
        assert!(nop_bytes(0).is_none() && nop_bytes(16).is_none());
        assert_eq!(nop_statement("|4"), Some(Ok(4)));
        assert!(matches!(nop_statement("|16"), Some(Err(_))));
        assert_eq!(nop_statement("nop"), None);
    }

    fn spec() -> Spec {
        Spec {
            name: "asm".into(),
            syntax: Syntax::Intel,
            code: code("add rax, rbx; |3"),
            init: None,
            late_init: None,
            one_time_init: None,
            unroll: 100,
            loop_count: 0,
            align: 0,
        }
    }

    #[test]
    fn every_user_line_maps_back_to_its_statement() {
        let src = generate(&spec(), "bench=asm", None);
        let lines: Vec<&str> = src.text.lines().collect();
        assert_eq!(lines.len(), src.origins.len());
        let marked: Vec<(usize, &Statement)> = src
            .origins
            .iter()
            .enumerate()
            .filter_map(|(i, o)| o.as_ref().map(|s| (i, s)))
            .collect();
        // The code once per body (each in a .rept).
        assert_eq!(marked.len(), 4);
        assert_eq!(lines[marked[0].0].trim(), "add rax, rbx");
        assert_eq!(lines[marked[1].0].trim(), ".byte 0x0f, 0x1f, 0x00");
        assert!(src.text.contains(".rept 100\n") && src.text.contains(".rept 200\n"));
        assert!(
            !src.text.contains("dec r15"),
            "no loop counter without --loop"
        );
    }

    #[test]
    fn the_loop_uses_r15_and_iterations_count_every_copy() {
        let mut s = spec();
        s.loop_count = 10;
        s.unroll = 4;
        s.align = 5;
        assert_eq!(s.iterations(), 40);
        let src = generate(&s, "", None);
        assert!(src.text.contains("    mov r15, 10\n"));
        assert!(src.text.contains("    jnz baremark_asm_code_2x\n"));
        assert!(src.text.contains(".skip 5, 0xcc\n"));
        assert!(src.text.contains("    .quad 1, 40, "));
    }

    #[test]
    fn att_code_is_wrapped_in_its_syntax() {
        let mut s = spec();
        s.syntax = Syntax::Att;
        s.code = code("addq %rbx, %rax");
        let src = generate(&s, "", None);
        assert!(
            src.text
                .contains(".att_syntax prefix\n    addq %rbx, %rax\n.intel_syntax noprefix\n")
        );
    }

    #[test]
    fn strings_are_escaped_for_the_assembler() {
        assert_eq!(ascii("a\"b\\c\nd"), "\"a\\\"b\\\\c\\012d\"");
    }
}
