//! Run separation: the items of the log taken into runs (a `boot` record, a second machine
//! record or a new record after the `end` begins one), repeated lines dropped, conflicting
//! records set aside, and each run checked for the records the protocol requires.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use serde_json::Value;

use super::lines::{Body, Broken, Item, field_in, find, garbage};
use super::schema::{HARNESS, MACHINE, ONCE, PER_TASK, doubt, fields_of};
use super::summary::{a_record, title};
use super::{Damage, Kind, Run, Scan};
use crate::records::{Record, SCHEMA_VERSION};

/// A benchmark's records in a run, from its `bench_start`.
#[derive(Default)]
struct Block {
    payload: String,
    bench: String,
    line: usize,
    /// The task (its index) it ran in.
    task: Option<u64>,
    start: Option<Record>,
    /// event -> (line, record)
    results: BTreeMap<String, (usize, Record)>,
    /// (event, kind) -> repetitions seen
    samples: BTreeMap<(String, String), BTreeSet<usize>>,
    /// Its task has not ended yet.
    open: bool,
}

/// The run being read.
#[derive(Default)]
struct Building {
    run: Run,
    ended: bool,
    version: Option<u64>,
    /// Records a run has one of (by type and key): line and value.
    seen: HashMap<(String, String), (usize, Value)>,
    /// Every record's bytes: an exact copy after the `end` is a repeated line, not a new run.
    all: HashMap<Vec<u8>, usize>,
    /// Exact copies of benchmark records in one task: (task, bytes) -> line.
    copies: HashMap<(Option<u64>, Vec<u8>), usize>,
    /// The previous record: line and bytes.
    last: Option<(usize, Vec<u8>)>,
    /// The latest task of each name.
    task_of: HashMap<String, u64>,
    blocks: Vec<Block>,
    /// (payload, bench) -> its latest block
    latest: HashMap<(String, String), usize>,
    /// task_index -> the record that ended it
    task_end: HashMap<u64, String>,
    /// task_index -> (name, line) of its `task_start`
    task_start: BTreeMap<u64, (String, usize)>,
    /// Benchmarks a `harness_error` names: (payload, bench or "").
    harness_errors: HashSet<(String, String)>,
    /// The line of the damaged `boot` record that began this run.
    boot_damaged: Option<usize>,
    /// Benchmarks with records lost or doubtful: (payload, bench, why).
    marks: Vec<(String, String, String)>,
}

/// Damage found while reading a record: kind, benchmark, detail.
type Found = (Kind, Option<(String, String)>, String);

fn is_harness(kind: &str) -> bool {
    HARNESS.contains(&kind)
}

/// Record types that can repeat back to back in a healthy run.
fn repeatable(kind: &str) -> bool {
    matches!(
        kind,
        "task_output" | "report" | "error" | "harness_error" | "config_error" | "panic" | "fault"
    ) || fields_of(kind).is_none()
}

fn bench_of(r: &Record) -> Option<(String, String)> {
    Some((r.str("payload")?.to_string(), r.str("bench")?.to_string()))
}

impl Building {
    fn new(number: usize, line: usize, booted: bool, boot_damaged: Option<usize>) -> Building {
        Building {
            run: Run {
                number,
                lines: (line, line),
                booted,
                ..Run::default()
            },
            boot_damaged,
            ..Building::default()
        }
    }

    fn mark(&mut self, bench: &Option<(String, String)>, why: String) {
        if let Some((p, b)) = bench {
            self.marks.push((p.clone(), b.clone(), why));
        }
    }

    /// Takes a record into the run, or says why not: `Ok(None)` kept, `Ok(Some(line))` an
    /// exact copy of the record at `line`, `Err` damage.
    fn take(&mut self, r: Record, raw: Vec<u8>, line: usize) -> Result<Option<usize>, Found> {
        let kind = r.kind.clone();
        // The version the run's records carry: its boot's, when this tool reads it (a boot
        // of another version is judged against the rest at the end of the run).
        if kind == "boot" && self.run.records.is_empty() {
            self.version = r.version().filter(|&v| v == SCHEMA_VERSION);
        }
        let version = self.version.filter(|_| kind != "boot");
        if let Some(why) = doubt(&r, version) {
            let bench = bench_of(&r).filter(|_| is_harness(&kind));
            self.mark(
                &bench,
                format!("a doubtful `{kind}` record was set aside (line {line})"),
            );
            return Err((Kind::Doubtful, bench, format!("{why}; set aside")));
        }
        if let Some((first, _)) = self.last.as_ref().filter(|(_, l)| *l == raw)
            && !repeatable(&kind)
        {
            return Ok(Some(*first));
        }
        let key = match kind.as_str() {
            k if MACHINE.contains(&k) || ONCE.contains(&k) || k == "boot" => Some(String::new()),
            k if PER_TASK.contains(&k) => Some(format!("#{}", r.get("task_index"))),
            "fault" if r.str("mode") == Some("user") => Some(format!("#{}", r.get("task_index"))),
            "selftest" => Some(r.get("check").to_string()),
            "processor" => Some(format!("APIC ID {}", r.get("apic_id"))),
            _ => None,
        };
        if let Some(key) = key {
            if let Some((first, v)) = self.seen.get(&(kind.clone(), key.clone())) {
                if *v == r.value {
                    return Ok(Some(*first));
                }
                let whose = if key.is_empty() {
                    String::new()
                } else if key.starts_with('#') {
                    format!(" for task {key}")
                } else {
                    format!(" for {key}")
                };
                return Err((
                    Kind::Conflict,
                    None,
                    format!(
                        "a second `{kind}` record{whose} in the run, different from line {first}'s: \
                         kept the first, set this one aside"
                    ),
                ));
            }
            self.seen
                .insert((kind.clone(), key), (line, r.value.clone()));
        }
        if is_harness(&kind) {
            let task = r.str("payload").and_then(|p| self.task_of.get(p).copied());
            if let Some(&first) = self.copies.get(&(task, raw.clone())) {
                return Ok(Some(first));
            }
            if let Some(detail) = self.file_harness(&r, line, task) {
                let bench = bench_of(&r);
                self.mark(
                    &bench,
                    format!("two different `{kind}` records for one place (line {line})"),
                );
                return Err((Kind::Conflict, bench, detail));
            }
            self.copies.insert((task, raw.clone()), line);
        }
        self.follow_tasks(&r, line);
        if kind == "end" {
            self.ended = true;
        }
        self.all.insert(raw.clone(), line);
        self.last = Some((line, raw));
        self.run.records.push(r);
        self.run.record_lines.push(line);
        Ok(None)
    }

    /// Follows tasks: their names, how they ended, the benchmarks they leave open.
    fn follow_tasks(&mut self, r: &Record, line: usize) {
        let name = r.str("task").unwrap_or("?").to_string();
        match (r.kind.as_str(), r.u64("task_index")) {
            ("task_start", Some(i)) => {
                self.task_of.insert(name.clone(), i);
                self.task_start.insert(i, (name, line));
            }
            ("task_exit" | "task_killed" | "task_stopped" | "fault", Some(i)) => {
                self.task_end.insert(i, r.kind.clone());
                for block in self.blocks.iter_mut().filter(|k| k.payload == name) {
                    block.open = false;
                }
            }
            ("harness_error", _) => {
                if let Some(p) = r.str("payload") {
                    let bench = r.str("bench").unwrap_or("").to_string();
                    self.harness_errors.insert((p.to_string(), bench));
                }
            }
            _ => {}
        }
    }

    /// Files a benchmark record in its block. Returns why it conflicts with one there.
    fn file_harness(&mut self, r: &Record, line: usize, task: Option<u64>) -> Option<String> {
        let payload = r.str("payload").unwrap_or("?").to_string();
        let bench = r.str("bench").unwrap_or("?").to_string();
        let key = (payload.clone(), bench.clone());
        let new_block = |start: Option<Record>| Block {
            payload: payload.clone(),
            bench: bench.clone(),
            line,
            task,
            open: start.is_some(),
            start,
            ..Block::default()
        };
        if r.kind == "bench_start" {
            self.blocks.push(new_block(Some(r.clone())));
            self.latest.insert(key, self.blocks.len() - 1);
            return None;
        }
        let id = match self.latest.get(&key) {
            Some(&id) => id,
            None => {
                // Its bench_start is not in the log: the protocol check says so.
                self.blocks.push(new_block(None));
                self.latest.insert(key, self.blocks.len() - 1);
                self.blocks.len() - 1
            }
        };
        let block = &mut self.blocks[id];
        let event = r.str("event").unwrap_or("?").to_string();
        match r.kind.as_str() {
            "result" => match block.results.get(&event) {
                Some((first, _)) => Some(format!(
                    "a second `result` for {event} in this benchmark, different from line {first}'s: \
                     kept the first, set this one aside"
                )),
                None => {
                    block.results.insert(event, (line, r.clone()));
                    None
                }
            },
            "samples" => {
                let kind = r.str("kind").unwrap_or("?").to_string();
                let first = usize::try_from(r.u64("first").unwrap_or(0)).unwrap_or(usize::MAX);
                let n = r.get("values").as_array().map_or(0, Vec::len);
                let range = first..first.saturating_add(n);
                let seen = block
                    .samples
                    .entry((event.clone(), kind.clone()))
                    .or_default();
                if range.clone().any(|i| seen.contains(&i)) {
                    return Some(format!(
                        "samples of {event}/{kind} from repetition {first} overlap another record's: \
                         kept the first, set this one aside"
                    ));
                }
                // The kernel caps repetitions at 1000; a huge `first` is caught by the checks
                // of the results (docs/harness.md), not stored here.
                if range.end - range.start <= 100_000 && first <= 1_000_000 {
                    seen.extend(range);
                }
                None
            }
            _ => None,
        }
    }
}

struct Reader {
    scan: Scan,
    current: Option<Building>,
    /// A damaged `boot` record was seen at this line: the next record begins a new run.
    boot_lost_at: Option<usize>,
}

impl Reader {
    fn damage(
        &mut self,
        kind: Kind,
        item: &Item,
        record: Option<String>,
        found: (Option<(String, String)>, String),
    ) {
        let run = self.current.as_ref().map(|b| b.run.number);
        self.scan.damage.push(Damage {
            kind,
            lines: item.lines,
            byte: Some(item.byte),
            run,
            record,
            bench: found.0,
            detail: found.1,
        });
    }

    fn finish_run(&mut self) {
        if let Some(b) = self.current.take() {
            let run = check_protocol(b, &mut self.scan.damage);
            self.scan.runs.push(run);
        }
    }

    fn new_run(&mut self, line: usize, booted: bool) {
        self.finish_run();
        let number = self.scan.runs.len() + 1;
        self.current = Some(Building::new(
            number,
            line,
            booted,
            self.boot_lost_at.take(),
        ));
    }

    /// The run in progress (not ended) that a line belongs to.
    fn open_run(&mut self, item: &Item) -> Option<&mut Building> {
        let b = self.current.as_mut().filter(|b| !b.ended)?;
        b.run.lines.1 = item.lines.1;
        Some(b)
    }

    fn text(&mut self, item: &Item, raw: &[u8]) {
        // Before the first record and between runs the firmware and the bootloader speak.
        if self.open_run(item).is_none() {
            return;
        }
        if let Some(why) = garbage(raw) {
            self.damage(Kind::Garbage, item, None, (None, format!("{why}: skipped")));
        }
    }

    fn broken(&mut self, item: &Item, why: &Broken, raw: &[u8], at_eof: bool) {
        // Outside a run, a line that merely begins with `{` is the firmware's.
        let in_run = self.current.as_ref().is_some_and(|b| !b.ended);
        if !in_run && !raw.starts_with(b"{\"") {
            return;
        }
        let record = field_in(raw, "type");
        let payload = field_in(raw, "payload");
        let bench = field_in(raw, "bench");
        let (kind, mut detail) = match why {
            Broken::Eof if at_eof => (
                Kind::Truncated,
                format!(
                    "the log ends inside it after {} bytes: the capture (or the machine) stopped",
                    raw.len()
                ),
            ),
            Broken::Eof => (
                Kind::Cut,
                format!(
                    "cut short: its line ends after {} bytes, before the record closes",
                    raw.len()
                ),
            ),
            Broken::CutBy => (
                Kind::Cut,
                format!(
                    "cut short after {} bytes by the start of another record",
                    raw.len()
                ),
            ),
            Broken::Syntax(msg, col) => (
                Kind::Corrupt,
                format!("not valid JSON at column {col}: {msg}"),
            ),
            Broken::Damaged(msg) => (Kind::Corrupt, msg.clone()),
        };
        // Which benchmark lost it: the one it names, else the ones in progress.
        let harness = record.as_deref().is_none_or(is_harness);
        let mut benches = Vec::new();
        if let Some(b) = self.open_run(item)
            && harness
        {
            match (&payload, &bench) {
                (Some(p), Some(n)) => benches.push((p.clone(), n.clone())),
                _ => benches.extend(
                    b.blocks
                        .iter()
                        .filter(|k| k.open && payload.as_ref().is_none_or(|p| *p == k.payload))
                        .map(|k| (k.payload.clone(), k.bench.clone())),
                ),
            }
            let what = record.as_deref().map_or("a record".to_string(), a_record);
            for bench in &benches {
                b.mark(
                    &Some(bench.clone()),
                    format!("{what} is {} (line {})", kind.name(), item.lines.0),
                );
            }
        }
        match record.as_deref() {
            Some("end") => detail.push_str("; how the run ended is unknown"),
            Some("boot") => {
                detail.push_str("; a new run begins");
                if self
                    .current
                    .as_ref()
                    .is_some_and(|b| !b.run.records.is_empty())
                {
                    self.finish_run();
                }
                self.boot_lost_at = Some(item.lines.0);
            }
            _ => {}
        }
        detail.push_str("; skipped");
        self.damage(kind, item, record, (benches.into_iter().next(), detail));
    }

    fn record(&mut self, item: &Item, r: Record, raw: Vec<u8>) {
        let line = item.lines.0;
        // Where the record goes: this run, or a new one.
        let kind = r.kind.as_str();
        let new_run = match self.current.as_ref() {
            None => Some(kind == "boot"),
            Some(b) if kind == "boot" => {
                // The run's own boot record again before its end is a repeated line.
                let again = !b.ended
                    && b.seen
                        .get(&("boot".to_string(), String::new()))
                        .is_some_and(|(_, v)| *v == r.value);
                (!again).then_some(true)
            }
            // After the end: a repeated line of the run, or the next run (its boot lost).
            Some(b) if b.ended => (!b.all.contains_key(&raw)).then_some(false),
            // A second, different machine record: a new boot whose boot record was lost.
            Some(b) if MACHINE.contains(&kind) => b
                .seen
                .get(&(kind.to_string(), String::new()))
                .is_some_and(|(_, v)| *v != r.value)
                .then_some(false),
            Some(_) => None,
        };
        if let Some(booted) = new_run {
            self.new_run(line, booted);
        }
        let Some(b) = self.current.as_mut() else {
            return;
        };
        b.run.lines.1 = b.run.lines.1.max(item.lines.1);
        let after_end = b.ended;
        let copy_after_end = after_end.then(|| b.all.get(&raw).copied()).flatten();
        if let Some(first) = copy_after_end {
            self.scan.repairs.duplicates.push((line, first));
            return;
        }
        let kind = r.kind.clone();
        match b.take(r, raw, line) {
            Ok(None) => {}
            Ok(Some(first)) => self.scan.repairs.duplicates.push((line, first)),
            Err((k, bench, mut detail)) => {
                if kind == "end" {
                    detail.push_str("; how the run ended is unknown");
                }
                self.damage(k, item, Some(kind), (bench, detail));
            }
        }
    }
}

/// Adds a `missing` (or another kind of) finding of the protocol check.
fn finding(
    damage: &mut Vec<Damage>,
    kind: Kind,
    run: usize,
    line: usize,
    record: &str,
    bench: Option<(String, String)>,
    detail: String,
) {
    damage.push(Damage {
        kind,
        lines: (line, line),
        byte: None,
        run: Some(run),
        record: Some(record.to_string()),
        bench,
        detail,
    });
}

/// The checks a whole run allows: records the protocol requires that are not there.
fn check_protocol(mut b: Building, damage: &mut Vec<Damage>) -> Run {
    let run_no = b.run.number;
    let first_line = b.run.record_lines.first().copied().unwrap_or(b.run.lines.0);
    if !b.run.booted && b.boot_damaged.is_none() {
        let detail = if run_no == 1 {
            "the log begins inside a run: its `boot` record is not there (the capture started late?)"
        } else {
            "a new run begins without a `boot` record (lost?)"
        };
        finding(
            damage,
            Kind::Missing,
            run_no,
            first_line,
            "boot",
            None,
            detail.into(),
        );
    }
    // A boot record of another version among records of this tool's: its `v` was hit.
    if let Some(boot) = b.run.records.first().filter(|r| r.kind == "boot")
        && boot.version() != Some(SCHEMA_VERSION)
    {
        let ours = b
            .run
            .records
            .iter()
            .filter(|r| r.version() == Some(SCHEMA_VERSION));
        if ours.count() * 2 > b.run.records.len() {
            let detail = format!(
                "its schema version `{}` differs from the v{SCHEMA_VERSION} of the run's other records (a flipped bit?)",
                boot.get("v")
            );
            finding(
                damage,
                Kind::Doubtful,
                run_no,
                first_line,
                "boot",
                None,
                detail,
            );
        }
    }
    let ended_ok = b.run.end_status() == Some("ok");
    let stopped = b.run.end_status().is_none();
    let mut marks = std::mem::take(&mut b.marks);
    for block in &b.blocks {
        let who = Some((block.payload.clone(), block.bench.clone()));
        let name = title(&block.payload, &block.bench);
        // A run without an end stopped (or its capture did): what its benchmarks in progress
        // lack never came. That is the missing end (exit 3), not damage.
        let cut_off = stopped && block.open;
        let mut lost = |record: &str, mut detail: String, why: String| {
            let kind = if cut_off {
                detail.push_str(": the run stops before they came (it has no `end` record)");
                Kind::Truncated
            } else {
                Kind::Missing
            };
            finding(
                damage,
                kind,
                run_no,
                block.line,
                record,
                who.clone(),
                detail,
            );
            marks.push((block.payload.clone(), block.bench.clone(), why));
        };
        let Some(start) = &block.start else {
            lost(
                "bench_start",
                format!("{name}: its records are here but its `bench_start` is not (lost?)"),
                "its `bench_start` record is missing".into(),
            );
            continue;
        };
        let events = start.get("events").as_array().map_or(0, Vec::len) as u64;
        let expected = 1 + start.u64("events_total").unwrap_or(events);
        let got = block.results.len() as u64;
        let task_exited = block
            .task
            .and_then(|t| b.task_end.get(&t))
            .is_some_and(|how| how == "task_exit");
        let refused = b
            .harness_errors
            .contains(&(block.payload.clone(), block.bench.clone()))
            || b.harness_errors
                .contains(&(block.payload.clone(), String::new()));
        if got == 0 {
            // A benchmark whose task faulted, was killed or never ended has no results: that is
            // what the kernel reports, not damage.
            if task_exited && !refused && ended_ok {
                lost(
                    "result",
                    format!(
                        "{name}: no `result` records though its task exited (expected {expected}: tsc and {} events)",
                        expected - 1
                    ),
                    format!("its {expected} `result` records are missing"),
                );
            }
        } else if got < expected {
            // The results of a benchmark are sent together: some but not all is loss.
            lost(
                "result",
                format!(
                    "{name}: {} of {expected} `result` records missing (its bench_start plans tsc and {} events)",
                    expected - got,
                    expected - 1
                ),
                format!("{} of {expected} `result` records missing", expected - got),
            );
        }
        // Samples of each measured event: every kind the overhead mode measures, every
        // repetition.
        let mut want = vec!["region"];
        match start.str("overhead") {
            Some("empty") => want.push("empty"),
            Some("diff") => want.push("region2x"),
            _ => {}
        }
        for (event, (_, result)) in &block.results {
            let has_samples = block.samples.keys().any(|(e, _)| e == event);
            // Synthetic and older logs carry samples for some events only.
            if result.get("supported").as_bool() != Some(true) || !has_samples {
                continue;
            }
            let reps = result
                .u64("reps")
                .and_then(|n| usize::try_from(n).ok())
                .filter(|&n| n <= 1_000_000);
            for kind in &want {
                let seen = block.samples.get(&(event.clone(), kind.to_string()));
                let lacking = match (seen, reps) {
                    (None, Some(n)) => n.max(1),
                    (None, None) => 1,
                    (Some(s), Some(n)) => (0..n).filter(|i| !s.contains(i)).count(),
                    (Some(_), None) => 0,
                };
                if lacking == 0 {
                    continue;
                }
                let detail = match seen {
                    None => format!("{name}: no `samples` of {event}/{kind}"),
                    Some(_) => format!(
                        "{name}: samples of {event}/{kind}: {lacking} of {} repetitions missing (a `samples` record lost?)",
                        reps.unwrap_or(0)
                    ),
                };
                lost(
                    "samples",
                    detail,
                    format!("samples of {event}/{kind} missing"),
                );
            }
        }
    }
    // The summary counts what the kernel sent.
    if let Some(pos) = b.run.records.iter().position(|r| r.kind == "summary") {
        let summary = &b.run.records[pos];
        let line = b.run.record_lines[pos];
        for (field, kind) in [("benchmarks", "bench_start"), ("results", "result")] {
            let Some(said) = summary.u64(field) else {
                continue;
            };
            let got = b.run.records.iter().filter(|r| r.kind == kind).count() as u64;
            if got < said {
                let detail = format!(
                    "the summary counts {said} `{kind}` records, the log holds {got}: {} lost",
                    said - got
                );
                finding(damage, Kind::Missing, run_no, line, kind, None, detail);
            } else if got > said {
                let detail = format!(
                    "the summary counts {said} `{kind}` records, the log holds {got}: {} more than the kernel sent",
                    got - said
                );
                finding(damage, Kind::Doubtful, run_no, line, kind, None, detail);
            }
        }
    }
    // Every task ends, in a run that ended ok.
    if ended_ok {
        for (index, (name, line)) in &b.task_start {
            if !b.task_end.contains_key(index) {
                let detail = format!(
                    "task {name} (#{index}) started but has no `task_exit`, `fault`, `task_killed` or `task_stopped` (lost?)"
                );
                finding(
                    damage,
                    Kind::Missing,
                    run_no,
                    *line,
                    "task_exit",
                    None,
                    detail,
                );
            }
        }
    }
    // One entry per benchmark, the reasons joined.
    let mut run = b.run;
    for (p, n, why) in marks {
        match run
            .incomplete
            .iter_mut()
            .find(|(pp, nn, _)| *pp == p && *nn == n)
        {
            Some((_, _, w)) => {
                if !w.contains(&why) {
                    w.push_str("; ");
                    w.push_str(&why);
                }
            }
            None => run.incomplete.push((p, n, why)),
        }
    }
    run
}

/// Reads the items of a log into runs: their records, and what is damaged into `scan`.
pub(super) fn read(items: Vec<Item>, scan: Scan) -> Scan {
    let mut reader = Reader {
        scan,
        current: None,
        boot_lost_at: None,
    };
    for item in items {
        match item.body {
            Body::Record(ref r, ref raw) => reader.record(&item, r.clone(), raw.clone()),
            Body::Broken(ref why, ref raw, at_eof) => reader.broken(&item, why, raw, at_eof),
            Body::Text(ref raw) => {
                // Text that names a record type is a record whose opening brace was hit.
                if find(raw, b"\"type\":\"", 0).is_some() {
                    let why = Broken::Damaged("its opening `{` is damaged".into());
                    reader.broken(&item, &why, raw, false);
                } else {
                    reader.text(&item, raw);
                }
            }
        }
    }
    reader.finish_run();
    reader.scan
}
