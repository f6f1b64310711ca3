//! Baselines: a run's results saved under a name in a folder of the user's repository
//! (`--save-baseline NAME`, `--baseline-dir DIR`), and a later run compared with one
//! (`--baseline NAME`): every benchmark and event of the baseline must still be there, and no
//! median may move beyond the tolerance. On the emulated PMU (both runs) counts are exact, so
//! any change fails; on hardware `diff`'s test decides what changed (a significant change
//! beyond `--baseline-tolerance` percent fails).

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use super::Case;
use crate::diff::{self, Input, Status};
use crate::results::Results;

/// Where the baselines live unless `--baseline-dir` says otherwise (relative to the current
/// folder: commit it with the repository).
pub const DEFAULT_DIR: &str = "baremark-baselines";

/// A baseline's file: `DIR/NAME.json`, NAME checked (a file name, not a path).
pub fn path(dir: &Path, name: &str) -> Result<PathBuf> {
    let ok = !name.is_empty()
        && name.len() <= 100
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
        && !name.starts_with('.');
    if !ok {
        bail!("baseline `{name}`: give a name of letters, digits, `.`, `_` and `-`");
    }
    Ok(dir.join(format!("{name}.json")))
}

/// Saves `res` (the results JSON, `baremark-results/1`) as baseline `name`.
pub fn save(res: &Results, dir: &Path, name: &str) -> Result<PathBuf> {
    let p = path(dir, name)?;
    if res.benchmarks.is_empty() {
        bail!("baseline `{name}`: the run has no benchmark results to save");
    }
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    std::fs::write(&p, res.to_json()).with_context(|| format!("writing {}", p.display()))?;
    Ok(p)
}

/// Loads baseline `name`: its benchmarks (for `diff`) and its results (for `within`).
pub fn load(dir: &Path, name: &str) -> Result<(Input, Results)> {
    let p = path(dir, name)?;
    let bytes = std::fs::read(&p).with_context(|| {
        format!(
            "baseline `{name}`: reading {} (save one with --save-baseline {name})",
            p.display()
        )
    })?;
    let input = diff::load_bytes(&bytes).with_context(|| format!("baseline {}", p.display()))?;
    let results = Results {
        benchmarks: input.benchmarks.clone(),
        ..Results::from_records(&[])
    };
    Ok((input, results))
}

/// The baseline checks: one case per benchmark and event of the baseline.
pub fn compare(
    base: &Input,
    base_name: &str,
    current: &Results,
    tolerance_pct: f64,
    alpha: f64,
) -> Vec<Case> {
    let now = Input {
        kind: "this run",
        benchmarks: current.benchmarks.clone(),
        errors: Vec::new(),
    };
    let d = diff::compare(base, &now, (base_name, "this run"), alpha);
    let exact_runs = base_emulated(base) && current.machine.pmu_emulated;
    let mut out = Vec::new();
    for row in &d.rows {
        if row.status == Status::OnlyInB {
            continue;
        }
        let title = if row.payload == row.bench {
            row.payload.clone()
        } else {
            format!("{}/{}", row.payload, row.bench)
        };
        let mut c = Case {
            group: "baseline",
            name: format!("{title} {}", row.event),
            expected: match (row.median_a, exact_runs) {
                (Some(m), true) => format!("= {} (baseline {base_name}, exact)", super::fmt(m)),
                (Some(m), false) => format!(
                    "{} (baseline {base_name}) within {tolerance_pct}%",
                    super::fmt(m)
                ),
                (None, _) => format!("as baseline {base_name}"),
            },
            got: row.median_b.map_or("-".into(), super::fmt),
            passed: false,
            why: None,
            location: None,
        };
        match row.status {
            Status::OnlyInA => c.why = Some("not in this run".into()),
            Status::NotMeasured if row.median_a.is_none() => c.passed = true,
            _ => match (row.median_a, row.median_b) {
                (Some(a), Some(b)) if exact_runs => {
                    c.passed = a == b;
                    if !c.passed {
                        c.why = Some(format!(
                            "changed by {} ({}%) on the emulated PMU, where counts are exact",
                            super::fmt(b - a),
                            row.change_pct.map_or("-".into(), |p| format!("{p:+.3}"))
                        ));
                    }
                }
                (Some(_), Some(_)) => {
                    let beyond = row.change_pct.is_some_and(|p| p.abs() > tolerance_pct);
                    c.passed = !(row.significant && beyond);
                    if !c.passed {
                        c.why = Some(format!(
                            "a significant change of {:+.2}% (p = {})",
                            row.change_pct.unwrap_or(0.0),
                            row.p.map_or("-".into(), |p| format!("{p:.2e}"))
                        ));
                    }
                }
                (Some(_), None) => c.why = Some("not measured in this run".into()),
                (None, _) => c.passed = true,
            },
        }
        out.push(c);
    }
    out
}

fn base_emulated(base: &Input) -> bool {
    base.benchmarks.iter().all(|b| {
        b.typed
            .iter()
            .filter(|r| r.supported)
            .all(|r| r.emulated || r.event == "tsc")
    }) && base
        .benchmarks
        .iter()
        .any(|b| b.typed.iter().any(|r| r.emulated))
}
