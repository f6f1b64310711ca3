use alloc::collections::BTreeMap;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;

use proptest::prelude::*;

use super::*;

/// Physical memory made of byte blocks at addresses.
#[derive(Default)]
struct Mem(BTreeMap<u64, Vec<u8>>);

impl PhysMem for Mem {
    fn read(&self, phys: u64, len: usize) -> Result<&[u8], String> {
        let (&start, block) = self
            .0
            .range(..=phys)
            .next_back()
            .ok_or_else(|| String::from("nothing there"))?;
        let off = (phys - start) as usize;
        block
            .get(off..off + len)
            .ok_or_else(|| String::from("beyond the block"))
    }
}

fn fix_checksum(bytes: &mut [u8], at: usize) {
    bytes[at] = 0;
    let sum = bytes.iter().fold(0u8, |s, &b| s.wrapping_add(b));
    bytes[at] = 0u8.wrapping_sub(sum);
}

/// A table with a valid header and checksum around `body`.
fn table(sig: &[u8; 4], body: &[u8]) -> Vec<u8> {
    let mut t = vec![0u8; 36];
    t[..4].copy_from_slice(sig);
    t[4..8].copy_from_slice(&((36 + body.len()) as u32).to_le_bytes());
    t[8] = 1;
    t[10..16].copy_from_slice(b"BAREMK");
    t.extend_from_slice(body);
    fix_checksum(&mut t, 9);
    t
}

fn rsdp(xsdt: u64, rsdt: u32) -> Vec<u8> {
    let mut r = vec![0u8; 36];
    r[..8].copy_from_slice(b"RSD PTR ");
    r[9..15].copy_from_slice(b"BOCHS ");
    r[15] = 2;
    r[16..20].copy_from_slice(&rsdt.to_le_bytes());
    r[20..24].copy_from_slice(&36u32.to_le_bytes());
    r[24..32].copy_from_slice(&xsdt.to_le_bytes());
    fix_checksum(&mut r[..20], 8);
    fix_checksum(&mut r, 32);
    r
}

fn madt_body(entries: &[&[u8]]) -> Vec<u8> {
    let mut b = Vec::new();
    b.extend_from_slice(&0xfee0_0000u32.to_le_bytes());
    b.extend_from_slice(&1u32.to_le_bytes());
    for e in entries {
        b.extend_from_slice(e);
    }
    b
}

fn lapic(uid: u8, id: u8, flags: u32) -> Vec<u8> {
    let mut e = vec![0, 8, uid, id];
    e.extend_from_slice(&flags.to_le_bytes());
    e
}

fn x2apic(id: u32, flags: u32, uid: u32) -> Vec<u8> {
    let mut e = vec![9, 16, 0, 0];
    e.extend_from_slice(&id.to_le_bytes());
    e.extend_from_slice(&flags.to_le_bytes());
    e.extend_from_slice(&uid.to_le_bytes());
    e
}

fn fadt_body(pm_tmr_blk: u32, flags: u32) -> Vec<u8> {
    // 244 bytes in all (ACPI 6.x is 276; the fields read end at 220).
    let mut t = vec![0u8; 244 - 36];
    let at = |o: usize| o - 36;
    t[at(76)..at(80)].copy_from_slice(&pm_tmr_blk.to_le_bytes());
    t[at(91)] = 4;
    t[at(109)] = 1;
    t[at(112)..at(116)].copy_from_slice(&flags.to_le_bytes());
    t
}

fn hpet_body(base: u64) -> Vec<u8> {
    let mut t = vec![0u8; 56 - 36];
    t[0..4].copy_from_slice(&0x8086_a201u32.to_le_bytes());
    t[8..16].copy_from_slice(&base.to_le_bytes());
    t[17..19].copy_from_slice(&128u16.to_le_bytes());
    t
}

fn mcfg_body(base: u64, end_bus: u8) -> Vec<u8> {
    let mut t = vec![0u8; 8];
    t.extend_from_slice(&base.to_le_bytes());
    t.extend_from_slice(&[0, 0, 0, end_bus, 0, 0, 0, 0]);
    t
}

fn dmar_body() -> Vec<u8> {
    let mut t = vec![38, 0b101];
    t.extend_from_slice(&[0; 10]);
    // DRHD, INCLUDE_PCI_ALL, segment 0, base 0xfed90000, no device scope.
    t.extend_from_slice(&[0, 0, 16, 0, 1, 0, 0, 0]);
    t.extend_from_slice(&0xfed9_0000u64.to_le_bytes());
    // RMRR: segment 0, 0x3e000000..=0x3e0fffff.
    t.extend_from_slice(&[1, 0, 24, 0, 0, 0, 0, 0]);
    t.extend_from_slice(&0x3e00_0000u64.to_le_bytes());
    t.extend_from_slice(&0x3e0f_ffffu64.to_le_bytes());
    t
}

const RSDP: u64 = 0xf_5a00;
const RSDT: u64 = 0x7fe_0000;
const XSDT: u64 = 0x7fe_1000;

/// A machine like QEMU's q35 with an IOMMU: every table at its own address.
fn machine(tables: Vec<Vec<u8>>) -> Mem {
    let mut mem = Mem::default();
    let mut xsdt_body = Vec::new();
    let mut rsdt_body = Vec::new();
    for (i, t) in tables.into_iter().enumerate() {
        let at = 0x7fe_2000 + i as u64 * 0x1000;
        xsdt_body.extend_from_slice(&at.to_le_bytes());
        rsdt_body.extend_from_slice(&(at as u32).to_le_bytes());
        mem.0.insert(at, t);
    }
    mem.0.insert(RSDP, rsdp(XSDT, RSDT as u32));
    mem.0.insert(XSDT, table(b"XSDT", &xsdt_body));
    mem.0.insert(RSDT, table(b"RSDT", &rsdt_body));
    mem
}

fn standard() -> Vec<Vec<u8>> {
    vec![
        table(b"FACP", &fadt_body(0x608, 1 << 8)),
        table(
            b"APIC",
            &madt_body(&[
                &lapic(0, 0, 1),
                &lapic(1, 1, 1),
                &x2apic(300, 1, 2),
                &[1, 12, 0, 0, 0, 0, 0xc0, 0xfe, 0, 0, 0, 0],
            ]),
        ),
        table(b"HPET", &hpet_body(0xfed0_0000)),
        table(b"MCFG", &mcfg_body(0xb000_0000, 0xff)),
        table(b"DMAR", &dmar_body()),
        table(b"WAET", &[0; 4]),
    ]
}

#[test]
fn a_full_machine_is_read() {
    let acpi = parse(&machine(standard()), RSDP).unwrap();
    assert_eq!(acpi.problems, Vec::<String>::new());
    assert_eq!(
        (acpi.revision, acpi.root.as_str(), acpi.oem_id.as_str()),
        (2, "XSDT", "BOCHS")
    );
    let sigs: Vec<&str> = acpi.tables.iter().map(|t| t.signature.as_str()).collect();
    assert_eq!(sigs, ["FACP", "APIC", "HPET", "MCFG", "DMAR", "WAET"]);
    let madt = acpi.madt.unwrap();
    assert_eq!(madt.local_apic_address, 0xfee0_0000);
    assert!(madt.pcat_compat);
    assert_eq!(madt.io_apics, 1);
    let ids: Vec<(u32, bool)> = madt.cpus.iter().map(|c| (c.apic_id, c.x2apic)).collect();
    assert_eq!(ids, [(0, false), (1, false), (300, true)]);
    assert_eq!(
        acpi.fadt.unwrap().pm_timer,
        Some(PmTimerBlock {
            port: 0x608,
            wide: true
        })
    );
    assert_eq!(acpi.hpet.unwrap().base, 0xfed0_0000);
    assert_eq!(
        acpi.mcfg,
        [McfgEntry {
            base: 0xb000_0000,
            segment: 0,
            bus_start: 0,
            bus_end: 0xff
        }]
    );
    let dmar = acpi.dmar.unwrap();
    assert_eq!((dmar.address_width, dmar.flags), (39, 0b101));
    assert_eq!(
        dmar.units,
        [DmarUnit {
            base: 0xfed9_0000,
            segment: 0,
            include_all: true
        }]
    );
    assert_eq!(
        dmar.reserved,
        [Reserved {
            segment: 0,
            base: 0x3e00_0000,
            limit: 0x3e0f_ffff
        }]
    );
}

#[test]
fn a_table_with_a_bad_checksum_is_reported_and_the_rest_is_used() {
    let mut t = standard();
    t[1][40] ^= 0xff; // the MADT's flags, checksum not fixed
    let acpi = parse(&machine(t), RSDP).unwrap();
    assert!(acpi.madt.is_none());
    assert_eq!(acpi.problems.len(), 1, "{:?}", acpi.problems);
    assert!(
        acpi.problems[0].starts_with("APIC at 0x7fe3000: checksum is wrong"),
        "{}",
        acpi.problems[0]
    );
    assert_eq!(
        acpi.tables[1].status,
        Err(String::from("checksum is wrong"))
    );
    assert!(acpi.fadt.is_some() && acpi.hpet.is_some() && acpi.dmar.is_some());
}

#[test]
fn a_zero_length_or_overlong_madt_entry_stops_the_walk_without_hanging() {
    for bad in [vec![0u8, 0], vec![0u8, 200, 0, 0]] {
        let t = vec![table(
            b"APIC",
            &madt_body(&[&lapic(0, 0, 1), &bad, &lapic(1, 1, 1)]),
        )];
        let acpi = parse(&machine(t), RSDP).unwrap();
        let madt = acpi.madt.unwrap();
        assert_eq!(madt.cpus.len(), 1, "the entry before the bad one is kept");
        assert_eq!(acpi.problems.len(), 1, "{:?}", acpi.problems);
        assert!(
            acpi.problems[0].contains("the entries from here are ignored"),
            "{}",
            acpi.problems[0]
        );
    }
    // A local APIC entry too short for its fields is ignored, the walk goes on.
    let short = [0u8, 4, 0, 7];
    let t = vec![table(b"APIC", &madt_body(&[&short, &lapic(1, 1, 1)]))];
    let acpi = parse(&machine(t), RSDP).unwrap();
    assert_eq!(acpi.madt.unwrap().cpus.len(), 1);
    assert!(acpi.problems[0].contains("MADT local APIC: an entry of 4 bytes, 8 expected"));
}

#[test]
fn a_bad_rsdp_is_an_error_and_a_bad_extended_checksum_falls_back_to_the_rsdt() {
    let mut mem = machine(standard());
    mem.0.get_mut(&RSDP).unwrap()[0] = b'X';
    assert!(
        parse(&mem, RSDP)
            .unwrap_err()
            .contains("no `RSD PTR ` signature")
    );
    let mut mem = machine(standard());
    mem.0.get_mut(&RSDP).unwrap()[19] ^= 1;
    assert!(
        parse(&mem, RSDP)
            .unwrap_err()
            .contains("checksum of the first 20 bytes")
    );
    let mut mem = machine(standard());
    mem.0.get_mut(&RSDP).unwrap()[35] ^= 1;
    let acpi = parse(&mem, RSDP).unwrap();
    assert_eq!(acpi.root, "RSDT");
    assert!(acpi.problems[0].contains("extended checksum"));
    assert!(acpi.madt.is_some(), "the RSDT lists the same tables");
    assert!(
        parse(&Mem::default(), RSDP)
            .unwrap_err()
            .contains("nothing there")
    );
}

#[test]
fn unreadable_duplicate_and_malformed_tables_are_problems() {
    let mut t = standard();
    t.push(table(b"APIC", &madt_body(&[&lapic(9, 9, 1)])));
    t.push(table(b"HPET", &hpet_body(0xfed0_0010)));
    let mut mem = machine(t);
    // A table listed at an address with nothing behind it.
    let xsdt = mem.0.get_mut(&XSDT).unwrap();
    xsdt.extend_from_slice(&0xdead_0000u64.to_le_bytes());
    let len = xsdt.len() as u32;
    xsdt[4..8].copy_from_slice(&len.to_le_bytes());
    fix_checksum(xsdt, 9);
    let acpi = parse(&mem, RSDP).unwrap();
    assert_eq!(acpi.madt.unwrap().cpus.len(), 3, "the first MADT is used");
    let p = &acpi.problems;
    assert_eq!(p.len(), 3, "{p:?}");
    assert!(
        p[0].starts_with("APIC at 0x7fe8000: a second table of this kind"),
        "{}",
        p[0]
    );
    assert!(
        p[1].starts_with("HPET at 0x7fe9000: a second table of this kind"),
        "{}",
        p[1]
    );
    assert!(
        p[2].starts_with("???? at 0xdead0000: beyond the block: the table is ignored"),
        "{}",
        p[2]
    );
    assert_eq!(acpi.hpet.unwrap().base, 0xfed0_0000);
    let t = vec![table(b"HPET", &hpet_body(0xfed0_0010))];
    let acpi = parse(&machine(t), RSDP).unwrap();
    assert!(acpi.hpet.is_none());
    assert!(acpi.problems[0].contains("not a 1 KiB-aligned block"));
}

#[test]
fn the_pm_timer_is_absent_on_hardware_reduced_acpi_and_24_bit_without_tmr_val_ext() {
    let t = vec![table(b"FACP", &fadt_body(0x608, 0))];
    let f = parse(&machine(t), RSDP).unwrap().fadt.unwrap();
    assert_eq!(
        f.pm_timer,
        Some(PmTimerBlock {
            port: 0x608,
            wide: false
        })
    );
    let t = vec![table(b"FACP", &fadt_body(0x608, 1 << 20))];
    let f = parse(&machine(t), RSDP).unwrap().fadt.unwrap();
    assert!(f.hw_reduced && f.pm_timer.is_none());
    let t = vec![table(b"FACP", &[0; 40])];
    let acpi = parse(&machine(t), RSDP).unwrap();
    assert!(acpi.fadt.is_none() && acpi.problems[0].contains("shorter than ACPI 1.0's 116"));
}

proptest! {
    /// Any damage to any table's bytes gives a result or an error, never a panic or a hang.
    #[test]
    fn damaged_tables_never_panic(which in 0usize..8, at in 0usize..300, byte in any::<u8>(), fix in any::<bool>()) {
        let mut mem = machine(standard());
        let keys: Vec<u64> = mem.0.keys().copied().collect();
        let block = mem.0.get_mut(&keys[which % keys.len()]).unwrap();
        let at = at % block.len();
        block[at] = byte;
        if fix && block.len() >= 36 && &block[..8] != b"RSD PTR " {
            fix_checksum(block, 9);
        }
        let _ = parse(&mem, RSDP);
    }
}
