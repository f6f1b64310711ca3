//! The `Msr` trait: how PMU code reaches model-specific registers (and RDPMC).
//!
//! On the machine the implementation is `crate::pmu::machine::HwMsr`, which goes through
//! `baremark-hw`'s MSR door (kernel/hw/src/msr.rs, the only place with RDMSR/WRMSR/RDPMC). On the
//! host the tests use the simulated PMU (`pmu::sim`) and [`RecordingMsr`].

use alloc::vec::Vec;

/// Why an access did not happen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MsrFault {
    /// The CPU (or the model) raised #GP: no such register, or a value it refuses.
    GeneralProtection,
    /// RDPMC raised #UD (QEMU's TCG does for every RDPMC).
    InvalidOpcode,
    /// The register is outside what the kernel may write through the public door.
    Protected,
}

/// Access to MSRs and to RDPMC. Every access is fallible: a PMU driver must cope with a
/// hypervisor that advertises counters but faults on some of their MSRs.
pub trait Msr {
    fn read(&mut self, msr: u32) -> Result<u64, MsrFault>;
    fn write(&mut self, msr: u32, value: u64) -> Result<(), MsrFault>;
    /// RDPMC with ECX = `ecx` (GP counter n: n; Intel fixed counter i: (1 << 30) | i; bit 31:
    /// the legacy "fast" read of the low 32 bits).
    fn rdpmc(&mut self, ecx: u32) -> Result<u64, MsrFault>;
}

/// One MSR access, as recorded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    Read(u32),
    Write(u32, u64),
    Rdpmc(u32),
}

/// Wraps another `Msr` and records every access, for golden-sequence tests.
pub struct RecordingMsr<M> {
    pub inner: M,
    pub log: Vec<Access>,
}

impl<M: Msr> RecordingMsr<M> {
    pub fn new(inner: M) -> Self {
        Self {
            inner,
            log: Vec::new(),
        }
    }

    /// The writes only, in order.
    pub fn writes(&self) -> Vec<(u32, u64)> {
        self.log
            .iter()
            .filter_map(|a| match *a {
                Access::Write(m, v) => Some((m, v)),
                _ => None,
            })
            .collect()
    }

    /// Forgets what was recorded so far.
    pub fn clear(&mut self) {
        self.log.clear();
    }
}

impl<M: Msr> Msr for RecordingMsr<M> {
    fn read(&mut self, msr: u32) -> Result<u64, MsrFault> {
        self.log.push(Access::Read(msr));
        self.inner.read(msr)
    }
    fn write(&mut self, msr: u32, value: u64) -> Result<(), MsrFault> {
        self.log.push(Access::Write(msr, value));
        self.inner.write(msr, value)
    }
    fn rdpmc(&mut self, ecx: u32) -> Result<u64, MsrFault> {
        self.log.push(Access::Rdpmc(ecx));
        self.inner.rdpmc(ecx)
    }
}
