//! The damaged-log reader on variants of the real TCG run (tests/fixtures/suite-tcg.log):
//! one test per kind of damage, truncation at every line and inside every line, and property
//! tests that mutate the log at random.

use proptest::prelude::*;
use serde_json::Value;

use super::lines::find;
use super::scan as read;
use super::schema::doubt;
use super::*;
use crate::records::{Line as LogLine, parse_line};

const SUITE: &[u8] = include_bytes!("../../tests/fixtures/suite-tcg.log");
const BENCH_DIFF: &[u8] = include_bytes!("../../tests/fixtures/bench-diff.log");
const FIXTURES: &[(&str, &[u8])] = &[
    ("suite-tcg.log", SUITE),
    (
        "bench-empty.log",
        include_bytes!("../../tests/fixtures/bench-empty.log"),
    ),
    ("bench-diff.log", BENCH_DIFF),
    (
        "nanobench-emulated.log",
        include_bytes!("../../tests/fixtures/nanobench-emulated.log"),
    ),
];

/// The lines of a log, each with its line ending.
fn lines(log: &[u8]) -> Vec<Vec<u8>> {
    log.split_inclusive(|&b| b == b'\n')
        .map(<[u8]>::to_vec)
        .collect()
}

/// The log with line `n` (1-based) replaced by `f` of it (which keeps or drops the ending).
fn edit(log: &[u8], n: usize, f: impl FnOnce(&[u8]) -> Vec<u8>) -> Vec<u8> {
    let mut l = lines(log);
    l[n - 1] = f(&l[n - 1]);
    l.concat()
}

/// The records of an intact log, as the old line-by-line parser reads them.
fn records_of(log: &[u8]) -> Vec<Record> {
    crate::records::records_of_log(&String::from_utf8_lossy(log))
}

fn kinds(scan: &Scan) -> Vec<(Kind, usize)> {
    scan.damage.iter().map(|d| (d.kind, d.lines.0)).collect()
}

/// The suite's records without the ones on the given lines (1-based).
fn suite_without(skip: &[usize]) -> Vec<Record> {
    lines(SUITE)
        .iter()
        .enumerate()
        .filter(|(i, _)| !skip.contains(&(i + 1)))
        .filter_map(|(_, l)| match parse_line(&String::from_utf8_lossy(l)) {
            LogLine::Record(r) => Some(r),
            LogLine::Text(_) => None,
        })
        .collect()
}

#[test]
fn intact_fixtures_have_no_damage() {
    for (name, bytes) in FIXTURES {
        let scan = read(bytes);
        assert!(scan.damage.is_empty(), "{name}: {:#?}", scan.damage);
        assert_eq!(scan.repairs, Repairs::default(), "{name}");
        assert_eq!(scan.runs.len(), 1, "{name}");
        assert_eq!(scan.verdict(), Verdict::Ok, "{name}");
        assert!(render(&scan, name).is_empty(), "{name}");
        assert_eq!(scan.runs[0].records, records_of(bytes), "{name}");
        assert!(scan.runs[0].incomplete.is_empty(), "{name}");
    }
}

#[test]
fn a_record_cut_mid_line_is_named_and_its_benchmark_marked() {
    // Line 23 is the `cycles` result of `empty`; keep 120 bytes of it and its line ending.
    let log = edit(SUITE, 23, |l| [&l[..120], b"\r\n"].concat());
    let scan = read(&log);
    assert_eq!(
        kinds(&scan),
        [(Kind::Missing, 19), (Kind::Cut, 23), (Kind::Missing, 498)]
    );
    let cut = &scan.damage[1];
    assert_eq!(cut.record.as_deref(), Some("result"));
    assert_eq!(cut.bench, Some(("empty".into(), "empty".into())));
    assert_eq!(cut.byte, Some(lines(SUITE)[..22].concat().len()));
    assert!(
        cut.detail.contains("its line ends after 120 bytes"),
        "{}",
        cut.detail
    );
    assert!(
        scan.damage[0]
            .detail
            .contains("1 of 5 `result` records missing")
    );
    assert!(
        scan.damage[2]
            .detail
            .contains("counts 80 `result` records, the log holds 79")
    );
    assert_eq!(scan.runs[0].records, suite_without(&[23]));
    assert_eq!(scan.runs[0].incomplete.len(), 1);
    assert_eq!(scan.runs[0].incomplete[0].0, "empty");
    assert_eq!(scan.verdict(), Verdict::Damaged);
}

#[test]
fn a_record_cut_by_the_next_ones_start_loses_only_itself() {
    // Line 52's tail and line ending are lost: line 53 follows its first 90 bytes.
    let mut l = lines(SUITE);
    l[51].truncate(90);
    let log = l.concat();
    let scan = read(&log);
    assert_eq!(
        kinds(&scan),
        [(Kind::Missing, 48), (Kind::Cut, 52), (Kind::Missing, 497)]
    );
    assert!(
        scan.damage[1]
            .detail
            .contains("by the start of another record")
    );
    assert_eq!(scan.runs[0].records, suite_without(&[52]));
}

#[test]
fn truncation_at_every_line_and_inside_every_line_is_a_missing_end_not_damage() {
    let all = lines(SUITE);
    let mut offset = 0;
    for (i, line) in all.iter().enumerate() {
        // At the line boundary: everything before is intact.
        let scan = read(&SUITE[..offset]);
        assert!(
            scan.damage.iter().all(|d| d.kind == Kind::Truncated),
            "cut before line {}: {:#?}",
            i + 1,
            scan.damage
        );
        assert_eq!(scan.records().count(), records_of(&SUITE[..offset]).len());
        assert_eq!(scan.verdict(), Verdict::NoEnd, "cut before line {}", i + 1);
        // Inside the line: it is lost, and said to be where the log stops.
        let mid = offset + line.len() / 2;
        let scan = read(&SUITE[..mid]);
        assert_eq!(scan.verdict(), Verdict::NoEnd, "cut inside line {}", i + 1);
        assert_eq!(scan.records().count(), records_of(&SUITE[..offset]).len());
        if line.starts_with(b"{") {
            assert!(
                scan.damage
                    .iter()
                    .any(|d| d.kind == Kind::Truncated && d.lines.0 == i + 1),
                "cut inside line {}: {:#?}",
                i + 1,
                scan.damage
            );
        }
        assert!(!render(&scan, "x").is_empty() || !line.starts_with(b"{"));
        offset += line.len();
    }
    assert_eq!(read(SUITE).verdict(), Verdict::Ok);
}

#[test]
fn bit_flips_that_break_the_json_or_the_schema_are_found() {
    // The quote after `"type":"result` (line 49): the JSON breaks.
    let quote = |l: &[u8]| {
        let mut l = l.to_vec();
        l[15] ^= 0x01;
        l
    };
    let scan = read(&edit(SUITE, 49, quote));
    let d = scan.damage.iter().find(|d| d.lines.0 == 49).unwrap();
    assert_eq!(d.kind, Kind::Corrupt);
    assert_eq!(d.bench, Some(("add-latency".into(), "add-latency".into())));
    // A field name (line 21, `event` -> `e~ent`): a doubtful record, set aside.
    let name = |l: &[u8]| {
        let mut l = l.to_vec();
        let at = find(&l, b"\"event\"", 0).unwrap() + 2;
        l[at] ^= 0x08;
        l
    };
    let scan = read(&edit(SUITE, 21, name));
    let d = scan.damage.iter().find(|d| d.lines.0 == 21).unwrap();
    assert_eq!(d.kind, Kind::Doubtful);
    assert!(
        d.detail
            .contains("field `e~ent` is not in the schema and `event` is missing")
    );
    assert_eq!(scan.runs[0].records, suite_without(&[21]));
    // The end's status `ok` -> `nk`: the verdict cannot be trusted, so it is not taken.
    let status = |l: &[u8]| {
        let mut l = l.to_vec();
        let at = find(&l, b"\"ok\"", 0).unwrap() + 1;
        l[at] ^= 0x01;
        l
    };
    let scan = read(&edit(SUITE, 502, status));
    assert_eq!(kinds(&scan), [(Kind::Doubtful, 502)]);
    assert!(
        scan.damage[0]
            .detail
            .contains("`status` is `nk`, one character off `ok`")
    );
    assert_eq!(scan.verdict(), Verdict::Damaged);
    // A record type (`result` -> `resulu`).
    let kind = |l: &[u8]| {
        let mut l = l.to_vec();
        l[14] ^= 0x01;
        l
    };
    let scan = read(&edit(SUITE, 20, kind));
    let d = scan.damage.iter().find(|d| d.lines.0 == 20).unwrap();
    assert_eq!(d.kind, Kind::Doubtful);
    assert!(
        d.detail
            .contains("`resulu` is unknown and one character off `result`")
    );
    // A high bit in a string: not UTF-8, so not valid JSON.
    let high = |l: &[u8]| {
        let mut l = l.to_vec();
        let at = find(&l, b"QEMU", 0).unwrap();
        l[at] ^= 0x80;
        l
    };
    let scan = read(&edit(SUITE, 3, high));
    assert_eq!(kinds(&scan), [(Kind::Corrupt, 3)]);
}

#[test]
fn a_flipped_version_is_doubtful_in_a_record_and_in_the_boot_record() {
    let v = |l: &[u8]| {
        let mut l = l.to_vec();
        let at = find(&l, b"\"v\":1", 0).unwrap() + 4;
        l[at] ^= 0x02;
        l
    };
    let scan = read(&edit(SUITE, 20, v));
    assert_eq!(kinds(&scan)[1], (Kind::Doubtful, 20));
    assert!(
        scan.damage[1]
            .detail
            .contains("schema version `3` differs from the run's v1")
    );
    let scan = read(&edit(SUITE, 1, v));
    assert_eq!(kinds(&scan), [(Kind::Doubtful, 1)]);
    assert_eq!(scan.runs[0].records.len(), records_of(SUITE).len());
}

#[test]
fn a_flipped_digit_is_not_seen_records_carry_no_checksum() {
    // `"hz":2445355810` -> `"hz":2445355811`: valid, of the right type, and wrong. Nothing
    // in the log tells; docs/reliability.md says so.
    let digit = |l: &[u8]| {
        let mut l = l.to_vec();
        let at = find(&l, b"2445355810", 0).unwrap() + 9;
        l[at] ^= 0x01;
        l
    };
    let scan = read(&edit(SUITE, 6, digit));
    assert!(scan.damage.is_empty());
    assert_eq!(scan.runs[0].records[3].u64("hz"), Some(2_445_355_811));
}

#[test]
fn garbage_inside_a_run_is_named_and_firmware_noise_before_it_is_not() {
    let mut l = lines(SUITE);
    l.insert(30, b"\xff\xfe\x13line noise\r\n".to_vec());
    l.insert(100, b"xx\x07yy\r\n".to_vec());
    l.insert(
        0,
        b"\x1b[2J\x1b[01;01HBdsDxe: loading Boot0001\r\n".to_vec(),
    );
    let scan = read(&l.concat());
    assert_eq!(kinds(&scan), [(Kind::Garbage, 32), (Kind::Garbage, 102)]);
    assert!(scan.damage[0].detail.contains("not UTF-8 at column 1"));
    assert!(
        scan.damage[1]
            .detail
            .contains("control character 0x07 at column 3")
    );
    assert_eq!(scan.runs[0].records, records_of(SUITE));
    assert_eq!(scan.verdict(), Verdict::Damaged);
}

#[test]
fn past_five_places_of_a_kind_the_rest_are_listed_by_line() {
    let mut l = lines(SUITE);
    for at in [100, 90, 80, 70, 60, 50, 40, 30] {
        l.insert(at, b"\x01\r\n".to_vec());
    }
    let scan = read(&l.concat());
    assert_eq!(scan.damage.len(), 8);
    let text = render(&scan, "x");
    assert_eq!(
        text.matches("DAMAGE   [garbage] line ").count(),
        5,
        "{text}"
    );
    assert!(
        text.contains("DAMAGE   [garbage] 3 more at lines 86, 97, 108\n"),
        "{text}"
    );
}

#[test]
fn a_second_different_result_for_one_event_is_a_conflict_and_the_first_is_kept() {
    let mut l = lines(SUITE);
    let other = String::from_utf8_lossy(&l[19]).replace("\"median\":98", "\"median\":99");
    l.insert(20, other.into_bytes());
    let scan = read(&l.concat());
    assert_eq!(kinds(&scan), [(Kind::Conflict, 21)]);
    assert!(
        scan.damage[0]
            .detail
            .contains("a second `result` for tsc in this benchmark, different from line 20's")
    );
    assert_eq!(scan.runs[0].records, records_of(SUITE));
    assert_eq!(scan.runs[0].incomplete[0].0, "empty");
}

#[test]
fn repeated_lines_and_blocks_are_dropped_and_nothing_is_lost() {
    let mut l = lines(SUITE);
    // A line twice in a row, and a benchmark's block (lines 48-56) again after it.
    l.insert(21, l[20].clone());
    let block: Vec<Vec<u8>> = l[48..57].to_vec();
    for (i, b) in block.into_iter().enumerate() {
        l.insert(60 + i, b);
    }
    let scan = read(&l.concat());
    assert!(scan.damage.is_empty(), "{:#?}", scan.damage);
    assert_eq!(scan.runs[0].records, records_of(SUITE));
    assert_eq!(scan.repairs.duplicates.len(), 10);
    assert_eq!(scan.repairs.duplicates[0], (22, 21));
    assert_eq!(scan.verdict(), Verdict::Ok);
    assert!(render(&scan, "x").contains("dropped 10 repeated records at lines 22, 61-69"));
}

#[test]
fn crlf_and_nul_noise_is_counted_not_lost() {
    let mut l = lines(SUITE);
    // Doubled carriage returns, NULs inside records, a record split by a line break.
    for line in &mut l {
        if line.ends_with(b"\r\n") {
            line.insert(line.len() - 1, b'\r');
        }
    }
    l[5].insert(3, 0);
    l[5].insert(30, 0);
    let split = l[19].split_off(70);
    l[19].extend_from_slice(b"\r\n");
    l.insert(20, split);
    let scan = read(&l.concat());
    assert!(scan.damage.is_empty(), "{:#?}", scan.damage);
    assert_eq!(scan.runs[0].records, records_of(SUITE));
    assert_eq!(scan.repairs.nul_bytes, 2);
    assert_eq!(scan.repairs.stray_cr, 502);
    assert_eq!(scan.repairs.rejoined, [(20, 21)]);
    assert_eq!(scan.verdict(), Verdict::Ok);
    let note = render(&scan, "x");
    assert!(
        note.contains("removed 2 NUL bytes; removed 502 stray carriage returns; joined 1 record split over lines 20-21"),
        "{note}"
    );
}

#[test]
fn records_glued_by_a_lost_line_break_are_separated() {
    let mut l = lines(SUITE);
    let n = l[20].len() - 2;
    l[20].truncate(n);
    let scan = read(&l.concat());
    assert!(scan.damage.is_empty(), "{:#?}", scan.damage);
    assert_eq!(scan.runs[0].records, records_of(SUITE));
    assert_eq!(scan.repairs.glued, [21]);
}

#[test]
fn two_runs_are_told_apart_and_a_log_twice_is_one_run() {
    let both = [SUITE, BENCH_DIFF].concat();
    let scan = read(&both);
    assert_eq!(scan.runs.len(), 2);
    assert_eq!(scan.runs[0].records, records_of(SUITE));
    assert_eq!(scan.runs[1].records, records_of(BENCH_DIFF));
    assert_eq!(scan.runs[1].lines, (503, 516));
    assert!(scan.damage.is_empty());
    assert_eq!(scan.verdict(), Verdict::Ok);
    let text = render(&scan, "x");
    assert!(text.contains("run 2 (lines 503-516): ended ok"), "{text}");

    let twice = read(&[SUITE, SUITE].concat());
    assert_eq!(twice.runs.len(), 2);
    assert_eq!(twice.runs[1].copy_of, Some(1));
    assert!(render(&twice, "x").contains("an exact copy of run 1, not shown again"));

    // The second boot record lost: the second `cpu` begins a run of its own.
    let mut l = lines(BENCH_DIFF);
    l.remove(0);
    let scan = read(&[SUITE, &l.concat()].concat());
    assert_eq!(scan.runs.len(), 2);
    assert!(!scan.runs[1].booted);
    assert_eq!(kinds(&scan), [(Kind::Missing, 503)]);
    assert_eq!(scan.verdict(), Verdict::Damaged);
}

#[test]
fn a_run_whose_end_says_fail_is_a_kernel_failure_whatever_else() {
    let fail = |l: &[u8]| {
        String::from_utf8_lossy(l)
            .replace(
                "\"status\":\"ok\",\"reason\":null",
                "\"status\":\"fail\",\"reason\":\"x\"",
            )
            .into_bytes()
    };
    let log = edit(&edit(SUITE, 502, fail), 23, |l| {
        [&l[..50], b"\r\n"].concat()
    });
    assert_eq!(read(&log).verdict(), Verdict::KernelFailure);
}

#[test]
fn a_log_with_only_a_cut_record_did_not_end() {
    let scan = read(&SUITE[..300]);
    assert!(scan.runs.is_empty());
    assert_eq!(kinds(&scan), [(Kind::Truncated, 1)]);
    assert_eq!(scan.verdict(), Verdict::NoEnd);
}

#[test]
fn profile_records_with_a_field_of_the_wrong_type_are_doubtful() {
    let rec = |l: &str| match parse_line(l) {
        LogLine::Record(r) => r,
        _ => panic!("{l}"),
    };
    let good = rec(
        r#"{"type":"profile_samples","v":1,"task":"t","task_index":0,"slot":0,"event":"0x100c0","period":5,"rips":[1,2]}"#,
    );
    assert_eq!(doubt(&good, None), None);
    let bad = rec(
        r#"{"type":"profile_samples","v":1,"task":"t","task_index":0,"slot":0,"event":"0x100c0","period":5,"rips":[1,"x"]}"#,
    );
    assert!(
        doubt(&bad, None)
            .unwrap()
            .contains("`rips` is not a list of addresses")
    );
    let summary = rec(
        r#"{"type":"profile_summary","v":1,"task":"t","task_index":0,"slot":0,"event":"0x100c0","period":5,"samples":2,"lost":"0"}"#,
    );
    assert!(
        doubt(&summary, None)
            .unwrap()
            .contains("`lost` is \"0\", not a count")
    );
}

// ---------------------------------------------------------------------------------------------
// Property tests: random damage to the real log.

#[derive(Clone, Debug)]
enum Mutation {
    /// Flip bit `.1` of the byte at `.0` (modulo the length).
    Flip(usize, u8),
    /// Cut the log at `.0`.
    Truncate(usize),
    /// Insert bytes (no line feed) at `.0`.
    Garbage(usize, Vec<u8>),
    /// Insert a line of bytes before line `.0`.
    GarbageLine(usize, Vec<u8>),
    /// Copy line `.0` before line `.1`.
    Duplicate(usize, usize),
    /// Insert `\r\n` at `.0`.
    Crlf(usize),
    /// Insert `.1` NUL bytes at `.0`.
    Nul(usize, usize),
    /// Insert a carriage return at `.0`.
    Cr(usize),
    /// Remove the line feed ending line `.0`.
    JoinLines(usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let garbage =
        proptest::collection::vec(any::<u8>().prop_filter("no LF", |b| *b != b'\n'), 1..40);
    prop_oneof![
        4 => (any::<usize>(), 0u8..8).prop_map(|(a, b)| Mutation::Flip(a, b)),
        1 => any::<usize>().prop_map(Mutation::Truncate),
        2 => (any::<usize>(), garbage.clone()).prop_map(|(a, g)| Mutation::Garbage(a, g)),
        2 => (any::<usize>(), garbage).prop_map(|(a, g)| Mutation::GarbageLine(a, g)),
        2 => (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Mutation::Duplicate(a, b)),
        2 => any::<usize>().prop_map(Mutation::Crlf),
        1 => (any::<usize>(), 1usize..4).prop_map(|(a, n)| Mutation::Nul(a, n)),
        1 => any::<usize>().prop_map(Mutation::Cr),
        1 => any::<usize>().prop_map(Mutation::JoinLines),
    ]
}

/// A mutated log: its bytes, the original line of each byte (`None`: inserted), and which
/// original lines a mutation touched (their bytes, line ending included).
struct Mutated {
    bytes: Vec<u8>,
    origin: Vec<Option<usize>>,
    touched: Vec<bool>,
}

impl Mutated {
    fn new(log: &[u8]) -> Mutated {
        let mut origin = Vec::with_capacity(log.len());
        let mut line = 0;
        for &b in log {
            origin.push(Some(line));
            if b == b'\n' {
                line += 1;
            }
        }
        Mutated {
            bytes: log.to_vec(),
            origin,
            touched: vec![false; line + 1],
        }
    }

    fn touch(&mut self, at: usize) {
        if let Some(Some(l)) = self.origin.get(at) {
            self.touched[*l] = true;
        }
    }

    /// Inserts at `at`: inside a line that touches it, between lines it does not.
    fn insert(&mut self, at: usize, new: &[u8]) {
        let at = at.min(self.bytes.len());
        if at > 0
            && let (Some(Some(a)), Some(Some(b))) = (self.origin.get(at - 1), self.origin.get(at))
            && a == b
        {
            self.touched[*a] = true;
        }
        self.bytes.splice(at..at, new.iter().copied());
        self.origin
            .splice(at..at, std::iter::repeat_n(None, new.len()));
    }

    /// Where each line of the current bytes begins.
    fn line_starts(&self) -> Vec<usize> {
        std::iter::once(0)
            .chain(
                self.bytes
                    .iter()
                    .enumerate()
                    .filter(|(_, b)| **b == b'\n')
                    .map(|(i, _)| i + 1),
            )
            .filter(|&i| i < self.bytes.len())
            .collect()
    }

    fn apply(&mut self, m: &Mutation) {
        let len = self.bytes.len();
        if len == 0 {
            return;
        }
        match m {
            Mutation::Flip(at, bit) => {
                let at = at % len;
                self.bytes[at] ^= 1 << bit;
                self.touch(at);
            }
            Mutation::Truncate(at) => {
                let at = at % (len + 1);
                for i in at..len {
                    self.touch(i);
                }
                self.bytes.truncate(at);
                self.origin.truncate(at);
            }
            Mutation::Garbage(at, g) => self.insert(at % (len + 1), g),
            Mutation::GarbageLine(n, g) => {
                let starts = self.line_starts();
                let at = starts[n % starts.len()];
                self.insert(at, &[g.as_slice(), b"\n"].concat());
            }
            Mutation::Duplicate(a, b) => {
                let starts = self.line_starts();
                let from = starts[a % starts.len()];
                let end = self.bytes[from..]
                    .iter()
                    .position(|&c| c == b'\n')
                    .map_or(len, |p| from + p + 1);
                let mut copy = self.bytes[from..end].to_vec();
                if !copy.ends_with(b"\n") {
                    copy.push(b'\n');
                }
                let to = starts[b % starts.len()];
                self.insert(to, &copy);
            }
            Mutation::Crlf(at) => self.insert(at % (len + 1), b"\r\n"),
            Mutation::Nul(at, n) => self.insert(at % (len + 1), &vec![0; *n]),
            Mutation::Cr(at) => self.insert(at % (len + 1), b"\r"),
            Mutation::JoinLines(n) => {
                let ends: Vec<usize> = (0..len).filter(|&i| self.bytes[i] == b'\n').collect();
                if let Some(&at) = ends.get(n % ends.len().max(1)) {
                    self.touch(at);
                    self.bytes.remove(at);
                    self.origin.remove(at);
                }
            }
        }
    }

    /// The current line (1-based) where original line `l` begins, if it is still there.
    fn line_of(&self, l: usize) -> Option<usize> {
        let at = self.origin.iter().position(|o| *o == Some(l))?;
        Some(1 + self.bytes[..at].iter().filter(|&&b| b == b'\n').count())
    }
}

/// The records of the original log with their (0-based) line.
fn original_records() -> Vec<(usize, Value)> {
    lines(SUITE)
        .iter()
        .enumerate()
        .filter_map(|(i, l)| match parse_line(&String::from_utf8_lossy(l)) {
            LogLine::Record(r) => Some((i, r.value)),
            LogLine::Text(_) => None,
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Whatever the damage, nothing panics, and every record on a line no mutation touched is
    /// still read (unless a damaged record took its place first: a conflict, reported there).
    #[test]
    fn damage_never_panics_and_never_loses_an_untouched_record(
        mutations in proptest::collection::vec(mutation(), 1..6)
    ) {
        let mut m = Mutated::new(SUITE);
        for mutation in &mutations {
            m.apply(mutation);
        }
        let scan = read(&m.bytes);
        let _ = scan.verdict();
        let _ = render(&scan, "log");
        let read: Vec<&Value> = scan.records().map(|r| &r.value).collect();
        for (line, value) in original_records() {
            if m.touched[line] || read.contains(&&value) {
                continue;
            }
            let now = m.line_of(line);
            let conflict = scan.damage.iter().any(|d| {
                d.kind == Kind::Conflict && Some(d.lines.0) == now
            });
            prop_assert!(
                conflict,
                "original line {} (now line {:?}) is untouched but lost\n{:#?}",
                line + 1, now, scan.damage
            );
        }
        for d in &scan.damage {
            prop_assert!(d.lines.0 >= 1 && d.lines.0 <= d.lines.1 && d.lines.1 <= scan.lines.max(1));
            prop_assert!(d.byte.is_none_or(|b| b <= m.bytes.len()));
        }
    }

    /// Carriage returns, CRLF and NULs anywhere lose nothing: the same records, no damage.
    #[test]
    fn crlf_cr_and_nul_anywhere_lose_nothing(
        noise in proptest::collection::vec(
            prop_oneof![
                any::<usize>().prop_map(Mutation::Crlf),
                any::<usize>().prop_map(Mutation::Cr),
                (any::<usize>(), 1usize..4).prop_map(|(a, n)| Mutation::Nul(a, n)),
            ],
            1..20,
        )
    ) {
        let mut m = Mutated::new(SUITE);
        for n in &noise {
            m.apply(n);
        }
        let scan = read(&m.bytes);
        prop_assert!(scan.damage.is_empty(), "{:#?}", scan.damage);
        prop_assert_eq!(&scan.runs[0].records, &records_of(SUITE));
        prop_assert_eq!(scan.verdict(), Verdict::Ok);
    }

    /// Any bytes at all: no panic.
    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..2000)) {
        let scan = read(&bytes);
        let _ = scan.verdict();
        let _ = render(&scan, "log");
    }
}

/// The suite's log with a background task (run.cfg `background`) started before the summary
/// and, if `stop` is given, that line as its end.
fn with_background(stop: Option<&str>) -> Vec<u8> {
    let start = r#"{"type":"task_start","v":1,"task":"spin","task_index":16,"cpu":2,"entry":"0x401000","segments":2,"mapped_bytes":8192}"#;
    let mut l = lines(SUITE);
    let mut extra = vec![format!("{start}\n").into_bytes()];
    extra.extend(stop.map(|s| format!("{s}\n").into_bytes()));
    l.splice(497..497, extra);
    l.concat()
}

const STOPPED: &str = r#"{"type":"task_stopped","v":1,"task":"spin","task_index":16,"cpu":2,"reason":"background payload: the other payloads are done","virtual_tsc":123456,"syscalls":0,"interrupts":4}"#;

#[test]
fn a_stopped_background_task_has_ended_and_a_damaged_stop_is_found() {
    // Stopped: the task's end, no damage.
    let scan = read(&with_background(Some(STOPPED)));
    assert!(scan.damage.is_empty(), "{:?}", scan.damage);
    assert_eq!(scan.verdict(), Verdict::Ok);
    // Its `task_stopped` lost: the task has no end.
    let scan = read(&with_background(None));
    let d = scan.damage.iter().find(|d| d.lines.0 == 498).unwrap();
    assert_eq!(d.kind, Kind::Missing);
    assert!(
        d.detail.contains("task spin (#16) started but has no"),
        "{}",
        d.detail
    );
    assert!(d.detail.contains("`task_stopped`"), "{}", d.detail);
    // A flipped bit in its type or a field name: doubtful, like any record.
    for (from, to, why) in [
        (
            "task_stopped",
            "task_stoppef",
            "one character off `task_stopped`",
        ),
        ("\"reason\"", "\"reasnn\"", "`reason` is missing"),
        ("\"task_index\":16", "\"task_index\":\"16\"", "`task_index`"),
    ] {
        let scan = read(&with_background(Some(&STOPPED.replace(from, to))));
        let d = scan.damage.iter().find(|d| d.lines.0 == 499);
        let d = d.unwrap_or_else(|| panic!("{to}: {:?}", scan.damage));
        assert_eq!(d.kind, Kind::Doubtful, "{to}");
        assert!(d.detail.contains(why), "{to}: {}", d.detail);
    }
}

/// A record split twice, with a line of NULs between its parts (proptest found it: CRLF, NULs,
/// CRLF inserted into one record): joined again, nothing lost.
#[test]
fn a_record_split_around_a_line_of_nuls_is_joined() {
    let mut m = Mutated::new(SUITE);
    for n in [
        Mutation::Crlf(7273692241580852132),
        Mutation::Nul(1582360346124203279, 3),
        Mutation::Crlf(0),
        Mutation::Crlf(0),
        Mutation::Crlf(1954572890527239284),
    ] {
        m.apply(&n);
    }
    let scan = read(&m.bytes);
    assert!(scan.damage.is_empty(), "{:#?}", scan.damage);
    assert_eq!(scan.runs[0].records, records_of(SUITE));
}
