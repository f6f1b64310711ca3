//! mapfile.csv: which event file describes which CPU; rows found by header name, rows not
//! understood kept with their reason, and the core event files for a CPU.

use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};

use super::pattern::Pattern;
use super::{PerfmonError, parse_num, read};
use crate::cpu::CpuModel;
use crate::pmu::CoreType;

/// One row of mapfile.csv.
#[derive(Clone, Debug)]
pub struct MapEntry {
    /// 1-based line in mapfile.csv.
    pub line: u64,
    /// The `Family-model` pattern as written.
    pub family_model: String,
    pattern: Pattern,
    pub version: String,
    /// As written, `/SKL/events/skylake_core.json` (relative to the repository root).
    pub filename: String,
    /// `core`, `hybridcore`, `uncore`, `metrics`, ...
    pub event_type: String,
    /// Hybrid parts: the core type the file describes.
    pub core_type: Option<CoreType>,
    /// Hybrid parts: CPUID 0x1A EAX\[23:0\].
    pub native_model_id: Option<u32>,
    /// Hybrid parts: `Core`, `Atom`, `LowPower_Atom`.
    pub core_role: Option<String>,
}

impl MapEntry {
    /// Whether the row names a core event file (`core` or `hybridcore`).
    pub fn is_core(&self) -> bool {
        self.event_type.eq_ignore_ascii_case("core")
            || self.event_type.eq_ignore_ascii_case("hybridcore")
    }

    /// Whether the row's `Family-model` pattern covers `cpu` (see the module docs for
    /// steppings).
    pub fn matches(&self, cpu: &CpuModel) -> bool {
        self.pattern.matches_cpu(cpu)
    }

    /// The file's path under the repository root `root`; `None` if the name would leave it.
    pub fn path_under(&self, root: &Path) -> Option<PathBuf> {
        let rel = Path::new(self.filename.trim_start_matches(['/', '\\']));
        // The mapfile is user input: do not let it point outside the repository.
        let inside = rel
            .components()
            .all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
        (inside && !self.filename.trim().is_empty()).then(|| root.join(rel))
    }
}

/// A mapfile row that was not understood.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BadRow {
    pub line: u64,
    pub reason: String,
}

/// A parsed mapfile.csv.
#[derive(Clone, Debug)]
pub struct Mapfile {
    pub entries: Vec<MapEntry>,
    pub bad_rows: Vec<BadRow>,
}

impl Mapfile {
    /// The core event files mapfile.csv lists for `cpu`, in file order, each file once. With a
    /// core type, hybrid rows of the other type are left out; without one, a hybrid part yields
    /// a file per core type.
    pub fn core_files(&self, cpu: &CpuModel, core_type: Option<CoreType>) -> Vec<MapEntry> {
        let mut seen = BTreeSet::new();
        self.entries
            .iter()
            .filter(|e| e.is_core() && e.matches(cpu))
            .filter(|e| match (core_type, e.core_type) {
                (Some(want), Some(have)) => want == have,
                _ => true,
            })
            .filter(|e| seen.insert(e.filename.clone()))
            .cloned()
            .collect()
    }
}

/// Parses mapfile.csv text; `file` names it in errors.
pub fn parse_mapfile(file: &str, text: &str) -> Result<Mapfile, PerfmonError> {
    let err = |line: Option<u64>, reason: String| PerfmonError::Mapfile {
        file: file.to_string(),
        line,
        reason,
    };
    let mut rd = csv::ReaderBuilder::new()
        .flexible(true)
        .trim(csv::Trim::All)
        .from_reader(text.as_bytes());
    let headers = rd
        .headers()
        .map_err(|e| err(Some(1), e.to_string()))?
        .clone();
    let col = |name: &str| {
        headers
            .iter()
            .position(|h| h.trim_start_matches('\u{feff}').eq_ignore_ascii_case(name))
    };
    let need = |name: &str| col(name).ok_or_else(|| err(Some(1), format!("no \"{name}\" column")));
    let (c_fm, c_file, c_type) = (need("Family-model")?, need("Filename")?, need("EventType")?);
    let (c_ver, c_core, c_native, c_role) = (
        col("Version"),
        col("Core Type"),
        col("Native Model ID"),
        col("Core Role Name"),
    );

    let mut map = Mapfile {
        entries: Vec::new(),
        bad_rows: Vec::new(),
    };
    for rec in rd.records() {
        let rec = rec.map_err(|e| err(e.position().map(|p| p.line()), e.to_string()))?;
        let line = rec.position().map_or(0, |p| p.line());
        let cell = |c: Option<usize>| c.and_then(|c| rec.get(c)).unwrap_or("").to_string();
        if rec.iter().all(|c| c.is_empty()) {
            continue;
        }
        let row = (|| -> Result<MapEntry, String> {
            let family_model = cell(Some(c_fm));
            if family_model.is_empty() {
                return Err("empty Family-model".into());
            }
            let pattern = Pattern::parse(&family_model)
                .map_err(|r| format!("Family-model \"{family_model}\": {r}"))?;
            let filename = cell(Some(c_file));
            if filename.is_empty() {
                return Err("empty Filename".into());
            }
            let core_text = cell(c_core);
            let core_type = if core_text.is_empty() {
                None
            } else {
                let by_code = parse_num(&core_text)
                    .ok()
                    .and_then(|n| u8::try_from(n).ok())
                    .and_then(CoreType::from_cpuid);
                let by_name = [CoreType::Atom, CoreType::Core]
                    .into_iter()
                    .find(|ct| core_text.eq_ignore_ascii_case(ct.perfmon_name()));
                Some(by_code.or(by_name).ok_or_else(|| {
                    format!("Core Type \"{core_text}\" is neither 0x20 (Atom) nor 0x40 (Core)")
                })?)
            };
            let native_text = cell(c_native);
            let native_model_id = if native_text.is_empty() {
                None
            } else {
                Some(
                    parse_num(&native_text)
                        .ok()
                        .and_then(|n| u32::try_from(n).ok())
                        .ok_or_else(|| {
                            format!("Native Model ID \"{native_text}\" is not a number")
                        })?,
                )
            };
            let role = cell(c_role);
            Ok(MapEntry {
                line,
                family_model,
                pattern,
                version: cell(c_ver),
                filename,
                event_type: cell(Some(c_type)),
                core_type,
                native_model_id,
                core_role: (!role.is_empty()).then_some(role),
            })
        })();
        match row {
            Ok(e) => map.entries.push(e),
            Err(reason) => map.bad_rows.push(BadRow { line, reason }),
        }
    }
    Ok(map)
}

/// Reads and parses a mapfile.csv.
pub fn load_mapfile(path: &Path) -> Result<Mapfile, PerfmonError> {
    let text = read(path)?;
    parse_mapfile(&path.display().to_string(), &text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::perfmon::pattern::SUBJECT_MAX;
    use crate::perfmon::tests::{cpu, pat};

    /// Fuzzing regression (perfmon_mapfile target): nested repeats took time exponential in
    /// their depth; this row hung the import for minutes.
    #[test]
    fn nested_repeats_match_in_polynomial_time() {
        let text = "Family-model,Filename,EventType\n\
                    ((((((((((((((((.*)*)*)*)*)*)*)*)*)*)*)*)*)*)*)*)*,/x.json,core\n\
                    ((((((((((.|..)*)*)*)*)*)*)*)*)*-55)+,/y.json,core\n";
        let map = parse_mapfile("m.csv", text).unwrap();
        let started = std::time::Instant::now();
        let files = map.core_files(&cpu("GenuineIntel-6-55"), None);
        assert_eq!(files.len(), 2);
        assert!(map.core_files(&cpu("GenuineIntel-6-56"), None).len() == 1);
        // Milliseconds now; minutes before.
        assert!(started.elapsed().as_secs() < 5, "{:?}", started.elapsed());
        // Repeats of what can match empty still match.
        assert!(pat("(a?)+b").full_match("b"));
        assert!(pat("(a*)+").full_match(""));
        assert!(pat("(ab|a)*c").full_match("aababc"));
        assert!(!pat("(ab|a)+c").full_match("c"));
        assert!(!pat("x").full_match(&"x".repeat(SUBJECT_MAX + 1)));
        assert!(pat("x*").full_match(&"x".repeat(SUBJECT_MAX)));
    }

    #[test]
    fn mapfile_rows() {
        let text = "Family-model,Version,Filename,EventType,Core Type,Native Model ID,Core Role Name\n\
                    GenuineIntel-6-(97|9A),V1,/H/a_core.json,hybridcore,0x20,0x000001,Atom\n\
                    GenuineIntel-6-(97|9A),V1,/H/c_core.json,hybridcore,0x40,0x000001,Core\n\
                    GenuineIntel-6-(97,V1,/H/x_core.json,core,,,\n\
                    GenuineIntel-6-99,V1,/H/y_core.json,core,0x30,,\n\
                    \n\
                    GenuineIntel-6-97,V1,/H/uncore.json,uncore,,,\n";
        let m = parse_mapfile("mapfile.csv", text).unwrap();
        assert_eq!(m.entries.len(), 3);
        assert_eq!(
            m.bad_rows.iter().map(|r| r.line).collect::<Vec<_>>(),
            vec![4, 5]
        );
        assert!(m.bad_rows[1].reason.contains("Core Type"));
        let adl = cpu("GenuineIntel-6-9A");
        assert_eq!(m.core_files(&adl, None).len(), 2);
        let atom = m.core_files(&adl, Some(CoreType::Atom));
        assert_eq!(atom.len(), 1);
        assert_eq!(atom[0].filename, "/H/a_core.json");
        assert_eq!(atom[0].native_model_id, Some(1));
        assert_eq!(atom[0].core_role.as_deref(), Some("Atom"));
        assert!(matches!(
            parse_mapfile("m.csv", "Family-model,Version\nx,y\n"),
            Err(PerfmonError::Mapfile { line: Some(1), .. })
        ));
        // The Filename must stay inside the repository.
        let mut e = m.entries[0].clone();
        e.filename = "/../../etc/passwd".into();
        assert!(e.path_under(Path::new("/r")).is_none());
        assert_eq!(
            m.entries[0].path_under(Path::new("/r")),
            Some(PathBuf::from("/r/H/a_core.json"))
        );
    }
}
