//! Booting a `--usb` image the way a user boots the stick: as a USB mass-storage device on an
//! xHCI controller (QEMU's `qemu-xhci` + `usb-storage`), from SeaBIOS or OVMF, with or without
//! a serial port; the run is over when the results file's header says so (or QEMU exits), and
//! the screen can be captured through QMP before QEMU is told to quit.

use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use baremark::image::Firmware;
use baremark::qemu::{Ovmf, find_ovmf, qemu_binary};
use baremark::stick::{Header, Place, parse_header};
use baremark_screen::host::{Decoded, Frame};

use crate::{Qmp, qmp_args};

/// How to boot.
pub struct StickBoot {
    pub firmware: Firmware,
    /// A serial port writing to a file; `false`: no serial port at all (`-serial none`).
    pub serial: bool,
    /// `-icount shift=N` (exact counts, comparable with a serial run under the same shift).
    pub icount: Option<u32>,
    /// Boot the image as a USB stick (`true`) or as an IDE disk (`false`, the stick then is
    /// only one of `other_sticks`).
    pub image_on_usb: bool,
    /// More USB sticks (raw image files) on the same controller.
    pub other_sticks: Vec<PathBuf>,
    /// Capture the screen (PPM) at the end.
    pub screendump: bool,
    pub timeout: Duration,
    /// Pull the plug (kill QEMU) as soon as this accepts the stream in the results file so
    /// far: a machine that dies mid-run.
    pub power_cut: Option<fn(&[u8]) -> bool>,
}

impl StickBoot {
    pub fn new(firmware: Firmware) -> Self {
        Self {
            firmware,
            serial: false,
            icount: Some(0),
            image_on_usb: true,
            other_sticks: Vec::new(),
            screendump: false,
            timeout: Duration::from_secs(240),
            power_cut: None,
        }
    }
}

/// What a stick boot left.
pub struct StickRun {
    /// The results file's header at the end (`None`: no place given, or no header).
    pub header: Option<Header>,
    /// The serial stream, when there was a serial port.
    pub serial: Option<Vec<u8>>,
    /// The final screen, decoded (or why it could not be), when asked for.
    pub screen: Option<Result<(Frame, Decoded), String>>,
    pub seconds: f64,
    /// Why the wait ended: `results file complete`, `QEMU exited (status N)`, `serial end
    /// record`.
    pub ended_by: String,
    /// Kept alive for the files in it.
    pub dir: tempfile::TempDir,
}

/// Boots `image` (with its results file at `place`, if any) and waits for the end of the run:
/// the header's state `complete`/`full`, QEMU's exit, or (with a serial port) the `end`
/// record. Errors say what was seen by then.
pub fn boot(image: &Path, place: Option<&Place>, how: &StickBoot) -> Result<StickRun, String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let qmp_path = dir.path().join("qmp.sock");
    let serial_path = dir.path().join("serial.log");
    let mut cmd = Command::new(qemu_binary().map_err(|e| format!("{e:#}"))?);
    cmd.args(["-machine", "q35", "-m", "256M", "-accel", "tcg", "-cpu"]);
    // As baremark's own runs (boot/src/qemu.rs): QEMU 9.0-10.0 stop with "Bad icount read"
    // when an x2APIC timer is read under -icount, so `max` runs xAPIC there.
    if let Some(shift) = how.icount {
        cmd.arg("max,phys-bits=39,-x2apic");
        cmd.arg("-icount").arg(format!("shift={shift}"));
    } else {
        cmd.arg("max,phys-bits=39");
    }
    if how.firmware == Firmware::Uefi {
        match find_ovmf().map_err(|e| format!("{e:#}"))? {
            Ovmf::Combined(path) => {
                cmd.arg("-bios").arg(path);
            }
            Ovmf::Split { code, vars } => {
                let copy = dir.path().join("OVMF_VARS.fd");
                std::fs::copy(&vars, &copy).map_err(|e| e.to_string())?;
                cmd.arg("-drive").arg(format!(
                    "if=pflash,format=raw,readonly=on,file={}",
                    code.display()
                ));
                cmd.arg("-drive")
                    .arg(format!("if=pflash,format=raw,file={}", copy.display()));
            }
        }
    }
    cmd.args(["-device", "qemu-xhci,id=xhci"]);
    let mut sticks: Vec<&Path> = Vec::new();
    if how.image_on_usb {
        sticks.push(image);
    } else {
        cmd.arg("-drive")
            .arg(format!("format=raw,file={}", image.display()));
    }
    sticks.extend(how.other_sticks.iter().map(PathBuf::as_path));
    for (i, stick) in sticks.iter().enumerate() {
        cmd.arg("-drive").arg(format!(
            "if=none,id=stick{i},format=raw,file={}",
            stick.display()
        ));
        let boot = if i == 0 && how.image_on_usb {
            ",bootindex=0"
        } else {
            ""
        };
        cmd.arg("-device")
            .arg(format!("usb-storage,bus=xhci.0,drive=stick{i}{boot}"));
    }
    cmd.args([
        "-device",
        "isa-debug-exit,iobase=0xf4,iosize=0x04",
        "-display",
        "none",
        "-nodefaults",
        "-vga",
        "std",
        "-nic",
        "none",
        "-no-reboot",
        "-monitor",
        "none",
    ]);
    cmd.arg("-serial").arg(if how.serial {
        format!("file:{}", serial_path.display())
    } else {
        "none".to_string()
    });
    cmd.args(qmp_args(&qmp_path));
    cmd.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let start = Instant::now();
    let mut child = cmd.spawn().map_err(|e| format!("starting QEMU: {e}"))?;
    let result = wait(&mut child, image, place, how, &serial_path, start);
    let ended_by = match result {
        Ok(why) => why,
        Err(e) => {
            let _ = child.kill();
            let _ = child.wait();
            let serial = std::fs::read(&serial_path).unwrap_or_default();
            let tail =
                String::from_utf8_lossy(&serial[serial.len().saturating_sub(3000)..]).into_owned();
            return Err(format!("{e}; serial tail:\n{tail}"));
        }
    };
    let mut screen = None;
    if ended_by == POWER_CUT {
        let _ = child.kill();
    } else if child.try_wait().ok().flatten().is_none() {
        let mut qmp = Qmp::connect(&qmp_path, Duration::from_secs(10))?;
        if how.screendump {
            // The kernel draws its final screen right after the last write to the stick. A
            // screendump can land while it draws (the vCPU runs on; under load a frame showed
            // the last line drawn but not yet the summary above it), so the final screen is the
            // one that shows the end and stays the same over two screendumps.
            let mut last: Option<Vec<String>> = None;
            screen = Some(
                qmp.wait_for_screen(dir.path(), Duration::from_secs(30), move |d| {
                    let lines: Vec<String> = d.lines().iter().map(|l| l.to_string()).collect();
                    let over = lines.iter().any(|l| l.contains("The run is over"));
                    let stable = last.as_ref() == Some(&lines);
                    last = Some(lines);
                    over && stable
                }),
            );
        }
        // QEMU closes the socket as it quits: no reply is expected.
        let _ = qmp.execute("quit", serde_json::json!({}));
    }
    let status = child.wait().map_err(|e| e.to_string())?;
    let mut stderr = String::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = e.read_to_string(&mut stderr);
    }
    if !stderr.trim().is_empty() && status.code() != Some(33) && status.code() != Some(0) {
        return Err(format!("QEMU failed ({status}): {stderr}"));
    }
    Ok(StickRun {
        header: place.and_then(|p| read_header(image, p)),
        serial: how
            .serial
            .then(|| std::fs::read(&serial_path).unwrap_or_default()),
        screen,
        seconds: start.elapsed().as_secs_f64(),
        ended_by,
        dir,
    })
}

/// `StickRun::ended_by` after [`StickBoot::power_cut`].
pub const POWER_CUT: &str = "power cut";

fn wait(
    child: &mut Child,
    image: &Path,
    place: Option<&Place>,
    how: &StickBoot,
    serial_path: &Path,
    start: Instant,
) -> Result<String, String> {
    loop {
        if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
            return Ok(format!("QEMU exited ({status})"));
        }
        if let Some(h) = place.and_then(|p| read_header(image, p))
            && (h.state == "complete" || h.state == "full")
        {
            return Ok(format!("results file {}", h.state));
        }
        if let (Some(cut), Some(p)) = (how.power_cut, place)
            && cut(&read_stream(image, p))
        {
            return Ok(POWER_CUT.into());
        }
        if how.serial {
            let serial = std::fs::read(serial_path).unwrap_or_default();
            if String::from_utf8_lossy(&serial).contains(r#"{"type":"end""#) {
                // The end record is the last thing on the line; give the kernel a moment to
                // draw its last screen.
                std::thread::sleep(Duration::from_millis(500));
                return Ok("serial end record".into());
            }
        }
        if start.elapsed() > how.timeout {
            let state = place
                .and_then(|p| read_header(image, p))
                .map(|h| format!("results file state {}, {} bytes", h.state, h.bytes))
                .unwrap_or_else(|| "no results file header".into());
            return Err(format!(
                "the run did not end within {} s ({state})",
                how.timeout.as_secs()
            ));
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The results file's stream as far as its header counts, read from the image file now.
pub fn read_stream(image: &Path, place: &Place) -> Vec<u8> {
    let Some(h) = read_header(image, place) else {
        return Vec::new();
    };
    let Ok(mut f) = std::fs::File::open(image) else {
        return Vec::new();
    };
    let mut bytes = vec![0u8; h.bytes.min((place.sectors - 1) * 512) as usize];
    let ok =
        f.seek(SeekFrom::Start((place.lba + 1) * 512)).is_ok() && f.read_exact(&mut bytes).is_ok();
    if ok { bytes } else { Vec::new() }
}

/// The results file's header, read from the image file as it is now.
pub fn read_header(image: &Path, place: &Place) -> Option<Header> {
    let mut f = std::fs::File::open(image).ok()?;
    f.seek(SeekFrom::Start(place.lba * 512)).ok()?;
    let mut sector = [0u8; 512];
    f.read_exact(&mut sector).ok()?;
    parse_header(&sector)
}
