//! The framebuffer console in real QEMU (docs/screen.md): boots the suite with `on_end = halt`,
//! takes a screendump through QMP once the `end` record arrived, decodes every cell and checks
//! the final screen exactly against the serial records; and checks the screen draws nothing
//! inside measured regions (the suite's medians under `-icount` are the same without a frame
//! buffer).

use std::sync::Mutex;
use std::time::Duration;

use baremark::image::{Firmware, OnEnd, Overhead, RunConfig};
use baremark::session::RunOutcome;
use baremark_screen::host::Decoded;
use baremark_screen::{Console, Layout, PixelFormat, Style};
use baremark_tests::{boot_with_screen, expect_record, expect_success, suite_config};

/// One QEMU at a time: the tests of this file would otherwise boot three at once.
static QEMU: Mutex<()> = Mutex::new(());

const LAST_LINE: &str = " The run is over: the machine is halted and can be powered off.";

fn halting_suite() -> RunConfig {
    RunConfig {
        on_end: OnEnd::Halt,
        ..suite_config(Overhead::Empty, None)
    }
}

/// The final screen is up once its last row says so.
fn final_screen_drawn(d: &Decoded) -> bool {
    d.text(d.rows.len() - 1) == LAST_LINE
}

/// Boots `firmware`, reads the final screen and checks it cell by cell.
fn check_final_screen(firmware: Firmware, width: usize, height: usize, bpp: u64) {
    let _one = QEMU.lock().unwrap_or_else(|e| e.into_inner());
    let (outcome, screen) = boot_with_screen(
        firmware,
        halting_suite(),
        Duration::from_secs(240),
        Some(0),
        &[],
        final_screen_drawn,
    );
    expect_success(&outcome);
    let (frame, decoded) = screen.unwrap_or_else(|e| panic!("{e}"));
    // Shown when a check below fails (or with --nocapture).
    eprintln!("the screen:\n{}", decoded.lines().join("\n"));

    // The mode: known for QEMU's VGA under each firmware (boot/src/image.rs, boot_config).
    let mode = expect_record(&outcome, "screen");
    assert_eq!(mode.str("state"), Some("on"));
    assert_eq!(mode.u64("width"), Some(width as u64));
    assert_eq!(mode.u64("height"), Some(height as u64));
    assert_eq!(mode.u64("bytes_per_pixel"), Some(bpp));
    assert_eq!(mode.str("pixel_format"), Some("bgr"));
    assert_eq!((frame.layout.width, frame.layout.height), (width, height));
    let layout = Layout {
        width,
        height,
        stride: width,
        bytes_per_pixel: bpp as usize,
        format: PixelFormat::Bgr,
    };
    assert_eq!(mode.u64("columns"), Some(layout.columns() as u64));
    assert_eq!(mode.u64("rows"), Some(layout.rows() as u64));

    // The status line: the run's status and the time, which the test cannot predict.
    let status = decoded.text(0);
    let time = status
        .strip_prefix(" baremark | run complete: status ok | ")
        .and_then(|t| t.strip_suffix(" s"))
        .unwrap_or_else(|| panic!("status line {status:?}"));
    assert!(time.parse::<f64>().is_ok(), "status line {status:?}");
    assert_eq!(decoded.styles(0), [Style::Status]);

    // Everything else exactly: the summary of the `result` records, the status, the last line.
    let summary = baremark_tests::screen_summary(&outcome.records);
    assert_eq!(summary.benchmarks(), 16, "the default suite's benchmarks");
    let mut expected = Console::new(layout, layout.height * layout.line_bytes()).unwrap();
    expected.final_screen(
        &summary,
        &[],
        "Status: ok (run complete: status ok)",
        false,
        LAST_LINE.trim_start(),
    );
    let want: Vec<String> = (1..layout.rows())
        .map(|r| expected.grid().row_text(r))
        .collect();
    let got: Vec<String> = (1..layout.rows()).map(|r| decoded.text(r)).collect();
    assert_eq!(got, want, "the final screen");
    // Every benchmark of the suite has its row, in the order the records came.
    for (i, r) in outcome
        .records_of("bench_start")
        .map(|r| r.str("bench").unwrap())
        .enumerate()
    {
        let row = decoded.text(4 + i);
        assert!(
            row.split_whitespace().next() == Some(r),
            "row {} is {row:?}, not benchmark {r}",
            4 + i
        );
    }
    let last = decoded.rows.len() - 1;
    assert_eq!(decoded.styles(last), [Style::Heading]);
    assert_eq!(decoded.styles(3), [Style::Heading], "the table's header");

    let cost = expect_record(&outcome, "screen_cost");
    assert!(cost.u64("flushes").unwrap() >= 17, "{}", cost.value);
    assert_eq!(cost.u64("dropped_lines"), Some(0));
}

#[test]
fn bios_final_screen_decodes_exactly() {
    check_final_screen(Firmware::Bios, 1280, 720, 3);
}

#[test]
fn uefi_final_screen_decodes_exactly() {
    if let Err(e) = baremark::qemu::find_ovmf() {
        panic!("OVMF is needed for the UEFI screen (scripts/provision.sh installs it): {e:#}");
    }
    check_final_screen(Firmware::Uefi, 1280, 800, 4);
}

/// (bench, event) -> the median per iteration, of every counted result.
fn medians(outcome: &RunOutcome) -> Vec<(String, String, f64)> {
    outcome
        .records_of("result")
        .filter_map(|r| {
            let stats = match r.get("per_iteration") {
                serde_json::Value::Null => r.get("value"),
                v => v,
            };
            Some((
                r.str("bench")?.to_string(),
                r.str("event")?.to_string(),
                stats.get("median")?.as_f64()?,
            ))
        })
        .collect()
}

/// Drawing happens between payloads only: with `-icount` (the TSC counts instructions) every
/// median is the same with and without a frame buffer. UEFI, where `-vga none` leaves the
/// bootloader without a GOP and the kernel without a screen (the BIOS bootloader needs VESA).
#[test]
fn the_screen_changes_no_measurement() {
    if let Err(e) = baremark::qemu::find_ovmf() {
        panic!("OVMF is needed (scripts/provision.sh installs it): {e:#}");
    }
    let firmware = Firmware::Uefi;
    let _one = QEMU.lock().unwrap_or_else(|e| e.into_inner());
    let run = |extra: &[&str]| {
        let mut qemu = baremark::qemu::QemuOptions::new(firmware, baremark::qemu::Accel::Tcg);
        qemu.timeout = Duration::from_secs(240);
        qemu.icount = Some(0);
        qemu.extra_args = extra.iter().map(|a| a.to_string()).collect();
        let request = baremark::session::BootRequest {
            config: suite_config(Overhead::Empty, None),
            qemu,
            log: None,
        };
        let outcome = baremark::session::boot(&request, &mut |_| {}).unwrap();
        expect_success(&outcome);
        outcome
    };
    let with = run(&[]);
    let without = run(&["-vga", "none"]);
    assert_eq!(expect_record(&with, "screen").str("state"), Some("on"));
    assert_eq!(expect_record(&without, "screen").str("state"), Some("off"));
    let m = medians(&with);
    assert_eq!(m.len(), 16, "a tsc median per benchmark");
    assert_eq!(m, medians(&without));
}
