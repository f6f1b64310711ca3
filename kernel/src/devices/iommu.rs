//! The IOMMU (Intel VT-d) the firmware may have left on: a remapping unit with DMA translation
//! enabled, or with protected memory regions (PMRs) enabled for pre-boot DMA protection, blocks
//! a controller's DMA, and the results file on the stick would be lost without a word. At boot,
//! before any DMA, every unit the ACPI DMAR lists is read, and translation and the PMRs are
//! turned off where they are on (VT-d 4.1 §10.4.4 GCMD/GSTS, §10.4.31 PMEN: software may clear
//! TE and EPM at any time), each step bounded in time. What was found and done is reported.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use baremark_hw::mmio::Mmio;

use crate::devices::clock::wait_until as clock_wait_until;
use crate::platform::acpi::Dmar;

const VER: u64 = 0x00;
const GCMD: u64 = 0x18;
const GSTS: u64 = 0x1c;
const PMEN: u64 = 0x64;
/// GSTS: translation enabled (bit 31). GCMD's one-shot bits (SRTP 30, SFL 29, WBF 27, SIRTP
/// 24) must be written as 0 when another bit is changed: the specification's mask.
const TES: u32 = 1 << 31;
const ONE_SHOT_MASK: u32 = 0x96ff_ffff;
/// PMEN: enable protected memory (bit 31), protected region status (bit 0).
const EPM: u32 = 1 << 31;
const PRS: u32 = 1;

/// One remapping unit and what was done to it.
pub struct Unit {
    pub base: u64,
    /// `1.0`, from the version register, or null where it could not be read.
    pub version: Option<(u8, u8)>,
    /// Translation was on when the kernel found it.
    pub translation_was_on: bool,
    /// Protected memory regions were on.
    pub protection_was_on: bool,
    /// What was done, or why nothing could be.
    pub outcome: String,
}

/// Reads every unit of the DMAR and turns off what would block DMA.
pub fn disable_dma_blocking(dmar: &Dmar) -> Vec<Unit> {
    dmar.units.iter().map(|u| unit(u.base)).collect()
}

fn unit(base: u64) -> Unit {
    let mut out = Unit {
        base,
        version: None,
        translation_was_on: false,
        protection_was_on: false,
        outcome: String::new(),
    };
    let mut regs = match Mmio::map_firmware_device(base, 0x1000) {
        Ok(r) => r,
        Err(e) => {
            out.outcome = format!("its registers cannot be mapped ({e:?}): left as it is");
            return out;
        }
    };
    let ver = regs.read32(VER);
    if ver == u32::MAX {
        out.outcome = String::from("no unit answers at this address: left alone");
        return out;
    }
    out.version = Some(((ver >> 4) as u8 & 0xf, ver as u8 & 0xf));
    let gsts = regs.read32(GSTS);
    out.translation_was_on = gsts & TES != 0;
    let pmen = regs.read32(PMEN);
    out.protection_was_on = pmen & (EPM | PRS) != 0;
    let mut done = Vec::new();
    if out.translation_was_on {
        let cmd = (gsts & ONE_SHOT_MASK) & !TES;
        regs.write32(GCMD, cmd);
        done.push(if clock_wait_until(100, || regs.read32(GSTS) & TES == 0) {
            "DMA translation turned off"
        } else {
            "DMA translation did NOT turn off within 100 ms"
        });
    }
    if out.protection_was_on {
        regs.write32(PMEN, pmen & !EPM);
        done.push(if clock_wait_until(100, || regs.read32(PMEN) & PRS == 0) {
            "protected memory regions turned off"
        } else {
            "protected memory regions did NOT turn off within 100 ms"
        });
    }
    out.outcome = if done.is_empty() {
        String::from("translation and protected memory off: DMA passes")
    } else {
        done.join("; ")
    };
    out
}
