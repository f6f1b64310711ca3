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
