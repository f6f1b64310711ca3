//! The USB stick as users boot it (issue: results without a serial port): the `--usb` image as
//! a USB mass-storage device on QEMU's xHCI controller, booted by SeaBIOS and by OVMF with no
//! serial port at all. The kernel finds the stick through its own xHCI driver and writes its
//! serial stream into `BAREMARK/RESULTS.LOG`; afterwards the test reads the file out of the
//! image and `baremark report` must reproduce a serial run of the same payloads, exactly
//! (`-icount shift=0`). The kernel must never write outside the file, and never to a stick
//! with another signature.

use std::path::{Path, PathBuf};
use std::time::Duration;

use baremark::image::{Firmware, OnEnd, RunConfig, build_usb_image};
use baremark::logscan;
use baremark::stick::{Place, results_stream};
use baremark_tests::stick::{self, StickBoot};
use serde_json::Value;

/// The payloads: the `core` suite (integer, branch and syscall benchmarks), few repetitions.
fn config(on_end: OnEnd) -> RunConfig {
    let payloads = baremark::payloads::suite_payloads("core").expect("the core suite");
    RunConfig {
        on_end,
        timer_checks: false,
        payloads: payloads
            .iter()
            .map(|p| (p.name.to_string(), p.elf.to_vec()))
            .collect(),
        reps: Some(5),
        warmup: Some(1),
        ..RunConfig::default()
    }
}

fn build(dir: &Path, name: &str, config: &RunConfig) -> (PathBuf, Place) {
    let image = dir.join(name);
    let place = build_usb_image(config, &image, Some(2))
        .expect("building the USB image")
        .expect("a results file");
    (image, place)
}

/// `(payload/bench, event) -> per-iteration median` of every supported result.
fn medians(records: &[baremark::records::Record]) -> Vec<(String, String, f64)> {
    let mut out: Vec<(String, String, f64)> = records
        .iter()
        .filter(|r| r.kind == "result" && r.value["supported"] == Value::Bool(true))
        .map(|r| {
            (
                format!(
                    "{}/{}",
                    r.str("payload").unwrap_or(""),
                    r.str("bench").unwrap_or("")
                ),
                r.str("event").unwrap_or("").to_string(),
                r.value["per_iteration"]["median"]
                    .as_f64()
                    .unwrap_or(f64::NAN),
            )
        })
        .collect();
    out.sort_by(|a, b| (&a.0, &a.1).cmp(&(&b.0, &b.1)));
    out
}

/// The records of the one run in a stream.
fn records_of(stream: &[u8]) -> Vec<baremark::records::Record> {
    let scan = logscan::scan(stream);
    assert!(scan.damage.is_empty(), "damage: {:?}", scan.damage);
    assert_eq!(scan.runs.len(), 1, "one run in the results file");
    scan.runs[0].records.clone()
}

/// Checks that no byte of `image` outside the results file differs from `before`; returns the
/// image now and the file's byte range in it.
fn only_the_file_changed(before: &[u8], image: &Path, place: &Place) -> (Vec<u8>, usize, usize) {
    let after = std::fs::read(image).unwrap();
    assert_eq!(before.len(), after.len(), "the image changed size");
    let from = place.lba as usize * 512;
    let to = from + place.sectors as usize * 512;
    let outside: Vec<usize> = (0..after.len())
        .filter(|&i| (i < from || i >= to) && before[i] != after[i])
        .take(10)
        .collect();
    assert!(
        outside.is_empty(),
        "bytes changed outside the results file: {outside:?}"
    );
    (after, from, to)
}

/// Boots the stick under `firmware` without a serial port and checks the results file
/// against a serial run of the same payloads.
fn stick_reproduces_a_serial_run(firmware: Firmware) {
    let dir = tempfile::tempdir().unwrap();
    let (image, place) = build(dir.path(), "stick.img", &config(OnEnd::Halt));
    let before = std::fs::read(&image).unwrap();

    let mut how = StickBoot::new(firmware);
    how.screendump = true;
    let run = stick::boot(&image, Some(&place), &how)
        .unwrap_or_else(|e| panic!("the stick run failed: {e}"));
    eprintln!(
        "{} stick run: {:.1} s, ended by {}",
        firmware.name(),
        run.seconds,
        run.ended_by
    );
    let header = run.header.expect("the results file's header");
    assert_eq!(header.state, "complete", "{header:?}");

    // Nothing outside the results file changed.
    let (after, from, to) = only_the_file_changed(&before, &image, &place);

    // The stream is a whole run that ended ok, found its stick, and lost nothing.
    let input = results_stream(&after[from..to], "RESULTS.LOG").unwrap();
    let stick_records = records_of(&input.stream);
    let kind = |k: &str| stick_records.iter().find(|r| r.kind == k);
    let end = kind("end").expect("an end record in the results file");
    assert_eq!(end.str("status"), Some("ok"));
    let boot = kind("boot").expect("the boot record");
    assert_eq!(
        boot.value["serial"],
        Value::String("absent".into()),
        "no serial port: {}",
        boot.value
    );
    let file = kind("results_file").expect("the results_file record");
    assert_eq!(file.str("state"), Some("open"), "{}", file.value);
    let outputs = kind("outputs").expect("the outputs record");
    assert_eq!(outputs.value["dropped_bytes"], Value::from(0));

    // The screen, the only thing a user without a serial port sees: every cell decodes, and
    // the final screen is the summary of the results in the file, where they went, the status.
    let (frame, decoded) = run
        .screen
        .expect("a screendump")
        .unwrap_or_else(|e| panic!("the final screen: {e}"));
    eprintln!("the screen:\n{}", decoded.lines().join("\n"));
    let layout = frame.layout;
    let mut expected = baremark_screen::Console::new(layout, layout.height * layout.line_bytes())
        .expect("a console for the screen's layout");
    let note = format!(
        "Results: written to BAREMARK/RESULTS.LOG on {}: {} bytes, complete.",
        file.str("disk").expect("the disk written"),
        header.bytes
    );
    expected.final_screen(
        &baremark_tests::screen_summary(&stick_records),
        &[
            &note,
            "Plug the stick into a computer and run `baremark report` on it.",
        ],
        "Status: ok (run complete: status ok)",
        false,
        "The run is over: the machine is halted and can be powered off.",
    );
    let rows = expected.grid().rows();
    let want: Vec<String> = (1..rows).map(|r| expected.grid().row_text(r)).collect();
    let got: Vec<String> = (1..rows).map(|r| decoded.text(r)).collect();
    assert_eq!(got, want, "the final screen");

    // The same payloads over the serial port (BIOS, IDE disk), exactly the same results.
    let serial = baremark_tests::boot(
        Firmware::Bios,
        config(OnEnd::QemuExit),
        Duration::from_secs(240),
        Some(0),
    );
    assert_eq!(
        serial.qemu_status,
        Some(33),
        "serial run: {:?}",
        serial.tail
    );
    let want = medians(&serial.records);
    let got = medians(&stick_records);
    assert!(!want.is_empty());
    assert_eq!(
        got, want,
        "the stick's results differ from the serial run's"
    );

    // `baremark report` renders it from the image (the stick itself), the file, and the
    // mounted stick's folder.
    let file_path = dir.path().join("mnt/BAREMARK/RESULTS.LOG");
    std::fs::create_dir_all(file_path.parent().unwrap()).unwrap();
    std::fs::write(&file_path, &after[from..to]).unwrap();
    let mut tables = Vec::new();
    for path in [image.clone(), file_path.clone(), dir.path().join("mnt")] {
        let out = baremark_tests::baremark_cli()
            .arg("report")
            .arg(&path)
            .output()
            .expect("running baremark report");
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(
            out.status.success(),
            "report {}: {stderr}\n{stdout}",
            path.display()
        );
        assert!(stderr.contains("state complete"), "{stderr}");
        assert!(stdout.contains("Summary of"), "{stdout}");
        tables.push(stdout[stdout.find("Summary of").unwrap()..].to_string());
    }
    assert!(tables.iter().all(|t| *t == tables[0]));
}

#[test]
fn bios_stick_without_serial_reproduces_the_serial_run() {
    stick_reproduces_a_serial_run(Firmware::Bios);
}

#[test]
fn uefi_stick_without_serial_reproduces_the_serial_run() {
    if let Err(e) = baremark::qemu::find_ovmf() {
        panic!("OVMF is needed for the UEFI stick test (install the ovmf package): {e:#}");
    }
    stick_reproduces_a_serial_run(Firmware::Uefi);
}

/// A stick with another image's signature is never written: boot image A from an IDE disk
/// with image B (another `--usb` image: another disk signature and id) as the only USB stick.
#[test]
fn a_stick_with_another_signature_is_not_written() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(OnEnd::Halt);
    cfg.payloads.truncate(1);
    let (a, a_place) = build(dir.path(), "a.img", &cfg);
    let (b, _) = build(dir.path(), "b.img", &cfg);
    let a_before = std::fs::read(&a).unwrap();
    let b_before = std::fs::read(&b).unwrap();
    let mut how = StickBoot::new(Firmware::Bios);
    how.serial = true;
    how.image_on_usb = false;
    how.other_sticks = vec![b.clone()];
    how.screendump = true;
    let run = stick::boot(&a, Some(&a_place), &how).unwrap_or_else(|e| panic!("{e}"));
    // The screen says where the results are not.
    let (_, screen) = run
        .screen
        .expect("a screendump")
        .unwrap_or_else(|e| panic!("the final screen: {e}"));
    let lines = screen.lines();
    assert!(
        lines.iter().any(|l| l
            == " Results: on the serial port only: no USB stick with this image's results file \
                 was found (the run's log says why)"),
        "{}",
        lines.join("\n")
    );
    let serial = run.serial.expect("serial");
    let scan = logscan::scan(&serial);
    let records = &scan.runs[0].records;
    let file = records
        .iter()
        .find(|r| r.kind == "results_file")
        .expect("the results_file record");
    assert_eq!(file.str("state"), Some("not-found"), "{}", file.value);
    let rejected = file.value["rejected"].to_string();
    assert!(rejected.contains("disk signature"), "{rejected}");
    let end = records
        .iter()
        .find(|r| r.kind == "end")
        .expect("end record");
    assert_eq!(end.str("status"), Some("ok"));
    assert!(
        records.iter().any(|r| r.kind == "result"),
        "the run went on and measured"
    );
    assert_eq!(
        std::fs::read(&b).unwrap(),
        b_before,
        "the other stick was written"
    );
    assert_eq!(
        std::fs::read(&a).unwrap(),
        a_before,
        "the IDE disk was written"
    );
}

/// A machine that dies mid-run keeps everything written before: two benchmarks run, then
/// `spin` (which only the watchdog would end, 10 s later); the power is cut once the two
/// benchmarks' records are on the stick, and `report` renders what is there, says the run did
/// not finish, and exits 3.
#[test]
fn a_power_cut_keeps_what_was_written() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(OnEnd::Halt);
    cfg.payloads.truncate(2);
    let spin = baremark::payloads::builtin("spin").expect("the spin payload");
    cfg.payloads
        .push((spin.name.to_string(), spin.elf.to_vec()));
    let (image, place) = build(dir.path(), "stick.img", &cfg);
    let before = std::fs::read(&image).unwrap();
    let mut how = StickBoot::new(Firmware::Bios);
    how.power_cut = Some(|stream| {
        String::from_utf8_lossy(stream)
            .matches(r#"{"type":"task_exit""#)
            .count()
            >= 2
    });
    let run = stick::boot(&image, Some(&place), &how).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(run.ended_by, stick::POWER_CUT);
    let header = run.header.expect("a header");
    assert_eq!(header.state, "running", "{header:?}");

    let (after, from, to) = only_the_file_changed(&before, &image, &place);

    let out = baremark_tests::baremark_cli()
        .arg("report")
        .arg(&image)
        .output()
        .expect("running baremark report");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}\n{stdout}");
    assert!(stderr.contains("state running"), "{stderr}");
    assert!(stderr.contains("the run did not finish"), "{stderr}");
    // The benchmarks that ended before the cut are in the table, with their values.
    let stream = results_stream(&after[from..to], "RESULTS.LOG")
        .unwrap()
        .stream;
    let records = logscan::scan(&stream).runs[0].records.clone();
    let done: Vec<&str> = records
        .iter()
        .filter(|r| r.kind == "task_exit")
        .filter_map(|r| r.str("task"))
        .collect();
    assert!(done.len() >= 2, "{done:?}");
    for task in done {
        assert!(stdout.contains(task), "{task} missing from:\n{stdout}");
    }
}
