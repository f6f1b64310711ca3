//! `baremark diff A B`: two runs compared per benchmark and event: both medians, the change in
//! percent, and whether the change is significant given the per-repetition samples (a two-sided
//! Mann-Whitney U test). The inputs are results JSON files (`baremark-results/1`) or serial
//! logs; the output shapes are in docs/output-formats.md, the usage in docs/user-guide.md.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use anyhow::{Context, Result, bail};
use serde::Serialize;
use serde_json::Value;

use crate::logscan;
use crate::numbers::num;
use crate::results::{self, Benchmark, ResultRec, Results};

/// The `schema` of the JSON document `diff --json` writes.
pub const SCHEMA: &str = "baremark-diff/1";

/// The significance level unless `--alpha` says otherwise: strict, because a run compares many
/// benchmarks and events at once and a CI gate should not trip on noise.
pub const DEFAULT_ALPHA: f64 = 0.01;

/// Fewer repetitions than this on either side: no verdict. The normal approximation of U is
/// poor below it, and with 4 against 4 not even a complete separation reaches p < 0.01.
pub const MIN_SAMPLES: usize = 5;

/// The test, as the report states it.
pub const TEST: &str =
    "Mann-Whitney U, two-sided, normal approximation with tie and continuity corrections";

/// One input, loaded.
#[derive(Debug)]
pub struct Input {
    /// What it was (`results JSON` or `serial log`), for messages.
    pub kind: &'static str,
    pub benchmarks: Vec<Benchmark>,
    /// The input's own errors (`errors[]`), which may explain a missing benchmark.
    pub errors: Vec<String>,
}

/// Reads a results JSON file or a serial log, told apart by content.
pub fn load(path: &Path) -> Result<Input> {
    let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    load_bytes(&bytes).with_context(|| format!("{}", path.display()))
}

/// [`load`] on text in memory.
pub fn load_str(text: &str) -> Result<Input> {
    load_bytes(text.as_bytes())
}

/// [`load`] on bytes in memory (a log is read as `report` reads it: damage found, the last
/// run taken).
pub fn load_bytes(bytes: &[u8]) -> Result<Input> {
    let text = String::from_utf8_lossy(bytes);
    // A whole-document parse tells a results file from a log: a log is many JSON lines (and
    // text), so it does not parse as one value unless it is a single record.
    if let Ok(Value::Object(doc)) = serde_json::from_str::<Value>(&text)
        && !doc.contains_key("type")
    {
        return match doc.get("schema").and_then(Value::as_str) {
            Some(results::SCHEMA) => from_results_json(&doc),
            Some(other) => bail!(
                "a JSON document of schema `{other}`; diff reads `{}` (run --json) or serial logs",
                results::SCHEMA
            ),
            None => bail!(
                "a JSON document without `schema`: not a baremark results file (`{}`)",
                results::SCHEMA
            ),
        };
    }
    let scan = logscan::scan(bytes);
    let runs: Vec<&logscan::Run> = scan.runs.iter().filter(|r| r.copy_of.is_none()).collect();
    let Some(run) = runs.last() else {
        bail!(
            "neither a results JSON file (`{}`) nor a serial log with baremark records",
            results::SCHEMA
        );
    };
    let mut res = Results::from_records(&run.records);
    for (payload, bench, why) in &run.incomplete {
        res.mark_incomplete(payload, bench, why);
    }
    let mut errors: Vec<String> = res.errors.iter().map(|e| e.message.clone()).collect();
    if runs.len() > 1 {
        errors.push(format!(
            "the log holds {} runs: compared is the last (lines {}-{})",
            runs.len(),
            run.lines.0,
            run.lines.1
        ));
    }
    if !scan.damage.is_empty() {
        errors.push(format!(
            "the log is damaged ({} places): `baremark report` lists them",
            scan.damage.len()
        ));
    }
    errors.extend(
        res.benchmarks
            .iter()
            .filter(|b| !b.incomplete.is_empty())
            .map(|b| format!("{} is incomplete: {}", b.title(), b.incomplete.join("; "))),
    );
    Ok(Input {
        kind: "serial log",
        errors,
        benchmarks: res.benchmarks,
    })
}

fn from_results_json(doc: &serde_json::Map<String, Value>) -> Result<Input> {
    let list = doc
        .get("benchmarks")
        .and_then(Value::as_array)
        .context("`benchmarks` is missing or not an array")?;
    let mut benchmarks = Vec::new();
    for (i, b) in list.iter().enumerate() {
        let field = |key: &str| {
            b.get(key)
                .and_then(Value::as_str)
                .map(str::to_string)
                .with_context(|| format!("benchmarks[{i}]: `{key}` is missing or not a string"))
        };
        let mut bench = Benchmark {
            payload: field("payload")?,
            bench: field("bench")?,
            iterations: b.get("iterations").and_then(Value::as_u64),
            cpu: b.get("cpu").and_then(Value::as_u64),
            core_type: b
                .get("core_type")
                .and_then(Value::as_str)
                .map(str::to_string),
            ..Benchmark::default()
        };
        for r in b
            .get("results")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let typed: ResultRec = serde_json::from_value(r.clone())
                .with_context(|| format!("benchmarks[{i}] ({}): a result", bench.title()))?;
            bench.results.push(r.clone());
            bench.typed.push(typed);
        }
        for m in b
            .get("metrics")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let Ok(typed) = serde_json::from_value(m.clone()) {
                bench.metrics.push(m.clone());
                bench.typed_metrics.push(typed);
            }
        }
        if let Some(samples) = b.get("samples").filter(|s| !s.is_null()) {
            bench.samples = serde_json::from_value(samples.clone()).with_context(|| {
                format!(
                    "benchmarks[{i}] ({}): `samples` is not event -> kind -> values",
                    bench.title()
                )
            })?;
        }
        benchmarks.push(bench);
    }
    let errors = doc
        .get("errors")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|e| e.get("message").and_then(Value::as_str).map(str::to_string))
        .collect();
    Ok(Input {
        kind: "results JSON",
        benchmarks,
        errors,
    })
}

// ---------------------------------------------------------------------------------------------
// Statistics

/// The outcome of the U test.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct UTest {
    /// U of the first sample (the number of pairs where it is the larger, ties counted half).
    pub u: f64,
    /// The normal deviate after the continuity correction, signed: > 0 when the second sample
    /// tends to be larger. 0 when there is no variance at all.
    pub z: f64,
    /// Two-sided p-value.
    pub p: f64,
    /// Each side constant and the two different: the difference is exact (see [`compare`]).
    pub exact: bool,
}

/// The median of values (the mean of the middle two for an even count), as the kernel takes it.
pub fn median(values: &[f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

/// Two-sided Mann-Whitney U test of `a` against `b`: ranks of the pooled samples (ties get
/// their mean rank), `U_a = R_a - n_a(n_a+1)/2`, `mu = n_a n_b / 2`,
/// `sigma^2 = n_a n_b / 12 * ((N+1) - sum(t^3 - t) / (N(N-1)))` over the tie groups `t`,
/// `z = (|U_a - mu| - 1/2) / sigma` (not below 0), `p = erfc(z / sqrt 2)`.
///
/// Deterministic measurements (icount, the emulated PMU) give constant samples, where the
/// test's model of random draws does not apply: all values equal on both sides is "no change"
/// (p = 1), each side constant and the two different is a change without noise, reported as
/// exact with p = 0.
pub fn mann_whitney(a: &[f64], b: &[f64]) -> Option<UTest> {
    let (na, nb) = (a.len(), b.len());
    if na == 0 || nb == 0 || a.iter().chain(b).any(|x| !x.is_finite()) {
        return None;
    }
    let constant = |s: &[f64]| s.iter().all(|&x| x == s[0]);
    if constant(a) && constant(b) && a[0] != b[0] {
        let u = if a[0] > b[0] { (na * nb) as f64 } else { 0.0 };
        let z = if b[0] > a[0] {
            f64::INFINITY
        } else {
            f64::NEG_INFINITY
        };
        return Some(UTest {
            u,
            z,
            p: 0.0,
            exact: true,
        });
    }
    let mut pooled: Vec<(f64, bool)> = a
        .iter()
        .map(|&x| (x, true))
        .chain(b.iter().map(|&x| (x, false)))
        .collect();
    pooled.sort_by(|x, y| x.0.total_cmp(&y.0));
    let n = pooled.len();
    let mut rank_sum_a = 0.0;
    let mut ties = 0.0;
    let mut i = 0;
    while i < n {
        let mut j = i;
        while j < n && pooled[j].0 == pooled[i].0 {
            j += 1;
        }
        // Positions i..j (0-based) share the mean of ranks i+1..=j.
        let rank = (i + 1 + j) as f64 / 2.0;
        let t = (j - i) as f64;
        ties += t * t * t - t;
        rank_sum_a += rank * pooled[i..j].iter().filter(|p| p.1).count() as f64;
        i = j;
    }
    let (naf, nbf, nf) = (na as f64, nb as f64, n as f64);
    let u = rank_sum_a - naf * (naf + 1.0) / 2.0;
    let mu = naf * nbf / 2.0;
    let var = if n > 1 {
        naf * nbf / 12.0 * ((nf + 1.0) - ties / (nf * (nf - 1.0)))
    } else {
        0.0
    };
    if var <= 0.0 {
        // Every value the same: nothing to tell apart.
        return Some(UTest {
            u,
            z: 0.0,
            p: 1.0,
            exact: false,
        });
    }
    let sigma = var.sqrt();
    let dev = ((u - mu).abs() - 0.5).max(0.0) / sigma;
    // U_a above its mean means a ranks high: a tends to be larger, b smaller.
    let z = if u > mu { -dev } else { dev };
    let p = erfc(dev / std::f64::consts::SQRT_2).min(1.0);
    Some(UTest {
        u,
        z,
        p,
        exact: false,
    })
}

/// The complementary error function, W. J. Cody's rational approximations (relative error
/// below 1e-15 in double precision): small enough to keep here rather than add a crate.
pub fn erfc(x: f64) -> f64 {
    if x.is_nan() {
        return f64::NAN;
    }
    let ax = x.abs();
    let r = if ax < 0.5 {
        return 1.0 - erf_small(x);
    } else if ax < 4.0 {
        const P: [f64; 9] = [
            5.641_884_969_886_701e-1,
            8.883_149_794_388_376,
            6.611_919_063_714_163e1,
            2.986_351_381_974_001e2,
            8.819_522_212_417_69e2,
            1.712_047_612_634_070_7e3,
            2.051_078_377_826_071_6e3,
            1.230_339_354_797_997_2e3,
            2.153_115_354_744_038_3e-8,
        ];
        const Q: [f64; 8] = [
            1.574_492_611_070_983_5e1,
            1.176_939_508_913_125e2,
            5.371_811_018_620_099e2,
            1.621_389_574_566_690_3e3,
            3.290_799_235_733_459_7e3,
            4.362_619_090_143_247e3,
            3.439_367_674_143_721_6e3,
            1.230_339_354_803_749_5e3,
        ];
        let mut num = P[8] * ax;
        let mut den = ax;
        for k in 0..7 {
            num = (num + P[k]) * ax;
            den = (den + Q[k]) * ax;
        }
        (num + P[7]) / (den + Q[7]) * (-ax * ax).exp()
    } else if ax < 27.0 {
        const P: [f64; 6] = [
            3.053_266_349_612_323e-1,
            3.603_448_999_498_044e-1,
            1.257_817_261_112_292_5e-1,
            1.608_378_514_874_227_5e-2,
            6.587_491_615_298_378e-4,
            1.631_538_713_730_71e-2,
        ];
        const Q: [f64; 5] = [
            2.568_520_192_289_822,
            1.872_952_849_923_460_4,
            5.279_051_029_514_285e-1,
            6.051_834_131_244_132e-2,
            2.335_204_976_268_691_8e-3,
        ];
        let z = 1.0 / (ax * ax);
        let mut num = P[5] * z;
        let mut den = z;
        for k in 0..4 {
            num = (num + P[k]) * z;
            den = (den + Q[k]) * z;
        }
        let frac = z * (num + P[4]) / (den + Q[4]);
        let frac = (1.0 / std::f64::consts::PI.sqrt() - frac) / ax;
        frac * (-ax * ax).exp()
    } else {
        0.0
    };
    if x < 0.0 { 2.0 - r } else { r }
}

/// erf for |x| < 0.5 (Cody's first interval).
fn erf_small(x: f64) -> f64 {
    const A: [f64; 5] = [
        3.161_123_743_870_565_6,
        1.138_641_541_510_501_6e2,
        3.774_852_376_853_02e2,
        3.209_377_589_138_469_4e3,
        1.857_777_061_846_031_5e-1,
    ];
    const B: [f64; 4] = [
        2.360_129_095_234_412e1,
        2.440_246_379_344_441_7e2,
        1.282_616_526_077_372_3e3,
        2.844_236_833_439_171e3,
    ];
    let y = x * x;
    let mut num = A[4] * y;
    let mut den = y;
    for k in 0..3 {
        num = (num + A[k]) * y;
        den = (den + B[k]) * y;
    }
    x * (num + A[3]) / (den + B[3])
}

// ---------------------------------------------------------------------------------------------
// Comparison

/// What a row says.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Significantly larger in B (for counts and ticks, worse).
    Slower,
    /// Significantly smaller in B.
    Faster,
    /// No significant difference.
    Same,
    /// Fewer than [`MIN_SAMPLES`] usable repetitions on a side.
    NotEnoughSamples,
    /// The event was not measured (unsupported) in A or B.
    NotMeasured,
    OnlyInA,
    OnlyInB,
}

impl Status {
    fn text(self) -> &'static str {
        match self {
            Status::Slower => "slower",
            Status::Faster => "faster",
            Status::Same => "~",
            Status::NotEnoughSamples => "not enough samples",
            Status::NotMeasured => "not measured",
            Status::OnlyInA => "only in A",
            Status::OnlyInB => "only in B",
        }
    }
}

/// One benchmark and event.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Row {
    pub payload: String,
    pub bench: String,
    pub event: String,
    /// `iteration` or `region`: what the medians and samples are per (as in the results table).
    pub per: Option<&'static str>,
    pub median_a: Option<f64>,
    pub median_b: Option<f64>,
    /// `(median_b - median_a) / |median_a| * 100`; null when a median is missing or A's is 0.
    pub change_pct: Option<f64>,
    pub n_a: usize,
    pub n_b: usize,
    pub u: Option<f64>,
    pub z: Option<f64>,
    pub p: Option<f64>,
    pub significant: bool,
    /// Both sides constant and different: no noise, the change is exact (p = 0).
    pub exact: bool,
    pub status: Status,
    /// Why there is no verdict, when there is none.
    pub note: Option<String>,
}

/// The whole comparison (the `--json` document).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Diff {
    pub schema: &'static str,
    pub a: String,
    pub b: String,
    pub test: &'static str,
    pub alpha: f64,
    pub min_samples: usize,
    pub rows: Vec<Row>,
}

/// The per-repetition values of `event` on the table's scale: each repetition put through the
/// kernel's overhead removal (`empty`: less the empty region's median; `diff`: the 2U run less
/// the U run's median; docs/harness.md) and divided by the iterations, so that their median is
/// the table's median and runs with different overheads compare like with like.
pub fn comparable_samples(b: &Benchmark, r: &ResultRec) -> Result<Vec<f64>, String> {
    let per = match (r.per_iteration.is_some(), b.iterations.or(r.iterations)) {
        (true, Some(it)) if it > 0 => it as f64,
        (true, _) => return Err("per-iteration results without an iteration count".into()),
        (false, _) => 1.0,
    };
    let need = |kind: &str| {
        let v = b.sample_values(&r.event, kind);
        if v.is_empty() {
            Err(format!("no `{kind}` samples"))
        } else {
            Ok(v)
        }
    };
    let (values, offset) = match r.overhead.as_deref().unwrap_or("none") {
        "empty" => (need("region")?, median(&need("empty")?).unwrap_or(0.0)),
        "diff" => (need("region2x")?, median(&need("region")?).unwrap_or(0.0)),
        "none" => (need("region")?, 0.0),
        other => return Err(format!("unknown overhead mode `{other}`")),
    };
    let scale = r.scaling.unwrap_or(1.0);
    Ok(values.iter().map(|v| (v - offset) * scale / per).collect())
}

/// Key of a benchmark: payload, bench and which occurrence (a payload may be run twice).
type Key = (String, String, usize);

fn keyed(list: &[Benchmark]) -> Vec<(Key, &Benchmark)> {
    let mut seen: BTreeMap<(String, String), usize> = BTreeMap::new();
    list.iter()
        .map(|b| {
            let n = seen
                .entry((b.payload.clone(), b.bench.clone()))
                .or_default();
            *n += 1;
            ((b.payload.clone(), b.bench.clone(), *n - 1), b)
        })
        .collect()
}

fn blank_row(b: &Benchmark, event: &str, status: Status) -> Row {
    Row {
        payload: b.payload.clone(),
        bench: b.bench.clone(),
        event: event.to_string(),
        per: None,
        median_a: None,
        median_b: None,
        change_pct: None,
        n_a: 0,
        n_b: 0,
        u: None,
        z: None,
        p: None,
        significant: false,
        exact: false,
        status,
        note: None,
    }
}

/// Compares two inputs: rows in A's order, then what only B has.
pub fn compare(a: &Input, b: &Input, names: (&str, &str), alpha: f64) -> Diff {
    let ka = keyed(&a.benchmarks);
    let kb = keyed(&b.benchmarks);
    let mut rows = Vec::new();
    for (key, ba) in &ka {
        let Some((_, bb)) = kb.iter().find(|(k, _)| k == key) else {
            rows.extend(
                ba.typed
                    .iter()
                    .map(|r| blank_row(ba, &r.event, Status::OnlyInA)),
            );
            continue;
        };
        for ra in &ba.typed {
            match bb.result(&ra.event) {
                Some(rb) => rows.push(compare_event(ba, ra, bb, rb, alpha)),
                None => rows.push(blank_row(ba, &ra.event, Status::OnlyInA)),
            }
        }
        for rb in &bb.typed {
            if ba.result(&rb.event).is_none() {
                rows.push(blank_row(bb, &rb.event, Status::OnlyInB));
            }
        }
    }
    for (key, bb) in &kb {
        if !ka.iter().any(|(k, _)| k == key) {
            rows.extend(
                bb.typed
                    .iter()
                    .map(|r| blank_row(bb, &r.event, Status::OnlyInB)),
            );
        }
    }
    Diff {
        schema: SCHEMA,
        a: names.0.to_string(),
        b: names.1.to_string(),
        test: TEST,
        alpha,
        min_samples: MIN_SAMPLES,
        rows,
    }
}

fn compare_event(
    ba: &Benchmark,
    ra: &ResultRec,
    bb: &Benchmark,
    rb: &ResultRec,
    alpha: f64,
) -> Row {
    let mut row = blank_row(ba, &ra.event, Status::Same);
    let (ca, cb) = (ra.chosen(), rb.chosen());
    if !ra.supported || !rb.supported || ca.is_none() || cb.is_none() {
        row.status = Status::NotMeasured;
        let why = |r: &ResultRec| r.reason.clone().unwrap_or_else(|| "no statistics".into());
        row.note = Some(
            match (ra.supported && ca.is_some(), rb.supported && cb.is_some()) {
                (false, false) => format!("A: {}; B: {}", why(ra), why(rb)),
                (false, true) => format!("A: {}", why(ra)),
                _ => format!("B: {}", why(rb)),
            },
        );
        return row;
    }
    let ((sa, per_a), (sb, per_b)) = (ca.unwrap(), cb.unwrap());
    if per_a != per_b {
        row.status = Status::NotMeasured;
        row.note = Some("one run per iteration, the other per region: not comparable".into());
        return row;
    }
    row.per = Some(if per_a { "iteration" } else { "region" });
    // The kernel's medians, as the results table shows them.
    row.median_a = Some(sa.median);
    row.median_b = Some(sb.median);
    row.change_pct = (sa.median != 0.0).then(|| (sb.median - sa.median) / sa.median.abs() * 100.0);
    let (xa, xb) = match (comparable_samples(ba, ra), comparable_samples(bb, rb)) {
        (Ok(x), Ok(y)) => (x, y),
        (Err(e), _) => return not_enough(row, format!("A: {e}")),
        (_, Err(e)) => return not_enough(row, format!("B: {e}")),
    };
    row.n_a = xa.len();
    row.n_b = xb.len();
    if xa.len() < MIN_SAMPLES || xb.len() < MIN_SAMPLES {
        let msg = format!(
            "{} and {} repetitions; the test needs {MIN_SAMPLES} per side",
            xa.len(),
            xb.len()
        );
        return not_enough(row, msg);
    }
    let Some(t) = mann_whitney(&xa, &xb) else {
        return not_enough(row, "a sample is not a finite number".into());
    };
    row.u = Some(t.u);
    row.z = t.z.is_finite().then_some(t.z);
    row.p = Some(t.p);
    row.exact = t.exact;
    row.significant = t.p < alpha;
    row.status = match (row.significant, t.z > 0.0) {
        (false, _) => Status::Same,
        (true, true) => Status::Slower,
        (true, false) => Status::Faster,
    };
    row
}

fn not_enough(mut row: Row, note: String) -> Row {
    row.status = Status::NotEnoughSamples;
    row.note = Some(note);
    row
}

impl Diff {
    /// The rows that fail a gate of `pct` percent: significant, and larger in B (more ticks,
    /// cycles, instructions, misses: worse) by more than `pct`.
    pub fn over_gate(&self, pct: f64) -> Vec<&Row> {
        self.rows
            .iter()
            .filter(|r| r.significant && r.status == Status::Slower)
            .filter(|r| r.change_pct.is_none_or(|c| c > pct))
            .collect()
    }

    /// The JSON document (docs/output-formats.md).
    pub fn to_json(&self) -> String {
        let mut s = serde_json::to_string_pretty(self).expect("diff serializes");
        s.push('\n');
        s
    }

    /// The table people read.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "A  {}\nB  {}", self.a, self.b);
        let _ = writeln!(
            out,
            "{}; alpha {}; medians per iteration (per region without iterations)\n",
            self.test, self.alpha
        );
        let title = |r: &Row| {
            if r.payload == r.bench {
                r.payload.clone()
            } else {
                format!("{}/{}", r.payload, r.bench)
            }
        };
        let wb = self
            .rows
            .iter()
            .map(|r| title(r).len())
            .chain([9])
            .max()
            .unwrap_or(9);
        let we = self
            .rows
            .iter()
            .map(|r| r.event.len())
            .chain([5])
            .max()
            .unwrap_or(5);
        let _ = writeln!(
            out,
            "{:<wb$}  {:<we$}  {:>14}  {:>14}  {:>9}  {:>8}  verdict",
            "benchmark", "event", "median A", "median B", "change", "p"
        );
        let opt = |x: Option<f64>| x.map_or("-".to_string(), num);
        for r in &self.rows {
            let change = r.change_pct.map_or("-".into(), |c| format!("{c:+.2}%"));
            let p = match (r.p, r.exact) {
                (_, true) => "exact".to_string(),
                (Some(p), _) if p < 1e-4 => format!("{p:.0e}"),
                (Some(p), _) => format!("{p:.4}"),
                (None, _) => "-".into(),
            };
            let mut verdict = r.status.text().to_string();
            if let Some(note) = &r.note {
                let _ = write!(verdict, " ({note})");
            }
            let _ = writeln!(
                out,
                "{:<wb$}  {:<we$}  {:>14}  {:>14}  {:>9}  {:>8}  {verdict}",
                title(r),
                r.event,
                opt(r.median_a),
                opt(r.median_b),
                change,
                p
            );
        }
        let count = |s: Status| self.rows.iter().filter(|r| r.status == s).count();
        let _ = writeln!(
            out,
            "\n{} slower, {} faster, {} without a significant change, {} without a verdict",
            count(Status::Slower),
            count(Status::Faster),
            count(Status::Same),
            self.rows.len() - count(Status::Slower) - count(Status::Faster) - count(Status::Same)
        );
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(x: f64, y: f64, tol: f64) {
        assert!((x - y).abs() <= tol, "{x} vs {y}");
    }

    #[test]
    fn erfc_known_values() {
        // Abramowitz & Stegun table 7.1 / standard normal tail values.
        close(erfc(0.0), 1.0, 1e-15);
        close(erfc(0.3), 0.671_373_240_540_873, 1e-14);
        close(erfc(1.0), 0.157_299_207_050_285_13, 1e-14);
        close(erfc(2.0), 0.004_677_734_981_047_266, 1e-16);
        close(erfc(-1.0), 1.842_700_792_949_715, 1e-14);
        close(erfc(5.0), 1.537_459_794_428_034_8e-12, 1e-24);
        // Two-sided p of z = 1.959964: 0.05.
        close(
            erfc(1.959_963_984_540_054 / std::f64::consts::SQRT_2),
            0.05,
            1e-12,
        );
        assert_eq!(erfc(30.0), 0.0);
    }

    #[test]
    fn u_complete_separation() {
        // By hand: R_a = 15, U_a = 0, mu = 12.5, sigma^2 = 25 * 11 / 12, z = 12 / sigma =
        // 2.50672, p = erfc(2.50672 / sqrt 2) = 0.012186.
        let a = [1.0, 2.0, 3.0, 4.0, 5.0];
        let b = [6.0, 7.0, 8.0, 9.0, 10.0];
        let t = mann_whitney(&a, &b).unwrap();
        assert_eq!(t.u, 0.0);
        close(t.z, 12.0 / (25.0f64 * 11.0 / 12.0).sqrt(), 1e-12);
        close(t.z, 2.506_7, 1e-4);
        close(t.p, 0.012_186, 1e-5);
        assert!(!t.exact);
        // The other way round: same p, the sign of z turns.
        let r = mann_whitney(&b, &a).unwrap();
        assert_eq!(r.u, 25.0);
        close(r.z, -t.z, 1e-12);
        close(r.p, t.p, 1e-15);
    }

    #[test]
    fn u_textbook_example() {
        // A worked example: a = 19 22 16 29 24, b = 20 11 17 12; pooled ranks 11 1, 12 2,
        // 16 3, 17 4, 19 5, 20 6, 22 7, 24 8, 29 9: R_a = 5+7+3+9+8 = 32, U_a = 32 - 15 = 17,
        // U_b = 3. mu = 10, sigma^2 = 20*10/12 = 16.667, z = (7 - 0.5)/4.0825 = 1.5922,
        // p = 0.11134.
        let a = [19.0, 22.0, 16.0, 29.0, 24.0];
        let b = [20.0, 11.0, 17.0, 12.0];
        let t = mann_whitney(&a, &b).unwrap();
        assert_eq!(t.u, 17.0);
        close(t.z, -6.5 / (200.0f64 / 12.0).sqrt(), 1e-12);
        close(t.p, 0.111_34, 1e-4);
    }

    #[test]
    fn u_with_ties() {
        // a = 1 2 2 3, b = 2 3 3 4 (N = 8): ranks 1 -> 1; 2 x3 -> 3; 3 x3 -> 6; 4 -> 8.
        // R_a = 1 + 3 + 3 + 6 = 13, U_a = 13 - 10 = 3, mu = 8. Ties: 2 groups of 3:
        // sum(t^3 - t) = 48; sigma^2 = 16/12 * (9 - 48/56) = 10.857; z = 4.5 / 3.2950 = 1.3657,
        // p = 0.17203.
        let t = mann_whitney(&[1.0, 2.0, 2.0, 3.0], &[2.0, 3.0, 3.0, 4.0]).unwrap();
        assert_eq!(t.u, 3.0);
        let sigma = (16.0f64 / 12.0 * (9.0 - 48.0 / 56.0)).sqrt();
        close(t.z, 4.5 / sigma, 1e-12);
        close(t.p, 0.172_03, 1e-4);
    }

    #[test]
    fn identical_samples_are_never_significant() {
        let a = [5.0, 7.0, 7.0, 9.0, 12.0, 3.0, 8.0];
        let t = mann_whitney(&a, &a).unwrap();
        assert_eq!(t.p, 1.0);
        assert_eq!(t.z, 0.0);
        // All values equal everywhere (icount): no variance, no change.
        let c = [4003.0; 10];
        let t = mann_whitney(&c, &c).unwrap();
        assert_eq!((t.p, t.exact), (1.0, false));
    }

    #[test]
    fn constant_but_different_is_exact() {
        let t = mann_whitney(&[4003.0; 6], &[4004.0; 6]).unwrap();
        assert!(t.exact);
        assert_eq!(t.p, 0.0);
        assert!(t.z > 0.0);
        let t = mann_whitney(&[4004.0; 6], &[4003.0; 6]).unwrap();
        assert!(t.exact && t.z < 0.0);
        // One side constant, the other not: the ordinary test.
        let t = mann_whitney(&[4003.0; 6], &[4003.0, 4004.0, 4003.0, 4005.0, 4003.0]).unwrap();
        assert!(!t.exact && t.p > 0.0);
    }

    #[test]
    fn median_even_and_odd() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(median(&[]), None);
    }

    #[test]
    fn load_rejects_what_it_does_not_read() {
        let e = load_str(r#"{"schema":"baremark-diff/1","rows":[]}"#).unwrap_err();
        assert!(
            format!("{e:#}").contains("schema `baremark-diff/1`"),
            "{e:#}"
        );
        let e = load_str(r#"{"benchmarks":[]}"#).unwrap_err();
        assert!(format!("{e:#}").contains("without `schema`"), "{e:#}");
        let e = load_str("hello\nworld\n").unwrap_err();
        assert!(format!("{e:#}").contains("neither a results JSON"), "{e:#}");
        let e = load_str(r#"{"schema":"baremark-results/1","benchmarks":[{"bench":"x"}]}"#)
            .unwrap_err();
        assert!(format!("{e:#}").contains("`payload` is missing"), "{e:#}");
    }
}
