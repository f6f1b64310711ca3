//! RDPMC from ring 3: a payload of five instructions reads the counter whose index the kernel
//! put in ECX and exits with the value. With CR4.PCE set it must return exactly what the
//! counter holds (stopped, at a known value); with CR4.PCE clear it must raise #GP.

use alloc::format;
use alloc::string::String;

use baremark_hw::cpu;
use baremark_hw::user::{self, AddressSpace, Exit, UserContext};

use super::{Ctx, Items, Slot, locked, release};
use crate::pmu::backend::{Counter, PmuError};
use crate::selftest::{self, Outcome};
use crate::task::abi::nr;
use crate::task::ring3 as taskring3;

/// Where the payload is loaded, and its stack (it uses none; interrupts switch stacks).
const CODE: u64 = 0x40_0000;
const STACK_TOP: u64 = 0x7fff_0000_0000;
/// `rdpmc; mov rdi, rax; mov rsi, rdx; xor eax, eax; syscall; ud2`: exit(EDX:EAX as rsi:rdi).
const PAYLOAD: [u8; 14] = [
    0x0f, 0x33, 0x48, 0x89, 0xc7, 0x48, 0x89, 0xd6, 0x31, 0xc0, 0x0f, 0x05, 0x0f, 0x0b,
];
/// Interrupts forwarded before the payload counts as stuck.
const MAX_ENTRIES: usize = 100;
/// #GP.
const GENERAL_PROTECTION: u8 = 13;

/// How the payload ended.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Ring3 {
    Read(u64),
    Fault(u8),
    Other(String),
}

impl core::fmt::Display for Ring3 {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Ring3::Read(v) => write!(f, "read {v:#x}"),
            Ring3::Fault(v) => write!(f, "fault vector {v}"),
            Ring3::Other(s) => f.write_str(s),
        }
    }
}

fn run_rdpmc(space: &AddressSpace, ecx: u32) -> Ring3 {
    let mut ctx = UserContext::new(space, CODE, STACK_TOP);
    ctx.rcx = u64::from(ecx);
    for _ in 0..MAX_ENTRIES {
        match user::run(&mut ctx, space) {
            Exit::Syscall if ctx.rax == nr::EXIT => {
                return Ring3::Read((ctx.rdi & 0xffff_ffff) | (ctx.rsi << 32));
            }
            Exit::Syscall => return Ring3::Other(format!("unexpected syscall {}", ctx.rax)),
            Exit::Trap { vector, .. } if taskring3::is_interrupt(vector) => {
                taskring3::forward_interrupt(vector);
            }
            Exit::Trap { vector, .. } => return Ring3::Fault(vector),
            Exit::InvalidContext(_) => return Ring3::Other("the context was refused".into()),
        }
    }
    Ring3::Other("interrupted too often".into())
}

fn address_space() -> Result<AddressSpace, &'static str> {
    let mut space = AddressSpace::new().map_err(|_| "no memory for an address space")?;
    space
        .map(CODE, false, true)
        .map_err(|_| "could not map the code")?;
    space
        .write(CODE, &PAYLOAD)
        .map_err(|_| "could not copy the code")?;
    space
        .map_stack(STACK_TOP, 1)
        .map_err(|_| "could not map the stack")?;
    Ok(space)
}

/// GP counter 0 (and fixed counter 0 where there is one) holds a known value; ring 3 reads it
/// with CR4.PCE set, then GP counter 0 again with CR4.PCE clear.
pub(super) fn rdpmc_ring3(ctx: &Ctx) -> Result<Outcome, PmuError> {
    let Some(sel) = selftest::instructions(&ctx.caps) else {
        return Ok(Outcome::Fail("no instructions event".into()));
    };
    let mut slots = alloc::vec![Slot {
        preset: 0x1234_5678,
        ..Slot::new(Counter::Gp(0), sel)
    }];
    if ctx.caps.has_fixed(0) {
        slots.push(Slot {
            preset: 0x0765_4321,
            ..Slot::new(Counter::Fixed(0), selftest::fixed_select(0))
        });
    }
    // Programmed and written, never started: the value stays put while ring 3 reads it.
    let indices = locked(|pmu, msr| {
        let mut indices = alloc::vec::Vec::new();
        for s in &slots {
            let mods = events::event::Modifiers::default();
            pmu.backend.program(msr, s.counter, &s.select, &mods)?;
            pmu.backend.write(msr, s.counter, s.preset)?;
            indices.push(
                pmu.backend
                    .rdpmc_index(s.counter)
                    .ok_or(PmuError::NoSuchCounter(s.counter))?,
            );
        }
        Ok(indices)
    })?;
    let space = match address_space() {
        Ok(s) => s,
        Err(e) => {
            locked(|pmu, msr| release(pmu, msr, &slots))?;
            return Ok(Outcome::Fail(format!(
                "could not set up the ring-3 payload: {e}"
            )));
        }
    };
    let pce_before = cpu::user_rdpmc();
    cpu::set_user_rdpmc(true);
    let with_pce: alloc::vec::Vec<Ring3> = indices.iter().map(|&i| run_rdpmc(&space, i)).collect();
    cpu::set_user_rdpmc(false);
    let without_pce = run_rdpmc(&space, indices[0]);
    cpu::set_user_rdpmc(pce_before);
    locked(|pmu, msr| release(pmu, msr, &slots))?;

    let mut ok = true;
    let mut items = Items::default();
    for ((slot, index), got) in slots.iter().zip(&indices).zip(&with_pce) {
        let good = *got == Ring3::Read(slot.preset);
        ok &= good;
        items.add(format_args!(
            "CR4.PCE set, {} RDPMC({index:#x}) {got}{};",
            slot.counter,
            if good {
                String::new()
            } else {
                format!(" (expected {:#x})", slot.preset)
            }
        ));
    }
    let faulted = without_pce == Ring3::Fault(GENERAL_PROTECTION);
    ok &= faulted;
    items.add(format_args!(
        "CR4.PCE clear, RDPMC({:#x}) {without_pce}{}",
        indices[0],
        if faulted { " (#GP)" } else { " (expected #GP)" }
    ));
    Ok(Outcome::verdict(ok, items.0))
}
