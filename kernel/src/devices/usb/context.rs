//! Device and input contexts (xHCI 1.2 §6.2): the slot and endpoint contexts the driver hands
//! to Address Device and Configure Endpoint, built as bytes for a DMA buffer. Contexts are 32
//! or 64 bytes (HCCPARAMS1.CSZ); only their first 32 bytes hold fields.
//!
//! Pure logic, host-tested.

use alloc::vec;
use alloc::vec::Vec;

/// Endpoint types (§6.2.3, EP Type).
pub mod ep_type {
    pub const BULK_OUT: u32 = 2;
    pub const CONTROL: u32 = 4;
    pub const BULK_IN: u32 = 6;
}

/// The device context index of an endpoint: 1 for the default control endpoint, then OUT and
/// IN endpoints of each number.
pub fn dci(endpoint_address: u8) -> u8 {
    let number = endpoint_address & 0x0f;
    if number == 0 {
        1
    } else {
        number * 2 + u8::from(endpoint_address & 0x80 != 0)
    }
}

/// Slot context fields the driver sets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SlotFields {
    /// PORTSC speed value (1 full, 2 low, 3 high, 4 super, 5 super+).
    pub speed: u8,
    /// The highest device context index in use.
    pub context_entries: u8,
    pub root_port: u8,
}

/// Endpoint context fields the driver sets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EndpointFields {
    pub ep_type: u32,
    pub max_packet: u16,
    /// SuperSpeed companion bMaxBurst (0 below SuperSpeed).
    pub max_burst: u8,
    /// The transfer ring's address.
    pub dequeue: u64,
    /// The ring's cycle state.
    pub cycle: bool,
    pub average_trb_length: u16,
}

/// An input context: the control context, the slot context and 31 endpoint contexts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InputContext {
    ctx: usize,
    bytes: Vec<u8>,
}

impl InputContext {
    /// An empty input context with `context_bytes` (32 or 64) per context.
    pub fn new(context_bytes: usize) -> InputContext {
        InputContext {
            ctx: context_bytes,
            bytes: vec![0; context_bytes * 33],
        }
    }

    /// The bytes to copy to the controller.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    fn set_dword(&mut self, context: usize, dword: usize, value: u32) {
        let at = context * self.ctx + dword * 4;
        self.bytes[at..at + 4].copy_from_slice(&value.to_le_bytes());
    }

    fn dword(&self, context: usize, dword: usize) -> u32 {
        let at = context * self.ctx + dword * 4;
        u32::from_le_bytes(self.bytes[at..at + 4].try_into().unwrap_or([0; 4]))
    }

    /// Marks context `index` (0 the slot, else a device context index) as added.
    pub fn add(&mut self, index: u8) {
        let flags = self.dword(0, 1) | 1 << index;
        self.set_dword(0, 1, flags);
    }

    /// Sets the slot context (input context 1).
    pub fn slot(&mut self, f: SlotFields) {
        self.set_dword(
            1,
            0,
            u32::from(f.speed & 0xf) << 20 | u32::from(f.context_entries & 0x1f) << 27,
        );
        self.set_dword(1, 1, u32::from(f.root_port) << 16);
    }

    /// Sets the endpoint context of device context index `dci` (input context `dci + 1`).
    pub fn endpoint(&mut self, dci: u8, f: EndpointFields) {
        let c = usize::from(dci) + 1;
        // Interval 0 (not periodic), no streams, mult 0.
        self.set_dword(c, 0, 0);
        self.set_dword(
            c,
            1,
            3 << 1 // CErr: three retries before an error
                | (f.ep_type & 7) << 3
                | u32::from(f.max_burst) << 8
                | u32::from(f.max_packet) << 16,
        );
        let dequeue = (f.dequeue & !0xf) | u64::from(f.cycle);
        self.set_dword(c, 2, dequeue as u32);
        self.set_dword(c, 3, (dequeue >> 32) as u32);
        self.set_dword(c, 4, u32::from(f.average_trb_length));
    }
}

/// The slot state in a device context's slot context (dword 3, bits 27-31), for notes.
pub fn slot_state(slot_dword3: u32) -> u32 {
    slot_dword3 >> 27
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_context_indices() {
        assert_eq!(dci(0x00), 1);
        assert_eq!(dci(0x01), 2);
        assert_eq!(dci(0x81), 3);
        assert_eq!(dci(0x02), 4);
        assert_eq!(dci(0x8f), 31);
    }

    #[test]
    fn input_context_layout_for_both_context_sizes() {
        for size in [32usize, 64] {
            let mut ic = InputContext::new(size);
            ic.add(0);
            ic.add(1);
            ic.slot(SlotFields {
                speed: 3,
                context_entries: 1,
                root_port: 5,
            });
            ic.endpoint(
                1,
                EndpointFields {
                    ep_type: ep_type::CONTROL,
                    max_packet: 64,
                    max_burst: 0,
                    dequeue: 0x1234_5000,
                    cycle: true,
                    average_trb_length: 8,
                },
            );
            let b = ic.bytes();
            assert_eq!(b.len(), size * 33);
            let dw = |ctx: usize, i: usize| {
                u32::from_le_bytes(
                    b[ctx * size + i * 4..ctx * size + i * 4 + 4]
                        .try_into()
                        .unwrap(),
                )
            };
            assert_eq!(dw(0, 1), 0b11);
            assert_eq!(dw(1, 0), 3 << 20 | 1 << 27);
            assert_eq!(dw(1, 1), 5 << 16);
            assert_eq!(dw(2, 1), 3 << 1 | 4 << 3 | 64 << 16);
            assert_eq!(dw(2, 2), 0x1234_5001);
            assert_eq!(dw(2, 4), 8);
        }
    }
}
