//! `zoo-spawn-bomb`: every task of it spawns copies of itself, never waiting for any, until the
//! kernel refuses; each child (`arg`: its generation, the root 0) does the same. Without limits
//! this never ends (each orphan spawns more) and eats the machine's memory; the kernel must
//! refuse with a documented error (docs/syscall-abi.md, `spawn`) so the family dies out. Each
//! task exits with `spawned * 100 + refusal` (`baremark_payload_zoo::bomb_exit_code`: how many
//! children it started and why it stopped, as a positive number), so every `task_exit` tells
//! its story; the root also reports it.
#![cfg_attr(target_os = "none", no_std, no_main)]

#[cfg(target_os = "none")]
baremark_sdk::entry_with_arg!(payload::main);

#[cfg(target_os = "none")]
mod payload {
    use baremark_payload_zoo::{bomb_exit_code, report, spawn_raw};

    /// A task stops here even if the kernel never refuses (then its refusal reads 0).
    const MAX_PER_TASK: u64 = 1000;

    pub fn main(generation: u64) -> i64 {
        let mut spawned = 0;
        let refusal = loop {
            if spawned == MAX_PER_TASK {
                break 0;
            }
            let id = spawn_raw("zoo-spawn-bomb", 0, generation + 1);
            if id < 0 {
                break id;
            }
            spawned += 1;
        };
        if generation == 0 {
            report(format_args!(
                "generation=0\nspawned={spawned}\nrefused={refusal}"
            ));
        }
        bomb_exit_code(spawned, refusal)
    }
}

#[cfg(not(target_os = "none"))]
fn main() {
    baremark_payload_zoo::host_main();
}
