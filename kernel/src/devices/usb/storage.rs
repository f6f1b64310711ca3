//! A USB mass-storage disk: SCSI over bulk-only transport (CBW, data, CSW), with the
//! recoveries the BOT specification asks for (clearing a halted endpoint, reset recovery), and
//! the kernel's [`BlockDevice`] over READ(10)/WRITE(10).

use alloc::format;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;

use baremark_hw::dma::DmaBuffer;
use spin::Mutex;

use super::bot::{self, Command, Csw, CswStatus, Inquiry};
use super::context;
use super::descriptors::{self, StorageInterface};
use super::device::{CONTROL_DATA_MAX, Device, TransferError};
use super::regs::speed_name;
use super::trb::{self, Trb};
use super::xhci::{Controller, TransferRing};
use crate::devices::blockdev::{BlockDevice, BlockError};
use crate::devices::clock;

/// Bytes per bulk data transfer: one Normal TRB, which must not cross a 64 KiB boundary.
const CHUNK: usize = 32 * 1024;
/// Where the CBW, the CSW and small replies go in the device's buffer (after control data).
const CBW_AT: usize = CONTROL_DATA_MAX;
const CSW_AT: usize = CBW_AT + 64;
const SMALL_AT: usize = CSW_AT + 64;
/// Bulk transfers get this long: a slow stick can take a while to program flash.
const BULK_TIMEOUT_MS: u64 = 10_000;

/// One bulk endpoint.
struct Pipe {
    address: u8,
    dci: u8,
    ring: TransferRing,
    /// The controller's endpoint is halted (after a stall).
    halted: bool,
}

/// Where the disk is, for records.
#[derive(Clone, Debug)]
pub struct Location {
    pub controller: String,
    pub port: u8,
    pub speed: &'static str,
}

/// An open USB disk.
pub struct UsbDisk {
    ctrl: Arc<Mutex<Controller>>,
    dev: Device,
    interface: u8,
    bulk_in: Pipe,
    bulk_out: Pipe,
    tag: u32,
    data: DmaBuffer,
    /// Offset of the CHUNK-sized window of `data` that does not cross a 64 KiB boundary.
    data_at: usize,
    block_size: u32,
    blocks: u64,
    pub inquiry: Inquiry,
    pub location: Location,
    /// Set when a transfer got no completion: its TRB may still be pending on the ring, so the
    /// disk is not used again (every later call fails at once instead of waiting again).
    dead: Option<String>,
}

/// Why a SCSI command failed.
enum ScsiError {
    /// CHECK CONDITION, with the sense data (key, ASC, ASCQ) if REQUEST SENSE answered.
    Check(Option<(u8, u8, u8)>),
    /// The transport failed (stall on the CBW, bad CSW, timeout...).
    Transport(String),
}

impl core::fmt::Display for ScsiError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            ScsiError::Check(Some((k, asc, ascq))) => {
                write!(
                    f,
                    "check condition, sense key {k:#x} ASC {asc:#04x} ASCQ {ascq:#04x}"
                )
            }
            ScsiError::Check(None) => f.write_str("check condition, no sense data"),
            ScsiError::Transport(e) => f.write_str(e),
        }
    }
}

impl UsbDisk {
    /// Configures the device for `iface` and opens the disk: INQUIRY, TEST UNIT READY until
    /// the unit is ready, READ CAPACITY(10).
    pub fn open(
        ctrl: Arc<Mutex<Controller>>,
        mut dev: Device,
        config: u8,
        iface: StorageInterface,
    ) -> Result<UsbDisk, String> {
        let (Some(bin), Some(bout)) = (iface.bulk_in, iface.bulk_out) else {
            return Err(String::from("the interface lacks a bulk endpoint"));
        };
        let mut c = ctrl.lock();
        let (in_ring, out_ring) = dev.configure_bulk(&mut c, config, bin, bout)?;
        let data = c.dma(2 * CHUNK)?;
        let boundary = (data.phys() + 0xffff) & !0xffff;
        let data_at = if boundary - data.phys() >= CHUNK as u64 || boundary == data.phys() {
            0
        } else {
            (boundary - data.phys()) as usize
        };
        let location = Location {
            controller: format!("{}", c.pci.address),
            port: dev.port,
            speed: speed_name(dev.speed),
        };
        drop(c);
        let mut disk = UsbDisk {
            ctrl: ctrl.clone(),
            dev,
            interface: iface.number,
            bulk_in: Pipe {
                address: bin.address,
                dci: context::dci(bin.address),
                ring: in_ring,
                halted: false,
            },
            bulk_out: Pipe {
                address: bout.address,
                dci: context::dci(bout.address),
                ring: out_ring,
                halted: false,
            },
            tag: 0,
            data,
            data_at,
            block_size: 0,
            blocks: 0,
            inquiry: Inquiry {
                device_type: 0,
                removable: false,
                vendor: String::new(),
                product: String::new(),
                revision: String::new(),
            },
            location,
            dead: None,
        };
        let mut c = ctrl.lock();
        disk.start(&mut c)?;
        drop(c);
        Ok(disk)
    }

    fn start(&mut self, c: &mut Controller) -> Result<(), String> {
        let small = self.dev.buf.phys() + SMALL_AT as u64;
        let n = self
            .scsi(c, &bot::inquiry(), small)
            .map_err(|e| format!("INQUIRY: {e}"))?;
        let mut reply = [0u8; bot::INQUIRY_LEN as usize];
        self.dev.buf.read_bytes(SMALL_AT, &mut reply);
        self.inquiry = bot::parse_inquiry(&reply[..n as usize])
            .ok_or_else(|| format!("INQUIRY returned {n} bytes"))?;
        if self.inquiry.device_type != 0 {
            return Err(format!(
                "{} {}: SCSI device type {:#x}, not a disk",
                self.inquiry.vendor, self.inquiry.product, self.inquiry.device_type
            ));
        }
        // A unit reports UNIT ATTENTION (power on, reset) and NOT READY (becoming ready) for a
        // while; give it five seconds.
        let deadline = clock::Deadline::after_ms(5000);
        loop {
            match self.scsi(c, &bot::test_unit_ready(), 0) {
                Ok(_) => break,
                Err(e) if !deadline.passed() && matches!(e, ScsiError::Check(_)) => {
                    clock::sleep_ms(50);
                }
                Err(e) => return Err(format!("TEST UNIT READY: {e}")),
            }
        }
        let mut last = String::new();
        for _ in 0..3 {
            match self.scsi(c, &bot::read_capacity10(), small) {
                Ok(8) => {
                    let mut b = [0u8; 8];
                    self.dev.buf.read_bytes(SMALL_AT, &mut b);
                    let (blocks, size) = bot::parse_capacity10(&b).unwrap_or((0, 0));
                    if blocks == 1 << 32 {
                        return Err(String::from(
                            "larger than 2 TiB (READ CAPACITY(10) says 0xffffffff): READ(16) is not implemented",
                        ));
                    }
                    if !(512..=4096).contains(&size) || !size.is_power_of_two() {
                        return Err(format!("block size {size} is not supported"));
                    }
                    (self.blocks, self.block_size) = (blocks, size);
                    return Ok(());
                }
                Ok(n) => last = format!("{n} bytes"),
                Err(e) => last = format!("{e}"),
            }
        }
        Err(format!("READ CAPACITY(10): {last}"))
    }

    /// One bulk transfer of `len` bytes at `phys`; returns the bytes transferred.
    fn bulk(
        &mut self,
        c: &mut Controller,
        out: bool,
        phys: u64,
        len: usize,
    ) -> Result<u32, TransferError> {
        let slot = self.dev.slot;
        let pipe = if out {
            &mut self.bulk_out
        } else {
            &mut self.bulk_in
        };
        let at = pipe.ring.push(Trb::normal(phys, len as u32));
        let dci = pipe.dci;
        c.ring_doorbell(slot, dci);
        let event = c
            .wait_event(BULK_TIMEOUT_MS, |e| {
                e.kind() == trb::kind::TRANSFER_EVENT
                    && e.slot_id() == slot
                    && e.endpoint_id() == dci
                    && e.event_pointer() == at
            })
            .ok_or_else(|| {
                self.dead = Some(format!(
                    "a bulk transfer on endpoint {dci} got no completion within {} s",
                    BULK_TIMEOUT_MS / 1000
                ));
                TransferError::Timeout
            })?;
        match event.completion_code() {
            trb::code::SUCCESS | trb::code::SHORT_PACKET => {
                Ok((len as u32).saturating_sub(event.residue()))
            }
            trb::code::STALL => {
                pipe.halted = true;
                Err(TransferError::Stall)
            }
            code => {
                // Errors such as babble or transaction errors halt the endpoint too.
                pipe.halted = true;
                Err(TransferError::Failed(code))
            }
        }
    }

    /// Clears a halt on a bulk endpoint: the controller's side (Reset Endpoint, Set TR
    /// Dequeue Pointer) if it is halted, then the device's (CLEAR_FEATURE(ENDPOINT_HALT)).
    fn clear_halt(&mut self, c: &mut Controller, out: bool) -> Result<(), String> {
        let pipe = if out { &self.bulk_out } else { &self.bulk_in };
        let (dci, address, halted) = (pipe.dci, pipe.address, pipe.halted);
        if halted {
            let ring = if out {
                &self.bulk_out.ring
            } else {
                &self.bulk_in.ring
            };
            if let Some(e) = self.dev.recover_endpoint(c, dci, Some(ring)) {
                return Err(e);
            }
            if out {
                self.bulk_out.halted = false;
            } else {
                self.bulk_in.halted = false;
            }
        }
        self.dev
            .control(c, descriptors::clear_endpoint_halt(address), None, 0)
            .map_err(|e| format!("CLEAR_FEATURE(ENDPOINT_HALT {address:#04x}): {e}"))
    }

    /// Reset recovery (BOT §5.3.4): Bulk-Only Mass Storage Reset, then clear both endpoints.
    fn reset_recovery(&mut self, c: &mut Controller) -> Result<(), String> {
        self.dev
            .control(c, descriptors::bulk_only_reset(self.interface), None, 0)
            .map_err(|e| format!("Bulk-Only Mass Storage Reset: {e}"))?;
        self.clear_halt(c, false)?;
        self.clear_halt(c, true)
    }

    /// Runs `cmd` through the bulk-only transport; `data` is the data phase's buffer.
    /// Returns the CSW and the bytes the data phase moved.
    fn transport(
        &mut self,
        c: &mut Controller,
        cmd: &Command,
        data: u64,
    ) -> Result<(Csw, u32), String> {
        self.tag = self.tag.wrapping_add(1);
        let tag = self.tag;
        self.dev.buf.write_bytes(CBW_AT, &bot::cbw(tag, 0, cmd));
        let base = self.dev.buf.phys();
        match self.bulk(c, true, base + CBW_AT as u64, bot::CBW_LEN) {
            Ok(_) => {}
            Err(e) => {
                let _ = self.reset_recovery(c);
                return Err(format!("CBW: {e}"));
            }
        }
        let mut moved = 0;
        if cmd.data_len > 0 {
            match self.bulk(c, !cmd.data_in, data, cmd.data_len as usize) {
                Ok(n) => moved = n,
                // The device refuses the data: clear the halt, the CSW says why (BOT §6.7).
                Err(TransferError::Stall) => self.clear_halt(c, !cmd.data_in)?,
                Err(e) => {
                    let _ = self.reset_recovery(c);
                    return Err(format!("data phase: {e}"));
                }
            }
        }
        let mut csw = None;
        for _ in 0..2 {
            self.dev.buf.zero(CSW_AT, 64);
            match self.bulk(c, false, base + CSW_AT as u64, 64) {
                Ok(n) => {
                    csw = Some(n);
                    break;
                }
                Err(TransferError::Stall) => self.clear_halt(c, false)?,
                Err(e) => {
                    let _ = self.reset_recovery(c);
                    return Err(format!("CSW: {e}"));
                }
            }
        }
        let Some(n) = csw else {
            let _ = self.reset_recovery(c);
            return Err(String::from("CSW: the endpoint stalled twice"));
        };
        let mut bytes = [0u8; 64];
        self.dev.buf.read_bytes(CSW_AT, &mut bytes);
        match bot::parse_csw(&bytes[..(n as usize).min(64)], tag, cmd.data_len) {
            Ok(csw) if csw.status == CswStatus::PhaseError => {
                let _ = self.reset_recovery(c);
                Err(String::from("phase error"))
            }
            Ok(csw) => Ok((csw, moved)),
            Err(e) => {
                let _ = self.reset_recovery(c);
                Err(format!("{e}"))
            }
        }
    }

    /// Runs a SCSI command; on CHECK CONDITION fetches the sense data. Returns the bytes moved.
    fn scsi(&mut self, c: &mut Controller, cmd: &Command, data: u64) -> Result<u32, ScsiError> {
        let (csw, moved) = self.transport(c, cmd, data).map_err(ScsiError::Transport)?;
        if csw.status == CswStatus::Passed {
            return Ok(moved);
        }
        let small = self.dev.buf.phys() + SMALL_AT as u64;
        let sense = match self.transport(c, &bot::request_sense(), small) {
            Ok((s, n)) if s.status == CswStatus::Passed => {
                let mut b = [0u8; bot::SENSE_LEN as usize];
                self.dev.buf.read_bytes(SMALL_AT, &mut b);
                bot::parse_sense(&b[..(n as usize).min(b.len())])
            }
            _ => None,
        };
        Err(ScsiError::Check(sense))
    }

    /// READ(10)/WRITE(10) of whole chunks; `buf` holds the blocks from `lba` on.
    fn rw(&mut self, write: bool, lba: u64, buf: &mut [u8]) -> Result<(), BlockError> {
        if let Some(why) = &self.dead {
            return Err(BlockError(format!("the disk is no longer used: {why}")));
        }
        let bs = self.block_size as usize;
        if bs == 0 || !buf.len().is_multiple_of(bs) {
            return Err(BlockError(format!(
                "{} bytes is not a multiple of the block size {bs}",
                buf.len()
            )));
        }
        let count = (buf.len() / bs) as u64;
        if lba.checked_add(count).is_none_or(|end| end > self.blocks) {
            return Err(BlockError(format!(
                "blocks {lba}..{} lie beyond the disk's {} blocks",
                lba.saturating_add(count),
                self.blocks
            )));
        }
        let ctrl = self.ctrl.clone();
        let mut c = ctrl.lock();
        let per_chunk = CHUNK / bs;
        for (i, piece) in buf.chunks_mut(per_chunk * bs).enumerate() {
            let at = lba + (i * per_chunk) as u64;
            let blocks = (piece.len() / bs) as u16;
            let cmd = bot::read_write10(write, at as u32, blocks, self.block_size);
            let phys = self.data.phys() + self.data_at as u64;
            if write {
                self.data.write_bytes(self.data_at, piece);
            }
            let mut last = None;
            // One retry: a UNIT ATTENTION (the device was reset) fails one command.
            for _ in 0..2 {
                match self.scsi(&mut c, &cmd, phys) {
                    Ok(n) if n as usize == piece.len() => {
                        last = None;
                        break;
                    }
                    Ok(n) => last = Some(format!("{n} of {} bytes moved", piece.len())),
                    Err(e) => last = Some(format!("{e}")),
                }
            }
            if let Some(why) = last {
                return Err(BlockError(format!(
                    "{} of {blocks} blocks at {at}: {why}",
                    if write { "WRITE(10)" } else { "READ(10)" }
                )));
            }
            if !write {
                self.data.read_bytes(self.data_at, piece);
            }
        }
        Ok(())
    }
}

impl BlockDevice for UsbDisk {
    fn block_size(&self) -> u32 {
        self.block_size
    }

    fn blocks(&self) -> u64 {
        self.blocks
    }

    fn read(&mut self, lba: u64, buf: &mut [u8]) -> Result<(), BlockError> {
        self.rw(false, lba, buf)
    }

    fn write(&mut self, lba: u64, data: &[u8]) -> Result<(), BlockError> {
        // The DMA copy needs a mutable slice only for reads; writes copy from a private one.
        let mut copy: Vec<u8> = data.to_vec();
        self.rw(true, lba, &mut copy)
    }

    fn describe(&self) -> String {
        let i = &self.inquiry;
        let name: Vec<&str> = [i.vendor.as_str(), i.product.as_str(), i.revision.as_str()]
            .into_iter()
            .filter(|s| !s.is_empty())
            .collect();
        format!(
            "{} (xHCI {} port {}, {} speed)",
            name.join(" "),
            self.location.controller,
            self.location.port,
            self.location.speed
        )
    }
}
