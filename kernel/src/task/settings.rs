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
}
