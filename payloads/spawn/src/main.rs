//! The spawner payload: its own virtual TSC around `spawn("loop1000") + wait`, once without and
//! once with `SPAWN_ADD_CHILD`. The two measurements run the same instructions (only a flag
//! register differs), so under `-icount shift=0` `added - plain` is exactly the child's virtual
//! TSC at its exit. Then the error cases: an unknown name, a bad pointer, a non-child, a child
//! that faults (`rdpmc`: `EABORTED`). Needs `loop1000` and `rdpmc` in the ramdisk.
#![cfg_attr(target_os = "none", no_std, no_main)]

#[cfg(target_os = "none")]
baremark_sdk::entry!(payload_main);

#[cfg(target_os = "none")]
mod body {
    use core::fmt::Write as _;

    use baremark_sdk::{SPAWN_ADD_CHILD, counters, nr, syscall3};

    /// `(delta, id, code)`: the virtual TSC around spawn + wait of `name`.
    #[inline(never)]
    fn measure(name: &str, flags: u64) -> Option<(u64, i64, i64)> {
        let t0 = counters::read_tsc_fast()?;
        let id = syscall3(nr::SPAWN, name.as_ptr() as u64, name.len() as u64, flags);
        let code = syscall3(nr::WAIT, id as u64, 0, 0);
        let t1 = counters::read_tsc_fast()?;
        Some((t1.wrapping_sub(t0), id, code))
    }

    pub fn run() -> i64 {
        if counters::page().is_none() {
            let _ = baremark_sdk::report("error=no counter page");
            return 1;
        }
        let name = core::hint::black_box("loop1000");
        let Some((plain, plain_id, plain_code)) = measure(name, core::hint::black_box(0)) else {
            return 1;
        };
        let Some((added, added_id, added_code)) =
            measure(name, core::hint::black_box(SPAWN_ADD_CHILD))
        else {
            return 1;
        };
        let unknown = syscall3(nr::SPAWN, b"nosuch".as_ptr() as u64, 6, 0);
        let fault = syscall3(nr::SPAWN, 0x10, 8, 0);
        let bad_flags = syscall3(nr::SPAWN, name.as_ptr() as u64, name.len() as u64, 2);
        let not_child = baremark_sdk::wait(0);
        let again = baremark_sdk::wait(added_id as u64);
        let aborted = match baremark_sdk::spawn("rdpmc", 0) {
            Ok(id) => baremark_sdk::wait(id),
            Err(_) => 1,
        };
        let mut buf = baremark_sdk::Buf::<512>::new();
        let _ = write!(
            buf,
            "plain={plain}\nadded={added}\nplain_id={plain_id}\nadded_id={added_id}\n\
             plain_code={plain_code}\nadded_code={added_code}\nunknown={unknown}\nfault={fault}\n\
             bad_flags={bad_flags}\nnot_child={not_child}\nagain={again}\naborted={aborted}"
        );
        let _ = baremark_sdk::report(buf.as_str());
        0
    }
}

#[cfg(target_os = "none")]
fn payload_main() -> i64 {
    body::run()
}

#[cfg(not(target_os = "none"))]
fn main() {
    baremark_sdk::host_main();
}
