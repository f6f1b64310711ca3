//! Boot-time benchmark: milliseconds from QEMU's start to the kernel's first record and to its
//! end record, BIOS and UEFI under TCG, beside the floor: QEMU + SeaBIOS booting a one-sector
//! image that writes a line to COM1 and exits (`image::floor_image`), with the QEMU binary and
//! flags of the BIOS boot. `x floor` is a median over the floor's median line time: what the
//! boot costs beyond starting the emulator and its firmware. The BIOS target is a first record
//! within 5x the floor (docs/benchmarks.md, "Boot time"). For UEFI, OVMF's own part is printed
//! too: when it says it starts the bootloader (the SeaBIOS floor does not measure OVMF).
//!
//! `cargo run -p baremark-tests --bin boot-timing -- [RUNS]` (default 5). The boots interleave
//! (floor, BIOS, UEFI, floor, ...) so that the machine's load falls on all of them alike. It
//! prints the figures of this machine; it does not judge them.

use std::time::Duration;

use baremark::image::{Firmware, RunConfig};
use baremark::session::Verdict;
use baremark_tests::{boot_floor, boot_with_text_time, median_duration};

const TIMEOUT: Duration = Duration::from_secs(120);
/// OVMF's serial line as it starts the bootloader: the end of the firmware's part of a UEFI
/// boot.
const OVMF_HANDOVER: &str = "BdsDxe: starting Boot";

fn row(image: &str, event: &str, v: &[Duration], floor: Duration) {
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "{image:<6} {event:<13} {:>7.0} {:>7.0} {:>7.0} {:>7.1}x",
        ms(*v.iter().min().unwrap()),
        ms(median_duration(v)),
        ms(*v.iter().max().unwrap()),
        median_duration(v).as_secs_f64() / floor.as_secs_f64()
    );
}

fn main() {
    let runs: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(5)
        .max(1);
    let (mut floor_line, mut floor_exit) = (Vec::new(), Vec::new());
    let mut first = [Vec::new(), Vec::new()];
    let mut end = [Vec::new(), Vec::new()];
    let mut ovmf_done = Vec::new();
    for _ in 0..runs {
        match boot_floor(TIMEOUT) {
            Ok(f) => {
                floor_line.push(f.line_after);
                floor_exit.push(f.exit_after);
            }
            Err(e) => {
                eprintln!("boot-timing: the floor boot failed: {e}");
                std::process::exit(1);
            }
        }
        for (i, firmware) in [Firmware::Bios, Firmware::Uefi].into_iter().enumerate() {
            let (outcome, handover) =
                boot_with_text_time(firmware, RunConfig::default(), TIMEOUT, OVMF_HANDOVER);
            if outcome.verdict() != Verdict::Success {
                eprintln!(
                    "boot-timing: a {} boot failed: {:?}\n{}",
                    firmware.name(),
                    outcome.verdict(),
                    outcome.tail_text()
                );
                std::process::exit(1);
            }
            if firmware == Firmware::Uefi {
                ovmf_done.extend(handover);
            }
            first[i].push(outcome.first_record_after.expect("first record"));
            end[i].push(outcome.end_record_after.expect("end record"));
        }
    }
    let floor = median_duration(&floor_line);
    println!(
        "boot timing under TCG, {runs} runs each, interleaved (milliseconds from QEMU's start)"
    );
    println!(
        "{:<6} {:<13} {:>7} {:>7} {:>7} {:>8}",
        "image", "event", "min", "median", "max", "x floor"
    );
    row("floor", "line", &floor_line, floor);
    row("floor", "QEMU exit", &floor_exit, floor);
    for (i, firmware) in [Firmware::Bios, Firmware::Uefi].into_iter().enumerate() {
        if firmware == Firmware::Uefi && ovmf_done.len() == runs {
            row("uefi", "OVMF done", &ovmf_done, floor);
        }
        row(firmware.name(), "first record", &first[i], floor);
        row(firmware.name(), "end record", &end[i], floor);
    }
    println!(
        "floor: QEMU + SeaBIOS booting a one-sector image that writes a line to COM1 and exits \
         (same QEMU binary and flags as the BIOS boot)"
    );
    println!("OVMF done: OVMF's `{OVMF_HANDOVER}` line, as it starts the bootloader");
    println!(
        "bios first record: {:.1}x the floor (target: 5x or less)",
        median_duration(&first[0]).as_secs_f64() / floor.as_secs_f64()
    );
}
