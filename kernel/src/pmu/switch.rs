//! A task switch's PMU work as lists of MSR writes and RDPMC indices, computed once per counter
//! configuration by the backend ([`super::backend::PmuBackend::switch_plan`]) and replayed at
//! every switch by `task::hwswitch` through [`BatchMsr`]: no backend call, no lock, no
//! allocation, no decision per counter at switch time.
//!
//! A plan assumes the task owns the PMU while it runs (the task runner's rule: no other
//! counter counts while a task is in ring 3, and everything is stopped while the kernel runs).
//! So enabling writes the task's counters alone into the global control (Intel v2+, AMD
//! PerfMonV2), or sets EN in each event select (Intel v1, AMD legacy), and disabling stops
//! everything.

use alloc::vec::Vec;

use super::msr::{Msr, MsrFault, RecordingMsr};

/// The most MSRs in one list (the unrolled blocks of `baremark-hw`'s batched door).
pub const LIST_MAX: usize = 24;

/// The overflow status register of a PMU that has one, and each slot's bit in it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OverflowStatus {
    /// Read to see which counters wrapped (Intel GLOBAL_STATUS, AMD PerfCntrGlobalStatus).
    pub status: u32,
    /// Written with the bits to clear them (Intel GLOBAL_OVF_CTRL / STATUS_RESET, AMD
    /// PerfCntrGlobalStatusClr).
    pub clear: u32,
    /// Slot i's bit.
    pub bits: Vec<u64>,
}

/// What a switch does to the PMU for one task's counters (slot i on the i-th counter given to
/// `switch_plan`). Lists are written **last element first** (the batched door's order): the
/// order within `program` does not matter (everything is stopped), the other lists hold one
/// write on PMUs with a global control.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SwitchPlan {
    /// Loads the slots' events with the counters stopped, and clears their overflow status
    /// bits: a switch-in after anything else used the counters.
    pub program: Vec<(u32, u64)>,
    /// Slot i's counter is set by writing MSR `counter_write[i].0`; `.1`: that write takes
    /// any value below 2^width (else, Intel without FW_WRITE, only values that survive the
    /// sign extension of bit 31).
    pub counter_write: Vec<(u32, bool)>,
    /// Starts the slots' counters.
    pub enable: Vec<(u32, u64)>,
    /// Stops them (and every other counter).
    pub disable: Vec<(u32, u64)>,
    /// RDPMC ECX of slot i's counter (the kernel's reads at the switch-out).
    pub rdpmc: Vec<u32>,
    /// `None`: no status register (Intel v1, AMD legacy): a wrap shows as a reading below the
    /// last one.
    pub overflow: Option<OverflowStatus>,
}

impl SwitchPlan {
    /// A counter started and stopped by the EN bit of its control register (Intel v1, AMD
    /// without PerfMonV2): the control is loaded with `value` (EN clear), rewritten with EN set
    /// to start and clear to stop.
    pub fn gate_by_enable_bit(&mut self, control: u32, value: u64, en: u64) {
        self.program.push((control, value & !en));
        self.enable.push((control, value | en));
        self.disable.push((control, value & !en));
    }

    /// Counters started and stopped together by a global control register (Intel v2+, AMD
    /// PerfMonV2): `slot_bits[i]` is slot i's bit in it and in the overflow status; the
    /// switch-in's programming clears the slots' status bits.
    pub fn gate_globally(&mut self, control: u32, status: u32, clear: u32, slot_bits: Vec<u64>) {
        let bits = slot_bits.iter().fold(0, |a, b| a | b);
        self.program.push((clear, bits));
        self.enable.push((control, bits));
        self.disable.push((control, 0));
        self.overflow = Some(OverflowStatus {
            status,
            clear,
            bits: slot_bits,
        });
    }
}

/// MSR access in lists, for the switch: [`Msr`] plus a checked list type. On the machine
/// (`pmu::machine::HwMsr`) a list's MSRs are checked against the kernel's writable set once,
/// when it is made, and a list is written by one call with no per-write check; here, on the
/// host, lists are plain and replayed through [`Msr::write`].
pub trait BatchMsr: Msr {
    /// A list of MSRs, checked for writing.
    type List: Clone + core::fmt::Debug;
    /// The list of `msrs` (at most [`LIST_MAX`]); refused if one may not be written.
    fn list(&self, msrs: &[u32]) -> Result<Self::List, MsrFault>;
    /// Writes `values[i]` to the list's MSR i, last element first.
    fn write_list(&mut self, list: &Self::List, values: &[u64]) -> Result<(), MsrFault>;
    /// RDPMC with `ecx[i]` into `out[i]`, last element first.
    fn rdpmc_list(&mut self, ecx: &[u32], out: &mut [u64]) -> Result<(), MsrFault>;
}

/// A host list: the MSRs, replayed one [`Msr::write`] at a time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlainList(pub Vec<u32>);

fn plain_list(msrs: &[u32]) -> Result<PlainList, MsrFault> {
    if msrs.len() > LIST_MAX {
        return Err(MsrFault::Protected);
    }
    Ok(PlainList(msrs.to_vec()))
}

fn replay_writes(msr: &mut impl Msr, list: &PlainList, values: &[u64]) -> Result<(), MsrFault> {
    if values.len() < list.0.len() {
        return Err(MsrFault::Protected);
    }
    for (&m, &v) in list.0.iter().zip(values).rev() {
        msr.write(m, v)?;
    }
    Ok(())
}

fn replay_rdpmc(msr: &mut impl Msr, ecx: &[u32], out: &mut [u64]) -> Result<(), MsrFault> {
    if out.len() < ecx.len() || ecx.len() > LIST_MAX {
        return Err(MsrFault::Protected);
    }
    for (&e, o) in ecx.iter().zip(out.iter_mut()).rev() {
        *o = msr.rdpmc(e)?;
    }
    Ok(())
}

/// The host's [`Msr`]s, whose lists are [`PlainList`]s replayed one access at a time.
pub trait ReplayMsr: Msr {}

impl<M: Msr> ReplayMsr for RecordingMsr<M> {}

impl<M: ReplayMsr> BatchMsr for M {
    type List = PlainList;
    fn list(&self, msrs: &[u32]) -> Result<PlainList, MsrFault> {
        plain_list(msrs)
    }
    fn write_list(&mut self, list: &PlainList, values: &[u64]) -> Result<(), MsrFault> {
        replay_writes(self, list, values)
    }
    fn rdpmc_list(&mut self, ecx: &[u32], out: &mut [u64]) -> Result<(), MsrFault> {
        replay_rdpmc(self, ecx, out)
    }
}
