//! The TSC-only backend: no programmable counters. This is what QEMU's TCG offers (CPUID.0AH
//! reports version 0 and RDPMC raises #UD), and what perfctr and pctr offered on CPUs without
//! PMCs. The TSC itself is read by the kernel directly; every counter operation here is
//! "not supported", never a silent zero.

use events::cpu::Vendor;
use events::event::{EventSelect, Modifiers};
use events::pmu::PmuCaps;

use super::backend::{Counter, CounterSet, PmiEvent, PmuBackend, PmuError};
use super::msr::Msr;

const WHY: &str = "this machine has no programmable counters (TSC only)";

/// The backend without counters.
#[derive(Clone, Debug)]
pub struct TscOnlyPmu {
    caps: PmuCaps,
}

impl TscOnlyPmu {
    pub fn new(vendor: Vendor, cpu: Option<events::cpu::CpuModel>) -> Self {
        Self {
            caps: PmuCaps::tsc_only(vendor, cpu),
        }
    }
}

impl PmuBackend for TscOnlyPmu {
    fn name(&self) -> &'static str {
        "tsc-only"
    }
    fn caps(&self) -> &PmuCaps {
        &self.caps
    }
    fn width(&self, _counter: Counter) -> u8 {
        0
    }
    fn all_counters(&self) -> CounterSet {
        CounterSet::EMPTY
    }
    fn reset(&mut self, _: &mut dyn Msr) -> Result<(), PmuError> {
        Ok(())
    }
    fn program(
        &mut self,
        _: &mut dyn Msr,
        c: Counter,
        _: &EventSelect,
        _: &Modifiers,
    ) -> Result<(), PmuError> {
        Err(PmuError::NoSuchCounter(c))
    }
    fn release(&mut self, _: &mut dyn Msr, c: Counter) -> Result<(), PmuError> {
        Err(PmuError::NoSuchCounter(c))
    }
    fn enable(&mut self, _: &mut dyn Msr, set: CounterSet) -> Result<(), PmuError> {
        if set.is_empty() {
            Ok(())
        } else {
            Err(PmuError::NotSupported(WHY))
        }
    }
    fn disable(&mut self, _: &mut dyn Msr, set: CounterSet) -> Result<(), PmuError> {
        if set.is_empty() {
            Ok(())
        } else {
            Err(PmuError::NotSupported(WHY))
        }
    }
    fn read(&mut self, _: &mut dyn Msr, c: Counter) -> Result<u64, PmuError> {
        Err(PmuError::NoSuchCounter(c))
    }
    fn write(&mut self, _: &mut dyn Msr, c: Counter, _: u64) -> Result<(), PmuError> {
        Err(PmuError::NoSuchCounter(c))
    }
    fn arm_period(&mut self, _: &mut dyn Msr, c: Counter, _: u64) -> Result<(), PmuError> {
        Err(PmuError::NoSuchCounter(c))
    }
    fn overflow_status(&mut self, _: &mut dyn Msr) -> Result<CounterSet, PmuError> {
        Ok(CounterSet::EMPTY)
    }
    fn ack_overflow(&mut self, _: &mut dyn Msr, set: CounterSet) -> Result<(), PmuError> {
        if set.is_empty() {
            Ok(())
        } else {
            Err(PmuError::NotSupported(WHY))
        }
    }
    fn handle_pmi(&mut self, _: &mut dyn Msr) -> Result<PmiEvent, PmuError> {
        // Nothing can overflow: any PMI is spurious.
        Ok(PmiEvent::default())
    }
    fn pmi_unmasks_lvtpc(&self) -> bool {
        false
    }
    fn rdpmc_index(&self, _counter: Counter) -> Option<u32> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pmu::msr::{MsrFault, RecordingMsr};

    /// An Msr that faults on everything: the TSC-only backend must never touch MSRs.
    struct NoMsrs;
    impl Msr for NoMsrs {
        fn read(&mut self, _: u32) -> Result<u64, MsrFault> {
            Err(MsrFault::GeneralProtection)
        }
        fn write(&mut self, _: u32, _: u64) -> Result<(), MsrFault> {
            Err(MsrFault::GeneralProtection)
        }
        fn rdpmc(&mut self, _: u32) -> Result<u64, MsrFault> {
            Err(MsrFault::InvalidOpcode)
        }
    }

    #[test]
    fn everything_is_not_supported_and_no_msr_is_touched() {
        let mut pmu = TscOnlyPmu::new(Vendor::Intel, None);
        let mut msr = RecordingMsr::new(NoMsrs);
        let sel = EventSelect::new(0xc0, 0);
        for c in [Counter::Gp(0), Counter::Fixed(0)] {
            assert_eq!(
                pmu.program(&mut msr, c, &sel, &Modifiers::default()),
                Err(PmuError::NoSuchCounter(c))
            );
            assert_eq!(pmu.read(&mut msr, c), Err(PmuError::NoSuchCounter(c)));
            assert_eq!(pmu.write(&mut msr, c, 1), Err(PmuError::NoSuchCounter(c)));
            assert_eq!(
                pmu.arm_period(&mut msr, c, 100),
                Err(PmuError::NoSuchCounter(c))
            );
            assert_eq!(pmu.width(c), 0);
            assert_eq!(pmu.rdpmc_index(c), None);
        }
        assert!(
            pmu.enable(&mut msr, CounterSet::one(Counter::Gp(0)))
                .is_err()
        );
        assert_eq!(pmu.enable(&mut msr, CounterSet::EMPTY), Ok(()));
        assert_eq!(pmu.overflow_status(&mut msr), Ok(CounterSet::EMPTY));
        assert!(pmu.handle_pmi(&mut msr).unwrap().is_spurious());
        assert!(pmu.all_counters().is_empty());
        assert_eq!(pmu.caps().gp_counters, 0);
        assert!(msr.log.is_empty(), "no MSR access at all: {:?}", msr.log);
    }
}
