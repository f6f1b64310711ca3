//! An xHCI host controller: bring-up (firmware handoff, halt, reset, rings, run), the command
//! ring, the event ring (one segment, polled: the controller's interrupts stay off), doorbells
//! and transfer rings.
//!
//! Every register access goes through `baremark_hw::mmio::Mmio` in the functions of this file
//! and `ports.rs`; every wait has a deadline (`clock`).

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use baremark_hw::dma::DmaBuffer;
use baremark_hw::mmio::Mmio;
use baremark_hw::pci::{self, PciFunction};

use super::regs::*;
use super::trb::{self, EventRing, ProducerRing, TRB_BYTES, Trb};
use crate::devices::clock::{self, Deadline};

/// TRBs per ring: one page.
pub const RING_TRBS: usize = 4096 / TRB_BYTES;

/// The largest BAR part the driver maps: the registers of every controller seen fit in 64 KiB;
/// the rest of a larger BAR is vendor space.
pub(super) const MMIO_MAX: u64 = 1 << 20;

/// A range of root-hub ports and the USB major revision they speak (an xHCI Supported
/// Protocol capability).
#[derive(Clone, Copy, Debug)]
pub struct Protocol {
    pub first_port: u8,
    pub count: u8,
    pub major: u8,
}

/// One controller, brought up and running.
pub struct Controller {
    pub pci: PciFunction,
    mmio: Mmio,
    op: u64,
    rt: u64,
    db: u64,
    pub ports: u8,
    pub max_slots: u8,
    /// 32 or 64 (HCCPARAMS1.CSZ).
    pub context_bytes: usize,
    hccparams1: u32,
    ac64: bool,
    dcbaa: DmaBuffer,
    commands: DmaBuffer,
    command_ring: ProducerRing,
    events: DmaBuffer,
    event_ring: EventRing,
    /// Kept so the buffers are never handed out again while the controller may use them.
    _erst: DmaBuffer,
    _scratchpads: Vec<DmaBuffer>,
    pub protocols: Vec<Protocol>,
    /// What bring-up noticed that is worth a note (firmware handoff and the like).
    pub notes: Vec<String>,
    /// Events nobody waited for (stale transfer events after a timeout, and the like).
    pub stray_events: u64,
}

/// A transfer ring of one endpoint.
pub struct TransferRing {
    buf: DmaBuffer,
    ring: ProducerRing,
}

impl TransferRing {
    /// The ring's address (for the endpoint context).
    pub fn phys(&self) -> u64 {
        self.buf.phys()
    }

    /// Places `trb`; returns the TRB's physical address (transfer events point at it).
    pub fn push(&mut self, trb: Trb) -> u64 {
        let base = self.buf.phys();
        let p = self.ring.push(trb, base);
        write_trb(&mut self.buf, p.index, p.trb);
        if let Some(link) = p.link {
            write_trb(&mut self.buf, RING_TRBS - 1, link);
        }
        base + (p.index * TRB_BYTES) as u64
    }

    /// Where the endpoint resumes after a Set TR Dequeue Pointer: the next TRB and cycle.
    pub fn dequeue_pointer(&self) -> (u64, bool) {
        (
            self.buf.phys() + (self.ring.enqueue() * TRB_BYTES) as u64,
            self.ring.cycle(),
        )
    }
}

/// Writes a TRB into a ring so the controller never sees it half-written with a valid cycle
/// bit: the control dword, which holds the cycle bit, goes last.
fn write_trb(buf: &mut DmaBuffer, index: usize, trb: Trb) {
    let at = index * TRB_BYTES;
    buf.write_u32(at, trb.0[0]);
    buf.write_u32(at + 4, trb.0[1]);
    buf.write_u32(at + 8, trb.0[2]);
    buf.write_u32(at + 12, trb.0[3]);
}

fn read_trb(buf: &DmaBuffer, index: usize) -> Trb {
    let at = index * TRB_BYTES;
    // The control dword (cycle bit) first: the rest is valid once it says the TRB is new.
    let d3 = buf.read_u32(at + 12);
    Trb([
        buf.read_u32(at),
        buf.read_u32(at + 4),
        buf.read_u32(at + 8),
        d3,
    ])
}

/// A DMA buffer the controller can reach: below 4 GiB for one without 64-bit addressing.
fn dma(bytes: usize, ac64: bool) -> Result<DmaBuffer, String> {
    let b = if ac64 {
        DmaBuffer::new(bytes)
    } else {
        DmaBuffer::new_dma32(bytes)
    };
    let b = b.map_err(|e| {
        format!(
            "no memory for DMA buffers{} ({e:?})",
            if ac64 {
                ""
            } else {
                " below 4 GiB (the controller reaches only 32-bit addresses)"
            }
        )
    })?;
    debug_assert!(ac64 || b.phys() + b.len() as u64 <= 1 << 32);
    Ok(b)
}

impl Controller {
    /// Brings the controller at `f` up: takes it from the firmware, resets it, gives it its
    /// rings and starts it. An error says why it cannot be used.
    pub fn bring_up(f: PciFunction) -> Result<Controller, String> {
        let (before, after) = pci::enable_memory_and_dma(f.address);
        if after & 0b110 != 0b110 {
            return Err(format!(
                "memory space and bus mastering do not stay enabled (command {before:#06x} -> {after:#06x})"
            ));
        }
        let mut mmio = Mmio::map_pci_bar(f.address, 0, MMIO_MAX)
            .map_err(|e| format!("BAR0 cannot be mapped ({e:?})"))?;
        let caplength = u64::from(mmio.read32(CAPLENGTH) & 0xff);
        let hcs1 = mmio.read32(HCSPARAMS1);
        let hcs2 = mmio.read32(HCSPARAMS2);
        let hcc1 = mmio.read32(HCCPARAMS1);
        let dboff = u64::from(mmio.read32(DBOFF) & !0x3);
        let rtsoff = u64::from(mmio.read32(RTSOFF) & !0x1f);
        if hcs1 == u32::MAX || caplength < 0x20 {
            return Err(format!(
                "capability registers read as {hcs1:#x} (CAPLENGTH {caplength:#x}): no controller answers at BAR0 {:#x}",
                mmio.phys()
            ));
        }
        let ports = (hcs1 >> 24) as u8;
        let max_slots = hcs1 as u8;
        let op = caplength;
        let last_port = op + PORT_BASE + 16 * u64::from(ports);
        if last_port > mmio.len() || dboff + 4 * 256 > mmio.len() || rtsoff + 0x40 > mmio.len() {
            return Err(format!(
                "register offsets (ports to {last_port:#x}, doorbells {dboff:#x}, runtime {rtsoff:#x}) lie outside the {:#x}-byte BAR",
                mmio.len()
            ));
        }
        let ac64 = hcc1 & HCC_AC64 != 0;
        let mut notes = Vec::new();
        let handoff = firmware_handoff(&mut mmio, hcc1);
        if handoff.starts_with("taken over") || handoff.starts_with("the firmware did not") {
            notes.push(String::from(handoff));
        }
        let protocols = supported_protocols(&mut mmio, hcc1);

        // Halt (the firmware may have left it running), then reset.
        if mmio.read32(op + USBSTS) & STS_HCH == 0 {
            let cmd = mmio.read32(op + USBCMD);
            mmio.write32(op + USBCMD, cmd & !CMD_RUN);
            if !clock::wait_until(32, || mmio.read32(op + USBSTS) & STS_HCH != 0) {
                return Err(String::from("did not halt within 32 ms"));
            }
        }
        mmio.write32(op + USBCMD, CMD_HCRST);
        // Some Intel controllers hang if touched within 1 ms of HCRST (Linux waits too).
        clock::sleep_ms(1);
        if !clock::wait_until(1000, || {
            mmio.read32(op + USBCMD) & CMD_HCRST == 0 && mmio.read32(op + USBSTS) & STS_CNR == 0
        }) {
            return Err(String::from(
                "reset did not complete within 1 s (HCRST or Controller Not Ready stayed set)",
            ));
        }
        if mmio.read32(op + PAGESIZE) & 1 == 0 {
            return Err(format!(
                "does not support 4 KiB pages (PAGESIZE {:#x})",
                mmio.read32(op + PAGESIZE)
            ));
        }
        let config = mmio.read32(op + CONFIG);
        mmio.write32(op + CONFIG, (config & !0xff) | u32::from(max_slots));

        // Device context base address array, with the scratchpad array in entry 0.
        let mut dcbaa = dma(2048, ac64)?;
        let scratch_count = ((hcs2 >> 21) & 0x1f) << 5 | (hcs2 >> 27) & 0x1f;
        let mut scratchpads = Vec::new();
        if scratch_count > 0 {
            let mut array = dma(scratch_count as usize * 8, ac64)?;
            for i in 0..scratch_count as usize {
                let page = dma(4096, ac64)?;
                array.write_u64(i * 8, page.phys());
                scratchpads.push(page);
            }
            dcbaa.write_u64(0, array.phys());
            scratchpads.push(array);
        }
        mmio.write64(op + DCBAAP, dcbaa.phys());

        let commands = dma(4096, ac64)?;
        mmio.write64(op + CRCR, commands.phys() | CRCR_RCS);

        // One event ring segment, polled: the interrupter's IE stays 0.
        let events = dma(4096, ac64)?;
        let mut erst = dma(16, ac64)?;
        erst.write_u64(0, events.phys());
        erst.write_u32(8, RING_TRBS as u32);
        let ir = rtsoff + IR0;
        mmio.write32(ir + ERSTSZ, 1);
        mmio.write64(ir + ERDP, events.phys());
        mmio.write64(ir + ERSTBA, erst.phys());
        // Clear a pending interrupt (IP is write-1-to-clear), interrupts off.
        mmio.write32(ir + IMAN, 1);

        mmio.write32(op + USBCMD, CMD_RUN);
        if !clock::wait_until(100, || mmio.read32(op + USBSTS) & STS_HCH == 0) {
            return Err(String::from("did not start running within 100 ms"));
        }
        let mut c = Controller {
            pci: f,
            mmio,
            op,
            rt: rtsoff,
            db: dboff,
            ports,
            max_slots,
            context_bytes: if hcc1 & HCC_CSZ != 0 { 64 } else { 32 },
            hccparams1: hcc1,
            ac64,
            dcbaa,
            commands,
            command_ring: ProducerRing::new(RING_TRBS),
            events,
            event_ring: EventRing::new(RING_TRBS),
            _erst: erst,
            _scratchpads: scratchpads,
            protocols,
            notes,
            stray_events: 0,
        };
        c.command(Trb::noop_command())
            .map_err(|e| format!("the command ring does not work: {e}"))?;
        let sts = c.status();
        if sts & (STS_HSE | STS_HCE) != 0 {
            return Err(format!(
                "reports a host system or controller error after start (USBSTS {sts:#x})"
            ));
        }
        Ok(c)
    }

    /// Allocates a DMA buffer this controller can reach.
    pub fn dma(&self, bytes: usize) -> Result<DmaBuffer, String> {
        dma(bytes, self.ac64)
    }

    /// A fresh transfer ring.
    pub fn transfer_ring(&self) -> Result<TransferRing, String> {
        Ok(TransferRing {
            buf: self.dma(4096)?,
            ring: ProducerRing::new(RING_TRBS),
        })
    }

    /// Whether port power is switched by software (HCCPARAMS1.PPC).
    pub fn port_power_control(&self) -> bool {
        self.hccparams1 & HCC_PPC != 0
    }

    /// The USB major revision of port `port` (1-based), if a Supported Protocol capability
    /// covers it.
    pub fn port_major(&self, port: u8) -> Option<u8> {
        self.protocols
            .iter()
            .find(|p| port >= p.first_port && port < p.first_port.saturating_add(p.count))
            .map(|p| p.major)
    }

    /// PORTSC of port `port` (1-based).
    pub fn portsc(&mut self, port: u8) -> u32 {
        let at = self.op + PORT_BASE + 16 * u64::from(port - 1);
        self.mmio.read32(at)
    }

    /// Writes PORTSC of port `port`: `set` on top of the bits that may be written back as
    /// read ([`PORT_PRESERVE`]), so nothing is cleared or started by accident.
    pub fn write_portsc(&mut self, port: u8, set: u32) {
        let at = self.op + PORT_BASE + 16 * u64::from(port - 1);
        let now = self.mmio.read32(at);
        self.mmio.write32(at, (now & PORT_PRESERVE) | set);
    }

    /// USBSTS, for notes about a controller error.
    pub fn status(&mut self) -> u32 {
        self.mmio.read32(self.op + USBSTS)
    }

    /// Points the device context base address array's entry `slot` at `context`.
    pub fn set_device_context(&mut self, slot: u8, context: u64) {
        self.dcbaa.write_u64(usize::from(slot) * 8, context);
    }

    /// Rings doorbell `slot` (0: the command ring) for `target` (an endpoint's DCI).
    pub fn ring_doorbell(&mut self, slot: u8, target: u8) {
        self.mmio
            .write32(self.db + 4 * u64::from(slot), u32::from(target));
    }

    /// Runs a command and waits for its completion event; an error unless it succeeded.
    pub fn command(&mut self, command: Trb) -> Result<Trb, String> {
        let base = self.commands.phys();
        let p = self.command_ring.push(command, base);
        write_trb(&mut self.commands, p.index, p.trb);
        if let Some(link) = p.link {
            write_trb(&mut self.commands, RING_TRBS - 1, link);
        }
        let at = base + (p.index * TRB_BYTES) as u64;
        self.ring_doorbell(0, 0);
        let event = self
            .wait_event(5000, |e| {
                e.kind() == trb::kind::COMMAND_COMPLETION && e.event_pointer() == at
            })
            .ok_or_else(|| {
                let sts = self.status();
                format!(
                    "command type {} got no completion within 5 s (USBSTS {sts:#x})",
                    command.kind()
                )
            })?;
        if event.completion_code() != trb::code::SUCCESS {
            return Err(format!(
                "command type {} failed: {} (code {})",
                command.kind(),
                trb::code_name(event.completion_code()),
                event.completion_code()
            ));
        }
        Ok(event)
    }

    /// Polls the event ring until an event `wanted` accepts arrives (returned) or `ms`
    /// milliseconds pass. Other events are consumed and counted.
    pub fn wait_event(&mut self, ms: u64, wanted: impl Fn(&Trb) -> bool) -> Option<Trb> {
        let deadline = Deadline::after_ms(ms);
        loop {
            while let Some(event) = self.next_event() {
                if wanted(&event) {
                    return Some(event);
                }
                if event.kind() != trb::kind::PORT_STATUS_CHANGE {
                    self.stray_events += 1;
                }
            }
            if deadline.passed() {
                return None;
            }
            core::hint::spin_loop();
        }
    }

    /// Takes the next event off the event ring, if there is one, and tells the controller.
    fn next_event(&mut self) -> Option<Trb> {
        let index = self.event_ring.dequeue();
        let event = read_trb(&self.events, index);
        if !self.event_ring.is_new(event.cycle()) {
            return None;
        }
        self.event_ring.advance();
        let erdp = self.events.phys() + (self.event_ring.dequeue() * TRB_BYTES) as u64;
        self.mmio.write64(self.rt + IR0 + ERDP, erdp | ERDP_EHB);
        Some(event)
    }

    /// Register accesses that fell outside the BAR (a sign of a confused controller).
    pub fn out_of_range_accesses(&self) -> u64 {
        self.mmio.out_of_range()
    }
}

/// Extended capabilities: (offset, id) of each, following the next pointers (at most 64, in
/// case a broken list loops).
fn extended_capabilities(mmio: &mut Mmio, hcc1: u32) -> Vec<(u64, u8)> {
    let mut found = Vec::new();
    let mut at = u64::from(hcc1 >> 16) * 4;
    while at != 0 && found.len() < 64 {
        let header = mmio.read32(at);
        if header == u32::MAX {
            break;
        }
        found.push((at, header as u8));
        let next = u64::from((header >> 8) & 0xff) * 4;
        if next == 0 {
            break;
        }
        at += next;
    }
    found
}

/// Takes the controller from the firmware (USB Legacy Support, xHCI 1.2 §7.1): asks for OS
/// ownership, waits up to a second for the BIOS to let go, then turns the firmware's SMIs off.
/// Says what it did (also at boot for every controller: `legacy`).
pub(super) fn firmware_handoff(mmio: &mut Mmio, hcc1: u32) -> &'static str {
    let Some((at, _)) = extended_capabilities(mmio, hcc1)
        .into_iter()
        .find(|&(_, id)| id == XCAP_LEGACY)
    else {
        return "no USB legacy support capability";
    };
    let legsup = mmio.read32(at);
    let outcome = if legsup & LEGSUP_BIOS_OWNED != 0 {
        mmio.write32(at, legsup | LEGSUP_OS_OWNED);
        let released = clock::wait_until(1000, || mmio.read32(at) & LEGSUP_BIOS_OWNED == 0);
        if !released {
            // Linux does the same: the firmware keeps ignoring the request, take it anyway.
            let now = mmio.read32(at);
            mmio.write32(at, (now & !LEGSUP_BIOS_OWNED) | LEGSUP_OS_OWNED);
            "the firmware did not release the controller within 1 s (USBLEGSUP BIOS owned \
             stayed set): taken over anyway, its SMIs off"
        } else {
            "taken over from the firmware (USBLEGSUP handoff), its SMIs off"
        }
    } else {
        "not owned by the firmware; its SMIs off"
    };
    let ctl = mmio.read32(at + 4);
    mmio.write32(at + 4, (ctl & !LEGCTL_SMI_ENABLES) | LEGCTL_SMI_EVENTS);
    outcome
}

/// The capability registers the handoff needs, `None` if no controller answers.
pub(super) fn hccparams1(mmio: &mut Mmio) -> Option<u32> {
    let caplength = mmio.read32(CAPLENGTH) & 0xff;
    let hcc1 = mmio.read32(HCCPARAMS1);
    (caplength >= 0x20 && hcc1 != u32::MAX).then_some(hcc1)
}

/// The Supported Protocol capabilities: which ports are USB 2 and which USB 3.
fn supported_protocols(mmio: &mut Mmio, hcc1: u32) -> Vec<Protocol> {
    extended_capabilities(mmio, hcc1)
        .into_iter()
        .filter(|&(_, id)| id == XCAP_PROTOCOL)
        .map(|(at, _)| {
            let d0 = mmio.read32(at);
            let d2 = mmio.read32(at + 8);
            Protocol {
                major: (d0 >> 24) as u8,
                first_port: d2 as u8,
                count: (d2 >> 8) as u8,
            }
        })
        .collect()
}
