//! The xHCI driver and USB mass storage (docs/usb.md), in QEMU's `qemu-xhci` with
//! `usb-storage` sticks backed by files the tests write and read back: the disk is found with
//! the right capacity and contents, `usb-write` changes exactly its sectors, two sticks are
//! both found, a machine without xHCI says so, and the kernel boots from a USB stick (the
//! firmware's USB driver has used the controller first).

use std::path::{Path, PathBuf};

use std::time::Duration;

use baremark::image::{Firmware, RunConfig};
use baremark::qemu::{Accel, QemuOptions};
use baremark::records::Record;
use baremark::session::{self, BootRequest, RunOutcome, Verdict};
use baremark_kernel::devices::usb::check::{fnv1a64, pattern_byte};

const SECTOR: usize = 512;
/// 4 MiB sticks: 8192 sectors.
const STICK_SECTORS: usize = 8192;

/// Known contents: every byte depends on its position and the stick's `seed`.
fn stick_bytes(seed: u8) -> Vec<u8> {
    (0..STICK_SECTORS * SECTOR)
        .map(|i| (i as u8).wrapping_mul(7) ^ (i / SECTOR) as u8 ^ seed)
        .collect()
}

fn write_stick(dir: &Path, name: &str, seed: u8) -> (PathBuf, Vec<u8>) {
    let path = dir.join(name);
    let bytes = stick_bytes(seed);
    std::fs::write(&path, &bytes).unwrap();
    (path, bytes)
}

/// `-device qemu-xhci` plus one `usb-storage` per file (`props` appended to each device).
fn xhci_args(sticks: &[(&Path, &str)]) -> Vec<String> {
    let mut a = vec!["-device".to_string(), "qemu-xhci,id=xhci".to_string()];
    for (i, (file, props)) in sticks.iter().enumerate() {
        a.push("-drive".into());
        a.push(format!(
            "if=none,id=stick{i},format=raw,file={}",
            file.display()
        ));
        a.push("-device".into());
        a.push(format!("usb-storage,bus=xhci.0,drive=stick{i}{props}"));
    }
    a
}

fn boot(test: &str, extra_lines: Vec<String>, qemu_args: Vec<String>) -> RunOutcome {
    let mut qemu = QemuOptions::new(Firmware::Bios, Accel::Tcg);
    qemu.timeout = Duration::from_secs(120);
    qemu.extra_args = qemu_args;
    let request = BootRequest {
        config: RunConfig {
            test: Some(test.to_string()),
            timer_checks: false,
            extra_lines,
            ..RunConfig::default()
        },
        qemu,
        log: None,
    };
    session::boot(&request, &mut |_| {}).unwrap_or_else(|e| panic!("could not boot: {e:#}"))
}

fn expect_ok(outcome: &RunOutcome) {
    assert_eq!(
        outcome.verdict(),
        Verdict::Success,
        "serial tail:\n{}\nstderr: {}",
        outcome.tail_text(),
        outcome.qemu_stderr
    );
}

fn disks(records: &[Record]) -> Vec<&Record> {
    records.iter().filter(|r| r.kind == "usb_disk").collect()
}

fn expected_digest(bytes: &[u8]) -> String {
    format!("{:016x}", fnv1a64(&bytes[..8 * SECTOR]))
}

#[test]
fn a_stick_is_found_with_its_capacity_and_contents() {
    let dir = tempfile::tempdir().unwrap();
    let (file, bytes) = write_stick(dir.path(), "stick.img", 0x5a);
    let outcome = boot("usb-disks", vec![], xhci_args(&[(&file, "")]));
    expect_ok(&outcome);
    let found = disks(&outcome.records);
    assert_eq!(found.len(), 1, "serial tail:\n{}", outcome.tail_text());
    let d = found[0];
    for line in outcome.text.iter().filter(|l| l.starts_with("usb")) {
        eprintln!("{line}");
    }
    assert_eq!(d.u64("blocks"), Some(STICK_SECTORS as u64));
    assert_eq!(d.u64("block_size"), Some(SECTOR as u64));
    assert_eq!(d.str("vendor"), Some("QEMU"));
    assert_eq!(d.str("product"), Some("QEMU HARDDISK"));
    assert_eq!(d.str("digest"), Some(expected_digest(&bytes).as_str()));
    assert!(d.u64("port").is_some() && d.str("controller").is_some());
    assert_eq!(
        outcome.records_of("usb_note").count(),
        0,
        "{}",
        outcome.tail_text()
    );
}

#[test]
fn usb_write_changes_exactly_its_sectors() {
    let dir = tempfile::tempdir().unwrap();
    let (file, before) = write_stick(dir.path(), "stick.img", 0x33);
    let lba = 1000u64;
    let outcome = boot(
        "usb-write",
        vec![format!("usb_test_lba = {lba}")],
        xhci_args(&[(&file, "")]),
    );
    expect_ok(&outcome);
    let w: Vec<&Record> = outcome.records_of("usb_write").collect();
    assert_eq!(w.len(), 1, "serial tail:\n{}", outcome.tail_text());
    assert_eq!(w[0].str("result"), Some("ok"), "{:?}", w[0]);
    let after = std::fs::read(&file).unwrap();
    assert_eq!(after.len(), before.len());
    let range = lba as usize * SECTOR..(lba as usize + 64) * SECTOR;
    for (i, (&a, &b)) in after.iter().zip(&before).enumerate() {
        if range.contains(&i) {
            let want = pattern_byte((i / SECTOR) as u64, i % SECTOR);
            assert_eq!(a, want, "byte {i} (sector {}) not the pattern", i / SECTOR);
        } else {
            assert_eq!(
                a,
                b,
                "byte {i} (sector {}) outside the write changed",
                i / SECTOR
            );
        }
    }
}

#[test]
fn two_sticks_on_one_controller_and_a_usb2_only_controller_are_all_found() {
    let dir = tempfile::tempdir().unwrap();
    let (a, a_bytes) = write_stick(dir.path(), "a.img", 1);
    let (b, b_bytes) = write_stick(dir.path(), "b.img", 2);
    let (c, c_bytes) = write_stick(dir.path(), "c.img", 3);
    // Two sticks on the default qemu-xhci (USB 3 ports: SuperSpeed), and one on a second
    // controller without USB 3 ports (`p3=0`), where the stick runs at high speed.
    let mut args = xhci_args(&[(&a, ""), (&b, "")]);
    args.extend(
        [
            "-device",
            "qemu-xhci,id=usb2only,p3=0",
            "-drive",
            &format!("if=none,id=stick9,format=raw,file={}", c.display()),
            "-device",
            "usb-storage,bus=usb2only.0,drive=stick9",
        ]
        .map(String::from),
    );
    let outcome = boot("usb-disks", vec![], args);
    expect_ok(&outcome);
    let found = disks(&outcome.records);
    assert_eq!(found.len(), 3, "serial tail:\n{}", outcome.tail_text());
    let mut digests: Vec<&str> = found.iter().filter_map(|d| d.str("digest")).collect();
    digests.sort();
    let mut want = [
        expected_digest(&a_bytes),
        expected_digest(&b_bytes),
        expected_digest(&c_bytes),
    ];
    want.sort();
    assert_eq!(digests, want);
    let mut speeds: Vec<&str> = found.iter().filter_map(|d| d.str("speed")).collect();
    speeds.sort();
    assert_eq!(
        speeds,
        ["high", "super", "super"],
        "{}",
        outcome.tail_text()
    );
    let controllers: std::collections::BTreeSet<&str> =
        found.iter().filter_map(|d| d.str("controller")).collect();
    assert_eq!(controllers.len(), 2, "{controllers:?}");
}

#[test]
fn devices_the_driver_cannot_use_become_notes() {
    let dir = tempfile::tempdir().unwrap();
    let (stick, bytes) = write_stick(dir.path(), "stick.img", 9);
    let (uas, _) = write_stick(dir.path(), "uas.img", 10);
    let mut args = xhci_args(&[(&stick, "")]);
    args.extend(
        [
            "-device",
            "usb-tablet,bus=xhci.0",
            "-device",
            "usb-hub,bus=xhci.0",
            "-device",
            "usb-uas,id=uas,bus=xhci.0",
            "-drive",
            &format!("if=none,id=uasdisk,format=raw,file={}", uas.display()),
            "-device",
            "scsi-hd,bus=uas.0,scsi-id=0,lun=0,drive=uasdisk",
        ]
        .map(String::from),
    );
    let outcome = boot("usb-disks", vec![], args);
    expect_ok(&outcome);
    let found = disks(&outcome.records);
    assert_eq!(found.len(), 1, "serial tail:\n{}", outcome.tail_text());
    assert_eq!(
        found[0].str("digest"),
        Some(expected_digest(&bytes).as_str())
    );
    let notes: Vec<&str> = outcome
        .records_of("usb_note")
        .filter_map(|r| r.str("message"))
        .collect();
    for n in &notes {
        eprintln!("usb_note: {n}");
    }
    for what in ["is not mass storage", "is a hub", "UAS"] {
        assert!(
            notes.iter().any(|n| n.contains(what)),
            "no note with {what:?}: {notes:?}"
        );
    }
}

#[test]
fn a_machine_without_xhci_says_so_and_ends_ok() {
    let outcome = boot("usb-disks", vec![], vec![]);
    expect_ok(&outcome);
    assert!(disks(&outcome.records).is_empty());
    let notes: Vec<&str> = outcome
        .records_of("usb_note")
        .filter_map(|r| r.str("message"))
        .collect();
    assert!(
        notes.iter().any(|n| n.contains("no xHCI controller")),
        "{notes:?}"
    );
}

/// Boots `image` from a USB stick alone (no other disk; the shared stick harness, with a
/// serial port) and returns the serial stream's records and a description for messages.
fn boot_from_stick(firmware: Firmware, image: &Path) -> (Vec<Record>, String) {
    let mut how = baremark_tests::stick::StickBoot::new(firmware);
    how.serial = true;
    how.icount = None;
    let run = baremark_tests::stick::boot(image, None, &how).unwrap_or_else(|e| panic!("{e}"));
    let text = String::from_utf8_lossy(&run.serial.unwrap_or_default()).into_owned();
    (
        baremark::records::records_of_log(&text),
        format!("{}\n{text}", run.ended_by),
    )
}

fn boots_from_a_stick(firmware: Firmware) {
    let dir = tempfile::tempdir().unwrap();
    let image = dir.path().join("boot.img");
    let config = RunConfig {
        test: Some("usb-disks".into()),
        timer_checks: false,
        ..RunConfig::default()
    };
    baremark::image::build_image(firmware, &config, &image).unwrap();
    let size = std::fs::metadata(&image).unwrap().len();
    let head = std::fs::read(&image).unwrap();
    let (records, log) = boot_from_stick(firmware, &image);
    let end = records.iter().find(|r| r.kind == "end");
    assert_eq!(
        end.and_then(|r| r.str("status")),
        Some("ok"),
        "no ok end record; log:\n{log}"
    );
    let found = disks(&records);
    assert_eq!(found.len(), 1, "log:\n{log}");
    // The stick the machine booted from is found, whole, with the image's first sectors.
    assert_eq!(
        found[0].u64("blocks"),
        Some(size / SECTOR as u64),
        "log:\n{log}"
    );
    assert_eq!(
        found[0].str("digest"),
        Some(expected_digest(&head).as_str()),
        "log:\n{log}"
    );
}

#[test]
fn the_kernel_boots_from_a_usb_stick_under_seabios_and_finds_it() {
    boots_from_a_stick(Firmware::Bios);
}

#[test]
fn the_kernel_boots_from_a_usb_stick_under_uefi_and_finds_it() {
    if let Err(e) = baremark::qemu::find_ovmf() {
        panic!("OVMF is needed (scripts/provision.sh installs it): {e:#}");
    }
    boots_from_a_stick(Firmware::Uefi);
}

/// The driver's real user: the results file on the boot stick (docs/results-file.md). A stick
/// with an MBR and an empty results file gets the run's serial stream, and its header says
/// the run completed.
#[test]
fn the_results_file_on_a_stick_receives_the_run() {
    use baremark_kernel::output::results_file::{SECTOR as RF_SECTOR, State, header};
    let dir = tempfile::tempdir().unwrap();
    let (file, mut bytes) = write_stick(dir.path(), "stick.img", 7);
    let (lba, sectors, signature) = (2048usize, 1024u64, 0xb007_57ccu32);
    let id: [u8; 16] = core::array::from_fn(|i| i as u8 * 17);
    bytes[440..444].copy_from_slice(&signature.to_le_bytes());
    bytes[510..512].copy_from_slice(&[0x55, 0xaa]);
    bytes[lba * SECTOR..(lba + 1) * SECTOR].copy_from_slice(&header(&id, sectors, 0, State::Empty));
    std::fs::write(&file, &bytes).unwrap();
    let id_hex: String = id.iter().map(|b| format!("{b:02x}")).collect();
    let mut qemu = QemuOptions::new(Firmware::Bios, Accel::Tcg);
    qemu.timeout = Duration::from_secs(120);
    qemu.extra_args = xhci_args(&[(&file, "")]);
    let request = BootRequest {
        config: RunConfig {
            timer_checks: false,
            extra_lines: vec![
                format!("results_file = {lba}:{sectors}"),
                format!("disk_signature = {signature:#010x}"),
                format!("results_id = {id_hex}"),
            ],
            ..RunConfig::default()
        },
        qemu,
        log: None,
    };
    let outcome = session::boot(&request, &mut |_| {}).unwrap();
    expect_ok(&outcome);
    let rf = outcome
        .record("results_file")
        .expect("a results_file record");
    assert_eq!(rf.str("state"), Some("open"), "{:?}", rf.value);
    let after = std::fs::read(&file).unwrap();
    let head = String::from_utf8_lossy(&after[lba * RF_SECTOR..(lba + 1) * RF_SECTOR]);
    assert!(head.contains("state complete"), "header:\n{head}");
    let stream = String::from_utf8_lossy(&after[(lba + 1) * SECTOR..]);
    assert!(
        stream.contains(r#""type":"end""#),
        "no end record in the file"
    );
    // Nothing outside the results file changed.
    let file_range = lba * SECTOR..(lba + sectors as usize) * SECTOR;
    for (i, (a, b)) in after.iter().zip(&bytes).enumerate() {
        if !file_range.contains(&i) {
            assert_eq!(a, b, "byte {i} outside the results file changed");
        }
    }
}
