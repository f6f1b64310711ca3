//! What the run configuration says about counters for the tasks (run.cfg `sample`,
//! `counters`, `mux_interval_us`, `system`), set once before the payloads run and read by the
//! runner's counter features (`notify`, `mux`, `system`).

use alloc::vec::Vec;

use crate::task::settings::{CounterPermission, SampleSpec};

/// What the run configuration says about counters (run.cfg `sample`, `counters`).
#[derive(Clone, Debug, Default)]
pub struct Policy {
    pub sample: Vec<SampleSpec>,
    pub counters: CounterPermission,
    /// A multiplexed configuration's group turn (run.cfg `mux_interval_us`).
    pub mux_interval_us: u32,
    /// The APIC timer frequency (the timer that ends a group's turn), if known.
    pub timer_hz: Option<u64>,
    /// run.cfg `system`: system-wide counters over the run.
    pub system: Vec<u64>,
    /// run.cfg `pin`: the CPU each payload runs on.
    pub pins: crate::task::settings::Pins,
    /// run.cfg `background`: payloads run on their CPU while the others run.
    pub background: crate::task::settings::Pins,
    /// run.cfg `cpus`: the CPUs the foreground payloads run on, each in turn.
    pub cpus: Option<crate::task::settings::CpuChoice>,
}

pub(super) static POLICY: spin::RwLock<Option<Policy>> = spin::RwLock::new(None);

/// Sets the run's counter policy (before the payloads run).
pub fn set_policy(policy: Policy) {
    *POLICY.write() = Some(policy);
}

/// run.cfg `mux_interval_us` (its default before the policy is set).
pub(super) fn mux_interval_us() -> u32 {
    POLICY
        .read()
        .as_ref()
        .map_or(crate::task::settings::MUX_INTERVAL_US_DEFAULT, |p| {
            p.mux_interval_us
        })
}

/// The APIC timer frequency, if known.
pub(super) fn timer_hz() -> Option<u64> {
    POLICY.read().as_ref().and_then(|p| p.timer_hz)
}

/// run.cfg `system`.
pub(super) fn system_events() -> Vec<u64> {
    POLICY
        .read()
        .as_ref()
        .map(|p| p.system.clone())
        .unwrap_or_default()
}

pub(super) fn sampled_events() -> Vec<SampleSpec> {
    POLICY
        .read()
        .as_ref()
        .map(|p| p.sample.clone())
        .unwrap_or_default()
}

/// The CPU payload `name` runs on in the background (run.cfg `background`), if it does.
pub(super) fn background_cpu(name: &str) -> Option<usize> {
    POLICY.read().as_ref().and_then(|p| {
        p.background
            .pins
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, cpu)| *cpu)
    })
}

/// Whether payload `name` has a pin of its own (run.cfg `pin = NAME@CPU`, not `*`).
pub(super) fn pinned_by_name(name: &str) -> bool {
    POLICY
        .read()
        .as_ref()
        .is_some_and(|p| p.pins.pins.iter().any(|(n, _)| n == name))
}

/// The passes over the foreground payloads (run.cfg `cpus`): one per CPU listed, resolved
/// from the CPUs online; `[None]` without `cpus` (each payload once, where `pin` puts it).
pub(super) fn passes() -> Vec<Option<usize>> {
    let choice = POLICY.read().as_ref().and_then(|p| p.cpus.clone());
    let Some(choice) = choice else {
        return alloc::vec![None];
    };
    let cpus = crate::platform::cpus::all();
    let mut online: Vec<(usize, &str)> = cpus
        .iter()
        .filter(|c| c.state == crate::platform::cpus::CpuState::Online)
        .filter_map(|c| {
            Some((
                c.index?,
                c.core_type
                    .map_or("uniform", crate::platform::cpus::CoreType::name),
            ))
        })
        .collect();
    online.sort_unstable();
    choice.resolve(&online).into_iter().map(Some).collect()
}

/// The CPU payload `name` runs on (run.cfg `pin`; the boot CPU by default).
pub(super) fn cpu_of(name: &str) -> usize {
    POLICY.read().as_ref().map_or(0, |p| p.pins.cpu_of(name))
}
