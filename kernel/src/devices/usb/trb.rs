//! Transfer Request Blocks (xHCI 1.2 §6.4) and the ring bookkeeping around them: where the
//! next TRB goes and with which cycle bit (producer rings: command and transfer rings, closed
//! by a Link TRB), and which event is new (the event ring, consumed by cycle bit).
//!
//! Pure logic: the driver (`xhci.rs`) writes the TRBs into DMA memory; here only their bits and
//! the ring positions are computed, so both are host-tested.

/// Bytes per TRB.
pub const TRB_BYTES: usize = 16;

/// TRB types (§6.4.6).
pub mod kind {
    pub const NORMAL: u32 = 1;
    pub const SETUP: u32 = 2;
    pub const DATA: u32 = 3;
    pub const STATUS: u32 = 4;
    pub const LINK: u32 = 6;
    pub const ENABLE_SLOT: u32 = 9;
    pub const ADDRESS_DEVICE: u32 = 11;
    pub const CONFIGURE_ENDPOINT: u32 = 12;
    pub const EVALUATE_CONTEXT: u32 = 13;
    pub const RESET_ENDPOINT: u32 = 14;
    pub const SET_TR_DEQUEUE: u32 = 16;
    pub const NOOP_COMMAND: u32 = 23;
    pub const TRANSFER_EVENT: u32 = 32;
    pub const COMMAND_COMPLETION: u32 = 33;
    pub const PORT_STATUS_CHANGE: u32 = 34;
}

/// Completion codes (§6.4.5) the driver tells apart.
pub mod code {
    pub const SUCCESS: u8 = 1;
    pub const STALL: u8 = 6;
    pub const SHORT_PACKET: u8 = 13;
}

/// The name of a completion code, for notes.
pub fn code_name(code: u8) -> &'static str {
    match code {
        0 => "invalid",
        1 => "success",
        2 => "data buffer error",
        3 => "babble detected",
        4 => "USB transaction error",
        5 => "TRB error",
        6 => "stall",
        7 => "resource error",
        8 => "bandwidth error",
        9 => "no slots available",
        10 => "invalid stream type",
        11 => "slot not enabled",
        12 => "endpoint not enabled",
        13 => "short packet",
        17 => "parameter error",
        19 => "context state error",
        21 => "event ring full",
        24 => "command ring stopped",
        25 => "command aborted",
        26 => "stopped",
        _ => "other error",
    }
}

// Control-word bits (dword 3).
const CYCLE: u32 = 1 << 0;
/// Link TRB: toggle the consumer's cycle state when following it.
const TOGGLE_CYCLE: u32 = 1 << 1;
/// Normal TRB: interrupt (an event) on short packet.
const ISP: u32 = 1 << 2;
const CHAIN: u32 = 1 << 4;
/// Interrupt on completion: the TRB produces an event.
const IOC: u32 = 1 << 5;
/// Immediate data: the Setup TRB carries the 8-byte request itself.
const IDT: u32 = 1 << 6;
/// Data and Status stages: direction IN (device to host).
const DIR_IN: u32 = 1 << 16;

/// One TRB: four little-endian dwords.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Trb(pub [u32; 4]);

impl Trb {
    fn with_type(kind: u32) -> Trb {
        Trb([0, 0, 0, kind << 10])
    }

    fn pointer(mut self, addr: u64) -> Trb {
        self.0[0] = addr as u32;
        self.0[1] = (addr >> 32) as u32;
        self
    }

    fn slot(mut self, slot: u8) -> Trb {
        self.0[3] |= u32::from(slot) << 24;
        self
    }

    /// The TRB type.
    pub fn kind(&self) -> u32 {
        (self.0[3] >> 10) & 0x3f
    }

    /// The cycle bit.
    pub fn cycle(&self) -> bool {
        self.0[3] & CYCLE != 0
    }

    /// A copy with the cycle bit set to `cycle`.
    pub fn with_cycle(mut self, cycle: bool) -> Trb {
        self.0[3] = (self.0[3] & !CYCLE) | u32::from(cycle);
        self
    }

    /// Whether the chain bit is set.
    pub fn chained(&self) -> bool {
        self.0[3] & CHAIN != 0
    }

    /// Event TRBs: the pointer field (the TRB the event is about).
    pub fn event_pointer(&self) -> u64 {
        u64::from(self.0[1]) << 32 | u64::from(self.0[0])
    }

    /// Event TRBs: the completion code.
    pub fn completion_code(&self) -> u8 {
        (self.0[2] >> 24) as u8
    }

    /// Transfer events: bytes not transferred (the residue of the TRB the event is about).
    pub fn residue(&self) -> u32 {
        self.0[2] & 0x00ff_ffff
    }

    /// Events: the slot id.
    pub fn slot_id(&self) -> u8 {
        (self.0[3] >> 24) as u8
    }

    /// Transfer events: the endpoint's device context index.
    pub fn endpoint_id(&self) -> u8 {
        ((self.0[3] >> 16) & 0x1f) as u8
    }

    /// Port status change events: the port number (1-based).
    pub fn port_id(&self) -> u8 {
        (self.0[0] >> 24) as u8
    }

    // --- Commands -----------------------------------------------------------------------------

    pub fn enable_slot(slot_type: u8) -> Trb {
        let mut t = Trb::with_type(kind::ENABLE_SLOT);
        t.0[3] |= u32::from(slot_type & 0x1f) << 16;
        t
    }

    pub fn address_device(input_context: u64, slot: u8) -> Trb {
        Trb::with_type(kind::ADDRESS_DEVICE)
            .pointer(input_context)
            .slot(slot)
    }

    pub fn configure_endpoint(input_context: u64, slot: u8) -> Trb {
        Trb::with_type(kind::CONFIGURE_ENDPOINT)
            .pointer(input_context)
            .slot(slot)
    }

    pub fn evaluate_context(input_context: u64, slot: u8) -> Trb {
        Trb::with_type(kind::EVALUATE_CONTEXT)
            .pointer(input_context)
            .slot(slot)
    }

    pub fn reset_endpoint(slot: u8, dci: u8) -> Trb {
        let mut t = Trb::with_type(kind::RESET_ENDPOINT).slot(slot);
        t.0[3] |= u32::from(dci) << 16;
        t
    }

    /// Set TR Dequeue Pointer: the endpoint resumes at `dequeue` with cycle state `cycle`.
    pub fn set_tr_dequeue(slot: u8, dci: u8, dequeue: u64, cycle: bool) -> Trb {
        let mut t = Trb::with_type(kind::SET_TR_DEQUEUE)
            .pointer(dequeue | u64::from(cycle))
            .slot(slot);
        t.0[3] |= u32::from(dci) << 16;
        t
    }

    pub fn noop_command() -> Trb {
        Trb::with_type(kind::NOOP_COMMAND)
    }

    /// A Link TRB back to `target`, toggling the cycle state; chained if the TD it interrupts
    /// is.
    pub fn link(target: u64, chain: bool) -> Trb {
        let mut t = Trb::with_type(kind::LINK).pointer(target);
        t.0[3] |= TOGGLE_CYCLE;
        if chain {
            t.0[3] |= CHAIN;
        }
        t
    }

    // --- Transfers ----------------------------------------------------------------------------

    /// The Setup stage of a control transfer; `data_in` is `None` without a data stage.
    pub fn setup(request: [u8; 8], data_in: Option<bool>) -> Trb {
        let mut t = Trb::with_type(kind::SETUP);
        t.0[0] = u32::from_le_bytes([request[0], request[1], request[2], request[3]]);
        t.0[1] = u32::from_le_bytes([request[4], request[5], request[6], request[7]]);
        t.0[2] = 8;
        let trt = match data_in {
            None => 0,
            Some(false) => 2,
            Some(true) => 3,
        };
        t.0[3] |= IDT | trt << 16;
        t
    }

    /// The Data stage: `len` bytes at `buffer`.
    pub fn data(buffer: u64, len: u32, data_in: bool) -> Trb {
        let mut t = Trb::with_type(kind::DATA).pointer(buffer);
        t.0[2] = len & 0x1_ffff;
        if data_in {
            t.0[3] |= DIR_IN;
        }
        t
    }

    /// The Status stage, whose direction is the opposite of the data stage (IN without one);
    /// it completes the transfer with an event.
    pub fn status(data_in: Option<bool>) -> Trb {
        let mut t = Trb::with_type(kind::STATUS);
        if data_in != Some(true) {
            t.0[3] |= DIR_IN;
        }
        t.0[3] |= IOC;
        t
    }

    /// A bulk transfer of `len` bytes (at most 64 KiB, not crossing a 64 KiB boundary) at
    /// `buffer`, with an event on completion or short packet.
    pub fn normal(buffer: u64, len: u32) -> Trb {
        let mut t = Trb::with_type(kind::NORMAL).pointer(buffer);
        t.0[2] = len & 0x1_ffff;
        t.0[3] |= ISP | IOC;
        t
    }
}

/// A producer ring (command or transfer ring) of `slots` TRBs whose last slot holds a Link TRB
/// back to the first. Tracks where the next TRB goes and the producer cycle state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProducerRing {
    slots: usize,
    enqueue: usize,
    cycle: bool,
}

/// Where [`ProducerRing::push`] puts a TRB.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Placement {
    /// Slot index of the TRB (with its cycle bit set).
    pub index: usize,
    pub trb: Trb,
    /// If the ring wrapped after it: the Link TRB to write in the last slot (its cycle bit
    /// set to the old cycle state, so the consumer follows it).
    pub link: Option<Trb>,
}

impl ProducerRing {
    /// A fresh ring of `slots` TRBs (at least 2: one TRB and the link); cycle state 1, as the
    /// controller expects after the ring's address is given to it with cycle 1.
    pub fn new(slots: usize) -> ProducerRing {
        assert!(slots >= 2);
        ProducerRing {
            slots,
            enqueue: 0,
            cycle: true,
        }
    }

    /// Index of the next TRB.
    pub fn enqueue(&self) -> usize {
        self.enqueue
    }

    /// The producer cycle state.
    pub fn cycle(&self) -> bool {
        self.cycle
    }

    /// Places `trb`; `base` is the ring's physical address (for the Link TRB's target).
    pub fn push(&mut self, trb: Trb, base: u64) -> Placement {
        let index = self.enqueue;
        let trb = trb.with_cycle(self.cycle);
        self.enqueue += 1;
        let mut link = None;
        if self.enqueue == self.slots - 1 {
            link = Some(Trb::link(base, trb.chained()).with_cycle(self.cycle));
            self.enqueue = 0;
            self.cycle = !self.cycle;
        }
        Placement { index, trb, link }
    }
}

/// The consumer side of a one-segment event ring.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EventRing {
    slots: usize,
    dequeue: usize,
    cycle: bool,
}

impl EventRing {
    /// A fresh ring of `slots` TRBs: the controller starts producing with cycle 1.
    pub fn new(slots: usize) -> EventRing {
        EventRing {
            slots,
            dequeue: 0,
            cycle: true,
        }
    }

    /// Index of the TRB to look at next.
    pub fn dequeue(&self) -> usize {
        self.dequeue
    }

    /// Whether the TRB at [`EventRing::dequeue`], with cycle bit `cycle`, is a new event.
    pub fn is_new(&self, cycle: bool) -> bool {
        cycle == self.cycle
    }

    /// Moves past the current event (wrapping, with the cycle state toggled, at the end).
    pub fn advance(&mut self) {
        self.dequeue += 1;
        if self.dequeue == self.slots {
            self.dequeue = 0;
            self.cycle = !self.cycle;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn producer_wraps_through_a_link_trb_and_toggles_cycle() {
        let mut r = ProducerRing::new(4);
        let a = r.push(Trb::noop_command(), 0x1000);
        assert_eq!((a.index, a.trb.cycle(), a.link), (0, true, None));
        let b = r.push(Trb::noop_command(), 0x1000);
        assert_eq!((b.index, b.link), (1, None));
        // Slot 2 is the last TRB slot before the link (slot 3).
        let c = r.push(Trb::noop_command(), 0x1000);
        assert_eq!(c.index, 2);
        let link = c.link.expect("wrapped");
        assert_eq!(link.kind(), kind::LINK);
        assert!(link.cycle(), "the link carries the old cycle state");
        assert_eq!(link.event_pointer(), 0x1000);
        assert_ne!(link.0[3] & TOGGLE_CYCLE, 0);
        assert!(!r.cycle());
        let d = r.push(Trb::noop_command(), 0x1000);
        assert_eq!((d.index, d.trb.cycle()), (0, false));
        // A second lap: the link now carries cycle 0 and the state returns to 1.
        r.push(Trb::noop_command(), 0x1000);
        let f = r.push(Trb::noop_command(), 0x1000);
        assert!(!f.link.unwrap().cycle());
        assert!(r.cycle());
    }

    #[test]
    fn a_chained_trb_before_the_link_chains_the_link() {
        let mut r = ProducerRing::new(2);
        let mut t = Trb::normal(0x2000, 512);
        t.0[3] |= CHAIN;
        assert!(r.push(t, 0).link.unwrap().chained());
        assert!(!r.push(Trb::normal(0, 1), 0).link.unwrap().chained());
    }

    #[test]
    fn event_ring_toggles_its_cycle_state_at_the_end() {
        let mut e = EventRing::new(3);
        assert!(e.is_new(true) && !e.is_new(false));
        e.advance();
        e.advance();
        assert_eq!(e.dequeue(), 2);
        e.advance();
        assert_eq!(e.dequeue(), 0);
        assert!(e.is_new(false) && !e.is_new(true));
    }

    #[test]
    fn setup_trb_carries_the_request_and_transfer_type() {
        let req = [0x80, 6, 0, 1, 0, 0, 18, 0];
        let t = Trb::setup(req, Some(true));
        assert_eq!(t.kind(), kind::SETUP);
        assert_eq!(t.0[0], 0x0100_0680);
        assert_eq!(t.0[1], 0x0012_0000);
        assert_eq!(t.0[2], 8);
        assert_eq!((t.0[3] >> 16) & 3, 3);
        assert_ne!(t.0[3] & IDT, 0);
        // Status is OUT after an IN data stage, IN otherwise.
        assert_eq!(Trb::status(Some(true)).0[3] & DIR_IN, 0);
        assert_ne!(Trb::status(None).0[3] & DIR_IN, 0);
        assert_ne!(Trb::status(Some(false)).0[3] & DIR_IN, 0);
    }

    #[test]
    fn event_fields_decode() {
        let e = Trb([
            0x1234_5670,
            0x1,
            (13 << 24) | 100,
            (5 << 24) | (3 << 16) | (32 << 10),
        ]);
        assert_eq!(e.kind(), kind::TRANSFER_EVENT);
        assert_eq!(e.event_pointer(), 0x1_1234_5670);
        assert_eq!(e.completion_code(), code::SHORT_PACKET);
        assert_eq!(e.residue(), 100);
        assert_eq!((e.slot_id(), e.endpoint_id()), (5, 3));
        let d = Trb::set_tr_dequeue(2, 4, 0x5000, true);
        assert_eq!(d.event_pointer(), 0x5001);
        assert_eq!((d.slot_id(), d.endpoint_id()), (2, 4));
    }
}
