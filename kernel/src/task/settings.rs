//! What the run configuration gives the tasks (run.cfg `sample`, `counters`,
//! `mux_interval_us`): the types `config` parses into and the runner (`run::policy`) reads.

use alloc::string::String;
use alloc::vec::Vec;

/// The default `mux_interval_us` (perf rotates every 4 ms on a 250 Hz kernel; 1 ms here).
pub const MUX_INTERVAL_US_DEFAULT: u32 = 1000;

/// One sampled event of run.cfg `sample`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SampleSpec {
    /// A `counters_configure` entry (a GP event-select encoding without EN and INT, or a fixed
    /// counter entry).
    pub word: u64,
    /// Events between two samples (1..=`threshold::PERIOD_MAX`).
    pub period: u64,
}

/// The most sampled events (more than any PMU has GP counters today).
pub const SAMPLE_MAX: usize = 8;

/// Which payloads may program counters (run.cfg `counters`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum CounterPermission {
    #[default]
    All,
    None,
    /// Only these payloads (a spawned task is allowed by its own payload name).
    Only(Vec<String>),
}

impl CounterPermission {
    /// Whether the payload `name` may program counters.
    pub fn allows(&self, name: &str) -> bool {
        match self {
            CounterPermission::All => true,
            CounterPermission::None => false,
            CounterPermission::Only(names) => names.iter().any(|n| n == name),
        }
    }
}

/// Which CPU each payload runs on (run.cfg `pin = NAME@CPU,...`, `*@CPU` for every payload
/// not named): a task runs on its CPU from start to end, and so do the tasks it spawns.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Pins {
    /// `(payload name or "*", CPU index)`, in the order given.
    pub pins: Vec<(String, usize)>,
}

/// CPU indexes a pin may name: below the kernel's most CPUs (`baremark_hw::layout::MAX_CPUS`,
/// checked equal in `boot::cpus`).
pub const PIN_CPU_MAX: usize = 512;

/// The most pins one run.cfg may give.
pub const PINS_MAX: usize = 64;

impl Pins {
    /// The CPU payload `name` runs on: its own pin, else `*`'s, else the boot CPU (0).
    pub fn cpu_of(&self, name: &str) -> usize {
        self.pins
            .iter()
            .find(|(n, _)| n == name)
            .or_else(|| self.pins.iter().find(|(n, _)| n == "*"))
            .map_or(0, |(_, cpu)| *cpu)
    }

    /// Parses `NAME@CPU[,NAME@CPU...]` (CPU a decimal index below `max_cpu`).
    pub fn parse(value: &str, max_cpu: usize) -> Option<Pins> {
        let mut pins = Vec::new();
        for part in value.split(',') {
            let (name, cpu) = part.trim().rsplit_once('@')?;
            let name = name.trim();
            let cpu: usize = cpu.trim().parse().ok()?;
            let name_ok = name == "*"
                || (!name.is_empty()
                    && name
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.'));
            if !name_ok || cpu >= max_cpu || pins.iter().any(|(n, _)| n == name) {
                return None;
            }
            pins.push((String::from(name), cpu));
        }
        (pins.len() <= PINS_MAX).then_some(Pins { pins })
    }
}

/// Which CPUs run the foreground payloads (run.cfg `cpus`): every payload without a pin of its
/// own (`NAME@CPU`) runs on each of them in turn, the whole list on the first CPU, then on the
/// next, the other CPUs idle. Resolved by the kernel from the CPUs it started ([`CpuChoice::resolve`]),
/// so `all` and `each-type` work on any machine the image boots on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CpuChoice {
    /// These CPU indexes, ascending, each once.
    List(Vec<usize>),
    /// Every online CPU.
    All,
    /// One CPU of each core type (the lowest index of each; a part with one kind: CPU 0).
    EachType,
}

/// The most CPUs a `cpus` list may name (as many as the kernel starts).
pub const CPU_LIST_MAX: usize = PIN_CPU_MAX;

impl CpuChoice {
    /// Parses `all`, `each-type` or a list of indexes and ranges, `0,2-3` (ascending, no CPU
    /// twice, each below `max_cpu`).
    pub fn parse(value: &str, max_cpu: usize) -> Option<CpuChoice> {
        match value.trim() {
            "all" => return Some(CpuChoice::All),
            "each-type" => return Some(CpuChoice::EachType),
            _ => {}
        }
        let mut cpus: Vec<usize> = Vec::new();
        for part in value.split(',') {
            let part = part.trim();
            let (lo, hi) = match part.split_once('-') {
                Some((a, b)) => (a.trim(), b.trim()),
                None => (part, part),
            };
            let digits = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit());
            if !digits(lo) || !digits(hi) {
                return None;
            }
            let (lo, hi): (usize, usize) = (lo.parse().ok()?, hi.parse().ok()?);
            if lo > hi || hi >= max_cpu || cpus.last().is_some_and(|&l| lo <= l) {
                return None;
            }
            cpus.extend(lo..=hi);
        }
        Some(CpuChoice::List(cpus))
    }

    /// The CPU indexes to run on, from the online CPUs `(index, core type name)` in index
    /// order: a list as given (a CPU not online is reported by the runner when it is its
    /// turn), every online CPU, or the first of each core type.
    pub fn resolve(&self, online: &[(usize, &str)]) -> Vec<usize> {
        match self {
            CpuChoice::List(cpus) => cpus.clone(),
            CpuChoice::All => online.iter().map(|(i, _)| *i).collect(),
            CpuChoice::EachType => {
                let mut seen: Vec<&str> = Vec::new();
                let mut cpus = Vec::new();
                for (i, t) in online {
                    if !seen.contains(t) {
                        seen.push(t);
                        cpus.push(*i);
                    }
                }
                if cpus.is_empty() {
                    cpus.push(0);
                }
                cpus
            }
        }
    }
}

#[cfg(test)]
mod pin_tests {
    use super::*;

    #[test]
    fn pins_parse_and_resolve() {
        let p = Pins::parse("add-latency@3, *@1", 512).unwrap();
        assert_eq!(p.cpu_of("add-latency"), 3);
        assert_eq!(p.cpu_of("hello"), 1);
        assert_eq!(Pins::default().cpu_of("hello"), 0);
        for bad in [
            "", "x", "x@", "@3", "x@-1", "x@512", "x@1,x@2", "a b@1", "x@1;",
        ] {
            assert_eq!(Pins::parse(bad, 512), None, "{bad}");
        }
    }

    #[test]
    fn cpu_choices_parse_and_resolve() {
        assert_eq!(
            CpuChoice::parse("0,2-3", 512),
            Some(CpuChoice::List(alloc::vec![0, 2, 3]))
        );
        assert_eq!(CpuChoice::parse(" all ", 512), Some(CpuChoice::All));
        assert_eq!(
            CpuChoice::parse("each-type", 512),
            Some(CpuChoice::EachType)
        );
        for bad in [
            "", "x", "1,", "3-2", "2,1", "1,1", "0-2,2", "512", "-1", "1-", "a-b", "1 2",
        ] {
            assert_eq!(CpuChoice::parse(bad, 512), None, "{bad}");
        }
        let online = [(0, "core"), (1, "core"), (2, "atom"), (3, "atom")];
        assert_eq!(CpuChoice::All.resolve(&online), [0, 1, 2, 3]);
        assert_eq!(CpuChoice::EachType.resolve(&online), [0, 2]);
        assert_eq!(
            CpuChoice::EachType.resolve(&[(0, "uniform"), (1, "uniform")]),
            [0]
        );
        assert_eq!(CpuChoice::List(alloc::vec![5]).resolve(&online), [5]);
    }
}
