//! xHCI register offsets and bits (xHCI 1.2 ch. 5, §7.1-7.2), for the accesses in `xhci.rs`
//! and `ports.rs` through `baremark_hw::mmio::Mmio`.

// Capability registers (from the BAR's start).
pub const CAPLENGTH: u64 = 0x00;
pub const HCSPARAMS1: u64 = 0x04;
pub const HCSPARAMS2: u64 = 0x08;
pub const HCCPARAMS1: u64 = 0x10;
pub const DBOFF: u64 = 0x14;
pub const RTSOFF: u64 = 0x18;

/// HCCPARAMS1: 64-bit addressing.
pub const HCC_AC64: u32 = 1 << 0;
/// HCCPARAMS1: contexts are 64 bytes.
pub const HCC_CSZ: u32 = 1 << 2;
/// HCCPARAMS1: ports have power switches.
pub const HCC_PPC: u32 = 1 << 3;

// Operational registers (from CAPLENGTH).
pub const USBCMD: u64 = 0x00;
pub const USBSTS: u64 = 0x04;
pub const PAGESIZE: u64 = 0x08;
pub const CRCR: u64 = 0x18;
pub const DCBAAP: u64 = 0x30;
pub const CONFIG: u64 = 0x38;
/// The first port's register set; each is 16 bytes.
pub const PORT_BASE: u64 = 0x400;

pub const CMD_RUN: u32 = 1 << 0;
pub const CMD_HCRST: u32 = 1 << 1;
pub const STS_HCH: u32 = 1 << 0;
pub const STS_HSE: u32 = 1 << 2;
pub const STS_CNR: u32 = 1 << 11;
pub const STS_HCE: u32 = 1 << 12;
/// CRCR: ring cycle state.
pub const CRCR_RCS: u64 = 1 << 0;

// PORTSC.
pub const PORT_CCS: u32 = 1 << 0;
pub const PORT_PED: u32 = 1 << 1;
pub const PORT_PR: u32 = 1 << 4;
pub const PORT_PLS_SHIFT: u32 = 5;
pub const PORT_PP: u32 = 1 << 9;
pub const PORT_SPEED_SHIFT: u32 = 10;
pub const PORT_CSC: u32 = 1 << 17;
pub const PORT_PEC: u32 = 1 << 18;
pub const PORT_WRC: u32 = 1 << 19;
pub const PORT_OCC: u32 = 1 << 20;
pub const PORT_PRC: u32 = 1 << 21;
pub const PORT_PLC: u32 = 1 << 22;
pub const PORT_CEC: u32 = 1 << 23;
pub const PORT_WPR: u32 = 1 << 31;
/// The change bits (write 1 to clear).
pub const PORT_CHANGES: u32 =
    PORT_CSC | PORT_PEC | PORT_WRC | PORT_OCC | PORT_PRC | PORT_PLC | PORT_CEC;
/// The bits a read-modify-write of PORTSC may write back as read: port power, the indicator
/// and the wake enables. Everything else is read-only, a strobe, or write-1-to-clear (writing
/// back PED as read would disable the port).
pub const PORT_PRESERVE: u32 = PORT_PP | 0b11 << 14 | 0b111 << 25;

// Runtime registers (from RTSOFF): interrupter 0.
pub const IR0: u64 = 0x20;
pub const IMAN: u64 = 0x00;
pub const ERSTSZ: u64 = 0x08;
pub const ERSTBA: u64 = 0x10;
pub const ERDP: u64 = 0x18;
/// ERDP: event handler busy (write 1 to clear).
pub const ERDP_EHB: u64 = 1 << 3;

// Extended capabilities.
pub const XCAP_LEGACY: u8 = 1;
pub const XCAP_PROTOCOL: u8 = 2;
pub const LEGSUP_BIOS_OWNED: u32 = 1 << 16;
pub const LEGSUP_OS_OWNED: u32 = 1 << 24;
/// USBLEGCTLSTS: the SMI enables (cleared to stop the firmware's SMIs) ...
pub const LEGCTL_SMI_ENABLES: u32 = 1 | 1 << 4 | 0b111 << 13;
/// ... and the SMI event bits (write 1 to clear).
pub const LEGCTL_SMI_EVENTS: u32 = 0b111 << 29;

/// PORTSC speed values.
pub fn speed_name(speed: u8) -> &'static str {
    match speed {
        1 => "full",
        2 => "low",
        3 => "high",
        4 => "super",
        5 => "super+",
        _ => "unknown",
    }
}
