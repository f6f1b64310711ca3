//! The kernel's handler for every interrupt and exception (installed into `baremark-hw`'s trap
//! dispatcher at the very start of boot).
//!
//! - exceptions 0-31 in kernel mode end the run with a fault record, except NMI (counted) and
//!   a breakpoint (counted and resumed: `int3` is a trap, the saved RIP is already past it);
//! - the APIC timer vector counts ticks; the PMI vector goes to `pmu::machine::on_pmi`;
//! - spurious APIC and 8259 interrupts are counted, as is anything unexpected, and reported in
//!   the `end` record.

use core::sync::atomic::Ordering::Relaxed;

use baremark_hw::trap::TrapFrame;
use baremark_hw::{apic, cpu, pic};

use crate::platform::interrupts::{COUNTS, PMI_VECTOR, SPURIOUS_VECTOR, TIMER_VECTOR, WAKE_VECTOR};

/// Entry point from the trap dispatcher.
pub fn handle(frame: &mut TrapFrame) {
    const NMI: u64 = 2;
    const BREAKPOINT: u64 = 3;
    match frame.vector {
        BREAKPOINT => {
            COUNTS.breakpoints.fetch_add(1, Relaxed);
        }
        v if v < 32 && v != NMI => crate::traps::fatal::fault(frame),
        v => interrupt(v as u8),
    }
}

/// An interrupt (an NMI or a vector from 32 up), taken in the kernel or handed over from
/// ring 3 (`task::ring3::forward_interrupt`): counted and acknowledged. No frame: nothing an
/// interrupt does depends on where it arrived.
pub fn interrupt(vector: u8) {
    const NMI: u8 = 2;
    match vector {
        NMI => {
            COUNTS.nmis.fetch_add(1, Relaxed);
        }
        TIMER_VECTOR => {
            COUNTS.last_tick_tsc.store(cpu::rdtsc(), Relaxed);
            COUNTS.timer_ticks.fetch_add(1, Relaxed);
            apic::eoi();
        }
        PMI_VECTOR => crate::pmu::machine::on_pmi(),
        WAKE_VECTOR => {
            COUNTS.wakes.fetch_add(1, Relaxed);
            apic::eoi();
            // A short call another CPU waits for (system mode's per-CPU counters).
            crate::platform::cpus::serve_calls();
        }
        SPURIOUS_VECTOR => {
            // No EOI for a spurious APIC interrupt.
            COUNTS.spurious_apic.fetch_add(1, Relaxed);
        }
        v if (pic::PIC1_VECTOR_BASE..pic::PIC2_VECTOR_BASE + 8).contains(&v) => {
            // Every 8259 line is masked: only spurious IRQ 7/15 can come. A real one (in
            // service) would be a bug, and is counted as unexpected.
            let irq = v - pic::PIC1_VECTOR_BASE;
            if (irq == 7 || irq == 15) && !pic::in_service(irq) {
                COUNTS.spurious_pic.fetch_add(1, Relaxed);
            } else {
                COUNTS.unexpected.fetch_add(1, Relaxed);
                COUNTS.last_unexpected_vector.store(u64::from(v), Relaxed);
            }
        }
        v => {
            COUNTS.unexpected.fetch_add(1, Relaxed);
            COUNTS.last_unexpected_vector.store(u64::from(v), Relaxed);
            apic::eoi();
        }
    }
}
