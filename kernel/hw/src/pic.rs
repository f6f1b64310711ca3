//! The legacy 8259 interrupt controller pair. baremark uses the local APIC only, but the 8259s
//! power up mapped over the CPU exception vectors (IRQ 0-7 on vectors 8-15), so they are
//! remapped to vectors 0x20-0x2f and every line is masked. A spurious IRQ 7 or 15 can still
//! arrive (the 8259 raises it even when masked); it lands on 0x27 or 0x2f, away from the
//! exceptions, and the kernel counts it.

use crate::port::{inb, outb};

const PIC1_COMMAND: u16 = 0x20;
const PIC1_DATA: u16 = 0x21;
const PIC2_COMMAND: u16 = 0xa0;
const PIC2_DATA: u16 = 0xa1;

/// First vector of the primary 8259 after remapping.
pub const PIC1_VECTOR_BASE: u8 = 0x20;
/// First vector of the secondary 8259 after remapping.
pub const PIC2_VECTOR_BASE: u8 = 0x28;

/// Remaps both 8259s to vectors 0x20-0x2f and masks all 16 lines.
pub fn remap_and_mask() {
    // SAFETY: 0x20/0x21/0xa0/0xa1 are the 8259 ports on every PC; the ICW sequence below is the
    // documented initialisation (ICW1 edge/cascade/ICW4, ICW2 vector base, ICW3 wiring, ICW4
    // 8086 mode), and this module is the only user of those ports.
    unsafe {
        outb(PIC1_COMMAND, 0x11);
        io_wait();
        outb(PIC2_COMMAND, 0x11);
        io_wait();
        outb(PIC1_DATA, PIC1_VECTOR_BASE);
        io_wait();
        outb(PIC2_DATA, PIC2_VECTOR_BASE);
        io_wait();
        outb(PIC1_DATA, 4); // secondary on IRQ 2
        io_wait();
        outb(PIC2_DATA, 2); // cascade identity
        io_wait();
        outb(PIC1_DATA, 0x01);
        io_wait();
        outb(PIC2_DATA, 0x01);
        io_wait();
        outb(PIC1_DATA, 0xff);
        outb(PIC2_DATA, 0xff);
    }
}

/// Whether the 8259 has IRQ `irq` (0-15) in service: distinguishes a real IRQ 7/15 from a
/// spurious one.
pub fn in_service(irq: u8) -> bool {
    const READ_ISR: u8 = 0x0b;
    // SAFETY: OCW3 "read ISR" followed by a read of the command port only reads state.
    unsafe {
        if irq < 8 {
            outb(PIC1_COMMAND, READ_ISR);
            inb(PIC1_COMMAND) & (1 << irq) != 0
        } else {
            outb(PIC2_COMMAND, READ_ISR);
            inb(PIC2_COMMAND) & (1 << (irq - 8)) != 0
        }
    }
}

/// A short delay between 8259 commands for old hardware: a write to the unused port 0x80.
fn io_wait() {
    // SAFETY: port 0x80 is the POST diagnostic port; writing it has no effect but a delay.
    unsafe { outb(0x80, 0) };
}
