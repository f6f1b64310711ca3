//! A USB device on a root-hub port: Enable Slot, Address Device, the descriptors,
//! SET_CONFIGURATION and Configure Endpoint for a pair of bulk endpoints; control transfers on
//! the default endpoint.

use alloc::format;
use alloc::string::String;

use baremark_hw::dma::DmaBuffer;

use super::context::{self, EndpointFields, InputContext, SlotFields, ep_type};
use super::descriptors::{self, BulkEndpoint, Configuration, DeviceDescriptor};
use super::trb::{self, Trb};
use super::xhci::{Controller, TransferRing};

/// Bytes of the device's small buffer used for control data (descriptors).
pub const CONTROL_DATA_MAX: usize = 2048;

/// How a transfer ended when it did not succeed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TransferError {
    /// The endpoint is halted (STALL handshake).
    Stall,
    /// No event within the time limit.
    Timeout,
    /// Another completion code.
    Failed(u8),
}

impl core::fmt::Display for TransferError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            TransferError::Stall => f.write_str("stall"),
            TransferError::Timeout => f.write_str("no completion (timeout)"),
            TransferError::Failed(c) => write!(f, "{} (code {c})", trb::code_name(*c)),
        }
    }
}

/// An addressed device.
pub struct Device {
    pub slot: u8,
    pub port: u8,
    pub speed: u8,
    context_bytes: usize,
    _output: DmaBuffer,
    input: DmaBuffer,
    ep0: TransferRing,
    ep0_max_packet: u16,
    /// Control data (descriptors) at the start; the storage layer uses the rest.
    pub buf: DmaBuffer,
}

/// The default control endpoint's max packet size before the descriptor says (USB 2.0 §5.5.3,
/// USB 3.2 §9.6.1): 8 for low and full speed (full speed may be more: read it first), 64 for
/// high speed, 512 for SuperSpeed.
fn default_max_packet(speed: u8) -> u16 {
    match speed {
        1 | 2 => 8,
        3 => 64,
        _ => 512,
    }
}

impl Device {
    /// Enables a slot for the device on `port` (already enabled, at `speed`) and addresses it.
    pub fn address(c: &mut Controller, port: u8, speed: u8) -> Result<Device, String> {
        let slot = c
            .command(Trb::enable_slot(0))
            .map_err(|e| format!("Enable Slot: {e}"))?
            .slot_id();
        if slot == 0 || slot > c.max_slots {
            return Err(format!("Enable Slot returned slot {slot}"));
        }
        let output = c.dma(32 * c.context_bytes)?;
        c.set_device_context(slot, output.phys());
        let mut d = Device {
            slot,
            port,
            speed,
            context_bytes: c.context_bytes,
            _output: output,
            input: c.dma(33 * c.context_bytes)?,
            ep0: c.transfer_ring()?,
            ep0_max_packet: default_max_packet(speed),
            buf: c.dma(4096)?,
        };
        let mut ic = InputContext::new(d.context_bytes);
        ic.add(0);
        ic.add(1);
        ic.slot(d.slot_fields(1));
        ic.endpoint(1, d.ep0_fields());
        d.input.write_bytes(0, ic.bytes());
        c.command(Trb::address_device(d.input.phys(), slot))
            .map_err(|e| format!("Address Device: {e}"))?;
        Ok(d)
    }

    fn slot_fields(&self, context_entries: u8) -> SlotFields {
        SlotFields {
            speed: self.speed,
            context_entries,
            root_port: self.port,
        }
    }

    fn ep0_fields(&self) -> EndpointFields {
        EndpointFields {
            ep_type: ep_type::CONTROL,
            max_packet: self.ep0_max_packet,
            max_burst: 0,
            dequeue: self.ep0.phys(),
            cycle: true,
            average_trb_length: 8,
        }
    }

    /// A control transfer on the default endpoint; `data_in` is the data stage's direction
    /// (`None`: no data stage); its `len` bytes are at the start of [`Device::buf`].
    pub fn control(
        &mut self,
        c: &mut Controller,
        request: [u8; 8],
        data_in: Option<bool>,
        len: usize,
    ) -> Result<(), TransferError> {
        let len = len.min(CONTROL_DATA_MAX);
        let setup = self.ep0.push(Trb::setup(request, data_in));
        let data = data_in.map(|dir| self.ep0.push(Trb::data(self.buf.phys(), len as u32, dir)));
        let status = self.ep0.push(Trb::status(data_in));
        c.ring_doorbell(self.slot, 1);
        let slot = self.slot;
        // The event is for the Status TRB, or for an earlier stage that failed.
        let event = c
            .wait_event(2000, |e| {
                let at = e.event_pointer();
                e.kind() == trb::kind::TRANSFER_EVENT
                    && e.slot_id() == slot
                    && e.endpoint_id() == 1
                    && (at == setup || Some(at) == data || at == status)
            })
            .ok_or(TransferError::Timeout)?;
        match event.completion_code() {
            trb::code::SUCCESS | trb::code::SHORT_PACKET => Ok(()),
            trb::code::STALL => {
                // A control endpoint's stall clears with the next Setup, but the xHCI endpoint
                // is halted until reset.
                self.recover_endpoint(c, 1, None);
                Err(TransferError::Stall)
            }
            code => Err(TransferError::Failed(code)),
        }
    }

    /// GET_DESCRIPTOR into the buffer; returns the bytes read.
    fn get_descriptor(
        &mut self,
        c: &mut Controller,
        kind: u8,
        len: u16,
    ) -> Result<alloc::vec::Vec<u8>, String> {
        self.buf.zero(0, CONTROL_DATA_MAX);
        self.control(
            c,
            descriptors::get_descriptor(kind, 0, len),
            Some(true),
            usize::from(len),
        )
        .map_err(|e| format!("GET_DESCRIPTOR({kind}): {e}"))?;
        let mut v = alloc::vec![0u8; usize::from(len).min(CONTROL_DATA_MAX)];
        self.buf.read_bytes(0, &mut v);
        Ok(v)
    }

    /// Reads the device descriptor (8 bytes first, to learn the default endpoint's packet size
    /// on full-speed devices) and the first configuration.
    pub fn describe(
        &mut self,
        c: &mut Controller,
    ) -> Result<(DeviceDescriptor, Configuration), String> {
        let first = self.get_descriptor(c, descriptors::DEVICE, 8)?;
        let d8 = descriptors::parse_device(&first)
            .ok_or_else(|| format!("malformed device descriptor {first:02x?}"))?;
        let max = descriptors::ep0_max_packet(&d8);
        if max != self.ep0_max_packet && max >= 8 {
            self.ep0_max_packet = max;
            let mut ic = InputContext::new(self.context_bytes);
            ic.add(1);
            ic.endpoint(1, self.ep0_fields());
            self.input.write_bytes(0, ic.bytes());
            c.command(Trb::evaluate_context(self.input.phys(), self.slot))
                .map_err(|e| format!("Evaluate Context (max packet {max}): {e}"))?;
        }
        let full = self.get_descriptor(c, descriptors::DEVICE, 18)?;
        let device = descriptors::parse_device(&full)
            .ok_or_else(|| format!("malformed device descriptor {full:02x?}"))?;
        let head = self.get_descriptor(c, descriptors::CONFIGURATION, 9)?;
        let header = descriptors::parse_configuration(&head)
            .ok_or_else(|| format!("malformed configuration descriptor {head:02x?}"))?;
        let total = header.total_length.clamp(9, CONTROL_DATA_MAX as u16);
        let all = self.get_descriptor(c, descriptors::CONFIGURATION, total)?;
        let config = descriptors::parse_configuration(&all)
            .ok_or_else(|| String::from("malformed configuration descriptor"))?;
        Ok((device, config))
    }

    /// SET_CONFIGURATION and Configure Endpoint for a bulk pair; returns their rings.
    pub fn configure_bulk(
        &mut self,
        c: &mut Controller,
        config: u8,
        bulk_in: BulkEndpoint,
        bulk_out: BulkEndpoint,
    ) -> Result<(TransferRing, TransferRing), String> {
        let in_ring = c.transfer_ring()?;
        let out_ring = c.transfer_ring()?;
        let (dci_in, dci_out) = (
            context::dci(bulk_in.address),
            context::dci(bulk_out.address),
        );
        let mut ic = InputContext::new(self.context_bytes);
        ic.add(0);
        ic.add(dci_in);
        ic.add(dci_out);
        ic.slot(self.slot_fields(dci_in.max(dci_out)));
        for (dci, ep, ring, kind) in [
            (dci_in, bulk_in, &in_ring, ep_type::BULK_IN),
            (dci_out, bulk_out, &out_ring, ep_type::BULK_OUT),
        ] {
            ic.endpoint(
                dci,
                EndpointFields {
                    ep_type: kind,
                    max_packet: ep.max_packet,
                    max_burst: ep.max_burst,
                    dequeue: ring.phys(),
                    cycle: true,
                    average_trb_length: 4096,
                },
            );
        }
        self.input.write_bytes(0, ic.bytes());
        c.command(Trb::configure_endpoint(self.input.phys(), self.slot))
            .map_err(|e| format!("Configure Endpoint: {e}"))?;
        self.control(c, descriptors::set_configuration(config), None, 0)
            .map_err(|e| format!("SET_CONFIGURATION({config}): {e}"))?;
        Ok((in_ring, out_ring))
    }

    /// After a halt on endpoint `dci`: Reset Endpoint, then Set TR Dequeue Pointer past what
    /// the endpoint was doing (the ring's next free TRB), so it starts afresh. For a bulk
    /// endpoint the caller then clears the device side (CLEAR_FEATURE(ENDPOINT_HALT)).
    pub fn recover_endpoint(
        &mut self,
        c: &mut Controller,
        dci: u8,
        ring: Option<&TransferRing>,
    ) -> Option<String> {
        let (dequeue, cycle) = match ring {
            Some(r) => r.dequeue_pointer(),
            None => self.ep0.dequeue_pointer(),
        };
        if let Err(e) = c.command(Trb::reset_endpoint(self.slot, dci)) {
            return Some(format!("Reset Endpoint {dci}: {e}"));
        }
        c.command(Trb::set_tr_dequeue(self.slot, dci, dequeue, cycle))
            .err()
            .map(|e| format!("Set TR Dequeue Pointer {dci}: {e}"))
    }
}
