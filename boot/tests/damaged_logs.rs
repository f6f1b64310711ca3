//! `baremark report` on damaged serial logs, made here from the real TCG run
//! (tests/fixtures/suite-tcg.log): a record cut mid-line, bit flips, garbage lines, repeated
//! lines, CRLF and NUL noise, two runs in one file. What is rendered, what the damage summary
//! says, and the exit status (docs/reliability.md, "Damaged serial logs").

mod common;

use common::{baremark, fixture};

/// The exit statuses `report` documents (README, "Reading the report").
const OK: i32 = 0;
const KERNEL_FAILURE: i32 = 1;
const NO_END: i32 = 3;
const DAMAGED: i32 = 5;

fn suite() -> Vec<u8> {
    std::fs::read(fixture("suite-tcg.log")).unwrap()
}

/// The lines of a log, each with its line ending.
fn lines(log: &[u8]) -> Vec<Vec<u8>> {
    log.split_inclusive(|&b| b == b'\n')
        .map(<[u8]>::to_vec)
        .collect()
}

/// Where `needle` first is in `hay`.
fn find(hay: &[u8], needle: &[u8]) -> usize {
    hay.windows(needle.len()).position(|w| w == needle).unwrap()
}

/// The byte offset where line `n` (1-based) begins.
fn offset_of(log: &[u8], n: usize) -> usize {
    lines(log)[..n - 1].iter().map(Vec::len).sum()
}

struct Out {
    code: i32,
    stdout: String,
    stderr: String,
    dir: tempfile::TempDir,
}

impl Out {
    /// The log section: from its first `log`/`DAMAGE`/`note` line to the end.
    fn summary(&self) -> String {
        let start = self
            .stdout
            .lines()
            .position(|l| l.starts_with("log ") || l.starts_with("note "))
            .unwrap_or_else(|| panic!("no log section in:\n{}", self.stdout));
        self.stdout
            .lines()
            .skip(start)
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// `baremark report LOG ARGS...` on `bytes`.
fn report(bytes: &[u8], args: &[&str]) -> Out {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("serial.log");
    std::fs::write(&log, bytes).unwrap();
    let out = baremark()
        .arg("report")
        .arg(&log)
        .args(args)
        .current_dir(dir.path())
        .output()
        .unwrap();
    let out = Out {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        dir,
    };
    assert!(
        !out.stderr.contains("panicked"),
        "{}\n{}",
        out.stdout,
        out.stderr
    );
    out
}

fn has(text: &str, needle: &str) {
    assert!(text.contains(needle), "no `{needle}` in:\n{text}");
}

#[test]
fn the_intact_log_has_no_log_section_and_exits_0() {
    let out = report(&suite(), &[]);
    assert_eq!(out.code, OK, "{}", out.stderr);
    assert!(!out.stdout.contains("DAMAGE"), "{}", out.stdout);
    assert!(!out.stdout.contains("incomplete"), "{}", out.stdout);
    assert!(!out.stdout.contains("\nlog "), "{}", out.stdout);
}

#[test]
fn a_record_cut_mid_line_is_lost_its_benchmark_marked_the_rest_rendered() {
    // Line 49 is add-latency's tsc result: keep 150 of its bytes.
    let log = suite();
    let mut l = lines(&log);
    l[48] = [&l[48][..150], b"\r\n"].concat();
    let out = report(&l.concat(), &[]);
    assert_eq!(out.code, DAMAGED, "{}", out.stderr);
    // Everything around it is rendered: the report lines and the other rows.
    has(&out.stdout, "task     add-latency (#1) | entry 0x401bd0");
    has(&out.stdout, "end      ok");
    assert!(
        out.stdout
            .lines()
            .any(|l| l.starts_with(" add-throughput ") && l.ends_with(" 9.016 ±12.88%")),
        "{}",
        out.stdout
    );
    // The row whose tsc result was lost says so instead of showing nothing.
    has(&out.stdout, " add-latency (incomplete)");
    has(
        &out.stdout,
        "   incomplete: add-latency: a `result` record is cut (line 49); 1 of 5 `result` records missing (the figures shown are those that survived)",
    );
    let summary = out.summary();
    has(
        &summary,
        "serial.log is damaged (502 lines, 93190 bytes): cut 1, missing 2",
    );
    has(
        &summary,
        &format!(
            "DAMAGE   [cut] line 49 (byte {}): a `result` record of add-latency: cut short: its line ends after 150 bytes, before the record closes; skipped",
            offset_of(&log, 49)
        ),
    );
    has(
        &summary,
        "DAMAGE   [missing] line 48: add-latency: 1 of 5 `result` records missing (its bench_start plans tsc and 4 events)",
    );
    has(
        &summary,
        "DAMAGE   [missing] line 498: the summary counts 80 `result` records, the log holds 79: 1 lost",
    );
    has(
        &summary,
        "incomplete benchmarks (marked in the table): add-latency",
    );
    has(
        &out.stderr,
        "the log is damaged: what was intact is rendered, the damage is listed above (exit status 5)",
    );
}

#[test]
fn the_json_marks_the_incomplete_benchmark() {
    let mut l = lines(&suite());
    l[48] = [&l[48][..150], b"\r\n"].concat();
    let out = report(&l.concat(), &["--json", "r.json"]);
    assert_eq!(out.code, DAMAGED);
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.dir.path().join("r.json")).unwrap()).unwrap();
    let benches = json["benchmarks"].as_array().unwrap();
    let add = benches
        .iter()
        .find(|b| b["bench"] == "add-latency")
        .unwrap();
    assert_eq!(add["results"].as_array().unwrap().len(), 4);
    assert!(
        add["incomplete"][0]
            .as_str()
            .unwrap()
            .contains("`result` record is cut (line 49)"),
        "{add}"
    );
    let intact = benches.iter().find(|b| b["bench"] == "empty").unwrap();
    assert!(intact.get("incomplete").is_none(), "{intact}");
}

#[test]
fn a_log_cut_inside_its_last_record_did_not_end() {
    let log = suite();
    let cut = offset_of(&log, 478) + 100;
    let out = report(&log[..cut], &[]);
    assert_eq!(out.code, NO_END, "{}", out.stderr);
    has(&out.stdout, "task     read-fast: exit 0");
    has(
        &out.summary(),
        &format!(
            "serial.log ends inside a record (478 lines, {cut} bytes): truncated 1\nDAMAGE   [truncated] line 478 (byte {}): a `result` record of read-rdpmc: the log ends inside it after 100 bytes: the capture (or the machine) stopped; skipped",
            cut - 100
        ),
    );
    has(&out.stderr, "the log has no end record");
}

#[test]
fn bit_flips_are_found_where_they_break_json_or_schema() {
    let log = suite();
    let mut bytes = log.clone();
    // Line 21 (empty's region samples): the `v` of `event` -> `~` (bit 3).
    let at21 = offset_of(&log, 21) + find(&lines(&log)[20], b"\"event\"") + 2;
    bytes[at21] ^= 0x08;
    // Line 49: the quote closing `"result"` (bit 0): not JSON any more.
    let at49 = offset_of(&log, 49) + 15;
    bytes[at49] ^= 0x01;
    // Line 502: the end's `ok` -> `nk`.
    let at502 = offset_of(&log, 502) + find(&lines(&log)[501], b"\"ok\"") + 1;
    bytes[at502] ^= 0x01;
    let out = report(&bytes, &[]);
    assert_eq!(out.code, DAMAGED, "{}", out.stderr);
    let summary = out.summary();
    has(
        &summary,
        &format!(
            "DAMAGE   [corrupt] line 49 (byte {}): a record of add-latency: not valid JSON at column 19: expected `,` or `}}`; skipped",
            at49 - 15
        ),
    );
    has(
        &summary,
        "a `samples` record of empty: field `e~ent` is not in the schema and `event` is missing (a flipped bit?); set aside",
    );
    has(
        &summary,
        "an `end` record: `status` is `nk`, one character off `ok` (a flipped bit?); set aside; how the run ended is unknown",
    );
    has(
        &summary,
        "DAMAGE   [missing] line 19: empty: no `samples` of tsc/region",
    );
    // The doubtful end is not taken: the run has no end it can trust.
    assert!(!out.stdout.contains("end      "), "{}", out.stdout);
}

#[test]
fn garbage_lines_are_skipped_and_named() {
    let mut l = lines(&suite());
    l.insert(30, b"\xff\xfe\x13\x00line noise\r\n".to_vec());
    l.insert(200, b"~~\x07\x07~~\r\n".to_vec());
    let log = l.concat();
    let out = report(&log, &[]);
    assert_eq!(out.code, DAMAGED, "{}", out.stderr);
    has(
        &out.stdout,
        "16 benchmarks | 80 results, 64 not supported | 0 errors",
    );
    let summary = out.summary();
    has(&summary, "garbage 2");
    has(
        &summary,
        &format!(
            "DAMAGE   [garbage] line 31 (byte {}): 13 bytes the kernel never writes (not UTF-8 at column 1): skipped",
            offset_of(&log, 31)
        ),
    );
    has(
        &summary,
        &format!(
            "DAMAGE   [garbage] line 201 (byte {}): 6 bytes the kernel never writes (control character 0x07 at column 3): skipped",
            offset_of(&log, 201)
        ),
    );
    has(&summary, "note     ");
    has(&summary, "removed 1 NUL byte");
}

#[test]
fn repeated_lines_are_dropped_and_nothing_is_lost() {
    let mut l = lines(&suite());
    // A result twice in a row, and the whole add-latency block again after it.
    l.insert(20, l[19].clone());
    let block = l[48..57].to_vec();
    for (i, b) in block.into_iter().enumerate() {
        l.insert(70 + i, b);
    }
    let out = report(&l.concat(), &[]);
    assert_eq!(out.code, OK, "{}", out.stderr);
    has(
        &out.stdout,
        "16 benchmarks | 80 results, 64 not supported | 0 errors",
    );
    assert!(!out.stdout.contains("DAMAGE"), "{}", out.stdout);
    has(&out.summary(), "note     ");
    has(
        &out.summary(),
        "cleaned up, nothing lost: dropped 10 repeated records at lines 21, 71-79 (line 21 repeats line 20)",
    );
}

#[test]
fn crlf_and_nul_noise_is_a_note_not_a_loss() {
    let mut l = lines(&suite());
    for line in &mut l {
        if line.ends_with(b"\r\n") {
            line.insert(line.len() - 1, b'\r');
        }
    }
    l[2].insert(10, 0);
    // A line break inside the first result: the record is joined again.
    let rest = l[19].split_off(70);
    l[19].extend_from_slice(b"\r\n");
    l.insert(20, rest);
    let out = report(&l.concat(), &[]);
    assert_eq!(out.code, OK, "{}", out.stderr);
    assert!(!out.stdout.contains("DAMAGE"), "{}", out.stdout);
    has(
        &out.stdout,
        "16 benchmarks | 80 results, 64 not supported | 0 errors",
    );
    has(
        &out.summary(),
        "cleaned up, nothing lost: removed 1 NUL byte; removed 502 stray carriage returns; joined 1 record split over lines 20-21",
    );
}

#[test]
fn two_runs_in_one_file_are_each_rendered_and_the_files_hold_the_last() {
    let mut both = suite();
    both.extend(std::fs::read(fixture("bench-diff.log")).unwrap());
    let out = report(&both, &["--json", "r.json"]);
    assert_eq!(out.code, OK, "{}", out.stderr);
    has(&out.stdout, "=== run 1 of 2 (lines 1-502) ===");
    has(&out.stdout, "=== run 2 of 2 (lines 503-516) ===");
    has(
        &out.stdout,
        "16 benchmarks | 80 results, 64 not supported | 0 errors",
    );
    has(
        &out.stdout,
        "1 benchmark | 2 results, 1 not supported | 0 errors",
    );
    has(
        &out.summary(),
        "serial.log: 516 lines, 2 runs\n         run 1 (lines 1-502): ended ok\n         run 2 (lines 503-516): ended ok",
    );
    has(
        &out.stderr,
        "the results written are run 2's (lines 503-516), the last of the 2 runs in the log",
    );
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.dir.path().join("r.json")).unwrap()).unwrap();
    assert_eq!(json["benchmarks"].as_array().unwrap().len(), 1);
    assert_eq!(json["benchmarks"][0]["bench"], "seq-read");
}

#[test]
fn the_same_log_twice_is_rendered_once() {
    let log = suite();
    let out = report(&[log.clone(), log].concat(), &[]);
    assert_eq!(out.code, OK, "{}", out.stderr);
    assert_eq!(out.stdout.matches("task     empty (#0)").count(), 1);
    has(
        &out.summary(),
        "run 2 (lines 503-1004): ended ok; an exact copy of run 1, not shown again",
    );
}

#[test]
fn a_failed_run_before_a_good_one_is_a_kernel_failure() {
    let failed = String::from_utf8(suite())
        .unwrap()
        .replace(
            "\"status\":\"ok\",\"reason\":null",
            "\"status\":\"fail\",\"reason\":\"kernel panic\"",
        )
        .into_bytes();
    let out = report(&[failed, suite()].concat(), &[]);
    assert_eq!(out.code, KERNEL_FAILURE, "{}", out.stderr);
    has(&out.summary(), "run 1 (lines 1-502): ended fail");
}

#[test]
fn a_log_of_nothing_but_damage_is_damaged_not_empty() {
    // Two record lines, both cut by a lost tail, in a run whose boot survived.
    let log = suite();
    let l = lines(&log);
    let bytes = [
        l[0].clone(),
        [&l[2][..40], b"\r\n"].concat(),
        [&l[4][..40], b"\r\n"].concat(),
    ]
    .concat();
    let out = report(&bytes, &[]);
    assert_eq!(out.code, DAMAGED, "{}", out.stderr);
    has(&out.summary(), "cut 2");
    // Only the cut records: no run survived, and asking for files says so.
    let only_cut = [&l[2][..40], b"\r\n", &l[4][..40], b"\r\n"].concat();
    let out = report(&only_cut, &["--json", "r.json"]);
    assert_eq!(out.code, DAMAGED, "{}", out.stderr);
    has(
        &out.summary(),
        "DAMAGE   [cut] line 1 (byte 0): a `cpu` record",
    );
    has(
        &out.stderr,
        "no record of a run survived in the log: no results written",
    );
    assert!(!out.dir.path().join("r.json").exists());
    // Nothing at all a baremark log has: a setup error, as before.
    let out = report(b"just some\nserial noise\n", &[]);
    assert_eq!(out.code, 2);
    has(&out.stderr, "holds no baremark records");
}

#[test]
fn diff_reads_a_log_as_report_does_the_last_run_and_a_note() {
    let dir = tempfile::tempdir().unwrap();
    let both = dir.path().join("both.log");
    let mut bytes = suite();
    bytes.extend(std::fs::read(fixture("bench-diff.log")).unwrap());
    std::fs::write(&both, bytes).unwrap();
    let out = baremark()
        .arg("diff")
        .arg(fixture("bench-diff.log"))
        .arg(&both)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(OK), "{stdout}{stderr}");
    has(
        &stderr,
        "the log holds 2 runs: compared is the last (lines 503-516)",
    );
    // Only the last run's benchmark is compared: no `only in B` rows from the first.
    assert!(!stdout.contains("add-latency"), "{stdout}");
    has(&stdout, "seq-read");
}
