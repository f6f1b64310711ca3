//! Reads the virtual TSC through the counter page (`read_tsc_fast`) and right after through
//! RDPMC with the virtual-TSC pseudo-index (which the kernel emulates: CR4.PCE is clear), and
//! reports both and their difference. Then it executes RDPMC with an index it has no counter
//! for (0): the kernel ends it with a `fault` record whose `detail` says so, so this payload
//! never reaches `exit`.
#![cfg_attr(target_os = "none", no_std, no_main)]

#[cfg(target_os = "none")]
baremark_sdk::entry!(payload_main);

#[cfg(target_os = "none")]
fn payload_main() -> i64 {
    use baremark_sdk::{counters, page::VIRTUAL_TSC_INDEX, rdpmc};
    use core::fmt::Write as _;

    if counters::page().is_none() {
        let _ = baremark_sdk::report("error=no counter page");
        return 1;
    }
    let (fast, emulated) = match counters::read_tsc_fast() {
        Some(fast) => (fast, rdpmc(VIRTUAL_TSC_INDEX)),
        None => return 1,
    };
    let mut buf = baremark_sdk::Buf::<512>::new();
    let _ = write!(
        buf,
        "fast={fast}\nrdpmc={emulated}\ndiff={}",
        emulated.wrapping_sub(fast)
    );
    // The same virtual TSC through counters_read, after both reads.
    match baremark_sdk::counters_read(&mut []) {
        Ok(r) => {
            let _ = write!(
                buf,
                "\ncounters_read_tsc={}\ncounters_read_n={}\ngeneration={}",
                r.tsc, r.n, r.generation
            );
        }
        Err(e) => {
            let _ = write!(buf, "\ncounters_read_error={e:?}");
        }
    }
    let _ = write!(
        buf,
        "\nread_values={:?}",
        counters::read_values(&mut [0u64; 16])
    );
    match baremark_sdk::time() {
        Ok((tsc, Some(hz))) => {
            let _ = write!(buf, "\ntime_tsc={tsc}\ntime_hz={hz}");
        }
        Ok((tsc, None)) => {
            let _ = write!(buf, "\ntime_tsc={tsc}\ntime_hz=unknown");
        }
        Err(e) => {
            let _ = write!(buf, "\ntime_error={e:?}");
        }
    }
    // counters_stop freezes the virtual TSC: two reads around some work give the same value;
    // after counters_start it moves again.
    let _ = baremark_sdk::counters_stop();
    let frozen_a = counters::read_tsc_fast().unwrap_or(0);
    for i in 0..1000u64 {
        core::hint::black_box(i);
    }
    let frozen_b = counters::read_tsc_fast().unwrap_or(0);
    let _ = baremark_sdk::counters_start();
    for i in 0..1000u64 {
        core::hint::black_box(i);
    }
    let moving = counters::read_tsc_fast().unwrap_or(0);
    let _ = write!(
        buf,
        "\nstopped_delta={}\nstarted_delta={}",
        frozen_b.wrapping_sub(frozen_a),
        moving.wrapping_sub(frozen_b)
    );
    // Bad arguments come back as error codes: an event on a machine without counters, a result
    // buffer in the task's read-only code.
    let event = [0x4100c0u64];
    let _ = write!(
        buf,
        "\nconfigure_event={:?}\ntime_into_code={:?}",
        baremark_sdk::counters_configure(&event),
        baremark_sdk::Error::check(baremark_sdk::syscall3(
            baremark_sdk::nr::TIME,
            payload_main as *const () as u64,
            0,
            0
        ))
    );
    let _ = baremark_sdk::report(buf.as_str());
    // No counter 0 here: the task ends with a fault record.
    let _ = core::hint::black_box(rdpmc(0));
    0
}

#[cfg(not(target_os = "none"))]
fn main() {
    baremark_sdk::host_main();
}
