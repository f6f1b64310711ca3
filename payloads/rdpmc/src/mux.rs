//! Test payload: time-multiplexing end to end (tests/tests/multiplex.rs runs it on the emulated
//! PMU under `-icount shift=0`). It counts 8 `:u` events (instructions, branches, cycles and,
//! on Intel, reference cycles, twice each) over a uniform loop on a PMU with fewer GP
//! counters, multiplexed, then each event alone over the same loop, exactly. Reports
//! `key=value` lines: `configure` (the generation, or the error), `n`, `enabled`, and per
//! event i `raw_i`, `running_i`, `scaled_i` (multiplexed) and `exact_i` (alone).
#![cfg_attr(target_os = "none", no_std, no_main)]

#[cfg(target_os = "none")]
baremark_sdk::entry!(body::run);

#[cfg(target_os = "none")]
mod common;

#[cfg(target_os = "none")]
mod body {
    use crate::common::spin;
    use core::fmt::Write as _;

    use baremark_sdk::{Buf, Scaled};

    const USR: u64 = 1 << 16;
    /// Loop iterations: 4 instructions and 1 branch each.
    const M: u64 = 2_000_000;

    fn events() -> [u64; 8] {
        let r = core::arch::x86_64::__cpuid_count(0, 0);
        if r.ebx == u32::from_le_bytes(*b"Genu") {
            // instructions, branches, core cycles, reference cycles (umask 1)
            let e = [0xc0, 0xc4, 0x3c, 0x13c];
            core::array::from_fn(|i| e[i % 4] | USR)
        } else {
            // instructions, branches, cycles
            let e = [0xc0, 0xc2, 0x76];
            core::array::from_fn(|i| e[i % 3] | USR)
        }
    }

    /// The loop between a configuration and a read of every event.
    #[inline(never)]
    fn measured(out: &mut [Scaled; 8]) -> Result<usize, baremark_sdk::Error> {
        spin(M);
        baremark_sdk::counters_read_scaled(out)
    }

    pub fn run() -> i64 {
        let ev = events();
        let mut buf = Buf::<1024>::new();
        let mut mux = [Scaled::default(); 8];
        // The same instructions between the configuration and the read as alone (below).
        let configured = baremark_sdk::counters_configure_multiplexed(&ev);
        let result = configured.and_then(|_| measured(&mut mux));
        let _ = writeln!(buf, "configure={configured:?}");
        let n = match result {
            Ok(n) => n,
            Err(e) => {
                let _ = writeln!(buf, "error={e:?}");
                let _ = baremark_sdk::report(buf.as_str());
                return 1;
            }
        };
        let _ = writeln!(buf, "n={n}\nenabled={}", mux[0].enabled);
        for (i, s) in mux.iter().enumerate().take(n) {
            let _ = writeln!(
                buf,
                "raw_{i}={}\nrunning_{i}={}\nscaled_{i}={}",
                s.raw,
                s.running,
                s.estimate().unwrap_or(0)
            );
        }
        let _ = baremark_sdk::report(buf.as_str());
        // Each event alone: exact.
        let mut buf = Buf::<1024>::new();
        for (i, &e) in ev.iter().enumerate() {
            let mut alone = [Scaled::default(); 8];
            let exact = baremark_sdk::counters_configure(&[e]).and_then(|_| measured(&mut alone));
            match exact {
                Ok(_) => {
                    let _ = writeln!(buf, "exact_{i}={}", alone[0].raw);
                }
                Err(err) => {
                    let _ = writeln!(buf, "exact_{i}_error={err:?}");
                }
            }
        }
        let _ = baremark_sdk::report(buf.as_str());
        0
    }
}

#[cfg(not(target_os = "none"))]
fn main() {
    baremark_sdk::host_main();
}
