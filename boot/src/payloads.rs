//! The built-in payloads: static ELF64 executables for ring 3, built from `payloads/` for
//! x86_64-unknown-none by cargo (artifact dependencies) and embedded here.

/// A payload by name.
#[derive(Clone, Copy, Debug)]
pub struct Payload {
    pub name: &'static str,
    pub elf: &'static [u8],
}

/// Every built-in payload.
pub static BUILTIN: &[Payload] = &[
    Payload {
        name: "hello",
        elf: include_bytes!(env!("BAREMARK_PAYLOAD_HELLO_ELF")),
    },
    // Test payloads: the virtual TSC around 1000 / 2000 iterations of a 4-instruction loop.
    Payload {
        name: "loop1000",
        elf: include_bytes!(env!("BAREMARK_PAYLOAD_LOOP1000_ELF")),
    },
    Payload {
        name: "loop2000",
        elf: include_bytes!(env!("BAREMARK_PAYLOAD_LOOP2000_ELF")),
    },
    // Test payload: the virtual TSC from the counter page and from emulated RDPMC.
    Payload {
        name: "rdpmc",
        elf: include_bytes!(env!("BAREMARK_PAYLOAD_RDPMC_ELF")),
    },
    // Test payload: a task's hardware counters (page, RDPMC, widening, children) on a PMU.
    Payload {
        name: "hwcount",
        elf: include_bytes!(env!("BAREMARK_PAYLOAD_HWCOUNT_ELF")),
    },
    // Test payload: threads on other CPUs sharing the task's memory (payloads/rdpmc/src/threads.rs).
    Payload {
        name: "threads",
        elf: include_bytes!(env!("BAREMARK_PAYLOAD_THREADS_ELF")),
    },
    // Test payload: overflow thresholds and the notification handler on a PMU.
    Payload {
        name: "notify",
        elf: include_bytes!(env!("BAREMARK_PAYLOAD_NOTIFY_ELF")),
    },
    // Test payload: 8 events time-multiplexed, then each alone.
    Payload {
        name: "mux",
        elf: include_bytes!(env!("BAREMARK_PAYLOAD_MUX_ELF")),
    },
    // Test payload: system-wide counters (system_configure, system_read) and their rules.
    Payload {
        name: "sysmode",
        elf: include_bytes!(env!("BAREMARK_PAYLOAD_SYSMODE_ELF")),
    },
    // Core-to-core latency: every ordered pair of CPUs, CAS and one-writer-one-reader
    // (payloads/cores, docs/cores.md; `baremark c2c`).
    Payload {
        name: "c2c",
        elf: include_bytes!(env!("BAREMARK_PAYLOAD_C2C_ELF")),
    },
    // Bandwidth on 1..N cores started together, and loaded latency (`baremark bandwidth`).
    Payload {
        name: "bandwidth",
        elf: include_bytes!(env!("BAREMARK_PAYLOAD_BANDWIDTH_ELF")),
    },
    // Test payload: wall costs by RDTSC (null syscalls with 4 counters; a 10M-instruction loop
    // to sample), for the Linux side-by-side benchmark (payloads/rdpmc/src/wallcost.rs).
    Payload {
        name: "wallcost",
        elf: include_bytes!(env!("BAREMARK_PAYLOAD_WALLCOST_ELF")),
    },
    // Test payload: loops forever without a system call (only the watchdog ends it).
    Payload {
        name: "spin",
        elf: include_bytes!(env!("BAREMARK_PAYLOAD_SPIN_ELF")),
    },
    // Test payload: spawns loop1000 and rdpmc (which must be in the ramdisk too) as children.
    Payload {
        name: "spawner",
        elf: include_bytes!(env!("BAREMARK_PAYLOAD_SPAWNER_ELF")),
    },
    // Test payload for sampling profiles: `heavy` and `light`, 3:1 instructions, with symbols
    // and line tables (docs/profiling.md).
    Payload {
        name: "profile",
        elf: include_bytes!(env!("BAREMARK_PAYLOAD_PROFILE_ELF")),
    },
    // The syscall fuzzer: `--args fuzz-syscalls="seed=N calls=N"`, with `--canary`
    // (docs/reliability.md).
    Payload {
        name: "fuzz-syscalls",
        elf: include_bytes!(env!("BAREMARK_PAYLOAD_FUZZ_SYSCALLS_ELF")),
    },
];

/// A payload of the benchmark suite (`payloads/suite`, crate `baremark-payload-suite`), built
/// as an artifact dependency; build.rs names its path `BAREMARK_SUITE_ELF_<bin>`.
#[cfg(baremark_suite)]
macro_rules! suite_payload {
    ($name:literal) => {
        Payload {
            name: $name,
            elf: include_bytes!(env!(
                concat!("BAREMARK_SUITE_ELF_", $name),
                concat!("payloads/suite has no bin `", $name, "`")
            )),
        }
    };
}

/// The benchmark suite's payloads (docs/benchmarks.md), when this tool was built with them.
#[cfg(baremark_suite)]
pub static SUITE: &[Payload] = &[
    suite_payload!("empty"),
    suite_payload!("add-latency"),
    suite_payload!("add-throughput"),
    suite_payload!("int-divide"),
    suite_payload!("branch-predictable"),
    suite_payload!("branch-unpredictable"),
    suite_payload!("chase-l1"),
    suite_payload!("chase-l2"),
    suite_payload!("chase-llc"),
    suite_payload!("chase-dram"),
    suite_payload!("seq-read"),
    suite_payload!("rep-movsb"),
    suite_payload!("store-forward"),
    suite_payload!("syscall"),
    suite_payload!("read-fast"),
    suite_payload!("read-rdpmc"),
    // Not in a named suite (it needs hardware counters): `--builtin read-slot`, harness-costs.
    suite_payload!("read-slot"),
];

/// The benchmark suite's payloads: none, this tool was built without `payloads/suite`.
#[cfg(not(baremark_suite))]
pub static SUITE: &[Payload] = &[];

/// A misbehaving payload (`payloads/zoo`, crate `baremark-payload-zoo`), built as an artifact
/// dependency; build.rs names its path `BAREMARK_ZOO_ELF_<bin>`.
macro_rules! zoo_payload {
    ($name:literal) => {
        Payload {
            name: $name,
            elf: include_bytes!(env!(
                concat!("BAREMARK_ZOO_ELF_", $name),
                concat!("payloads/zoo has no bin `", $name, "`")
            )),
        }
    };
}

/// The misbehaving payloads (docs/reliability.md, "Misbehaving payloads"): each does one thing
/// a broken or hostile benchmark could do, which the kernel must contain (a record, and the run
/// goes on). In no suite: `--builtin zoo-...`. Those that spawn children spawn themselves, so
/// they must be in the ramdisk under these names.
pub static ZOO: &[Payload] = &[
    zoo_payload!("zoo-memory"),
    zoo_payload!("zoo-memory-elf"),
    zoo_payload!("zoo-stack"),
    zoo_payload!("zoo-spawn-bomb"),
    zoo_payload!("zoo-page-write"),
    zoo_payload!("zoo-rdpmc"),
    zoo_payload!("zoo-syscall-storm"),
    zoo_payload!("zoo-syscall-flood"),
    zoo_payload!("zoo-smc"),
    zoo_payload!("zoo-port-io"),
];

/// The built-in payload called `name` (test payloads, the suite's and the zoo's).
pub fn builtin(name: &str) -> Option<&'static Payload> {
    BUILTIN
        .iter()
        .chain(SUITE)
        .chain(ZOO)
        .find(|p| p.name == name)
}

/// The names of every built-in payload, for messages.
pub fn builtin_names() -> Vec<&'static str> {
    BUILTIN
        .iter()
        .chain(SUITE)
        .chain(ZOO)
        .map(|p| p.name)
        .collect()
}

/// A named list of built-in payloads (`--suite NAME`).
#[derive(Clone, Copy, Debug)]
pub struct Suite {
    pub name: &'static str,
    pub about: &'static str,
    pub payloads: &'static [&'static str],
}

/// The suite `run` and `image` use when no payload is named.
pub const DEFAULT_SUITE: &str = "default";

/// Every suite. The payloads are `payloads/suite`'s bins; each runs its benchmark under the
/// harness (docs/harness.md).
pub static SUITES: &[Suite] = &[
    Suite {
        name: "default",
        about: "the whole benchmark suite: harness floor, core, memory hierarchy, kernel paths",
        payloads: &[
            "empty",
            "add-latency",
            "add-throughput",
            "int-divide",
            "branch-predictable",
            "branch-unpredictable",
            "chase-l1",
            "chase-l2",
            "chase-llc",
            "chase-dram",
            "seq-read",
            "rep-movsb",
            "store-forward",
            "syscall",
            "read-fast",
            "read-rdpmc",
        ],
    },
    Suite {
        name: "core",
        about: "execution core: ALU latency and throughput, division, branch prediction",
        payloads: &[
            "add-latency",
            "add-throughput",
            "int-divide",
            "branch-predictable",
            "branch-unpredictable",
        ],
    },
    Suite {
        name: "memory",
        about: "memory hierarchy: pointer chases from L1 to DRAM, streaming, rep movsb, store forwarding",
        payloads: &[
            "chase-l1",
            "chase-l2",
            "chase-llc",
            "chase-dram",
            "seq-read",
            "rep-movsb",
            "store-forward",
        ],
    },
    Suite {
        name: "harness",
        about: "the harness itself: empty region, system call, counter reads",
        payloads: &["empty", "syscall", "read-fast", "read-rdpmc"],
    },
    Suite {
        name: "none",
        about: "no payloads: the boot report only",
        payloads: &[],
    },
];

/// The suite called `name`.
pub fn suite(name: &str) -> Option<&'static Suite> {
    SUITES.iter().find(|s| s.name == name)
}

/// The payloads of suite `name`, in order; an error names the suites, or the payload this
/// tool was built without.
pub fn suite_payloads(name: &str) -> anyhow::Result<Vec<&'static Payload>> {
    let suite = suite(name).ok_or_else(|| {
        let known: Vec<String> = SUITES
            .iter()
            .map(|s| format!("{} ({})", s.name, s.about))
            .collect();
        anyhow::anyhow!("no suite `{name}`; there are:\n  {}", known.join("\n  "))
    })?;
    suite
        .payloads
        .iter()
        .map(|&p| {
            builtin(p).ok_or_else(|| {
                anyhow::anyhow!(
                    "suite `{name}` needs the payload `{p}`, which this baremark was built without \
                     (the benchmark suite, payloads/suite, is not wired into boot/Cargo.toml)"
                )
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suites_name_distinct_known_payloads() {
        let default = suite(DEFAULT_SUITE).unwrap();
        assert_eq!(default.payloads.len(), 16);
        assert_eq!(default.payloads[0], "empty", "the harness floor first");
        for s in SUITES {
            let mut names = s.payloads.to_vec();
            names.sort_unstable();
            names.dedup();
            assert_eq!(
                names.len(),
                s.payloads.len(),
                "{} repeats a payload",
                s.name
            );
            // Every named suite draws from the default suite.
            for p in s.payloads {
                assert!(default.payloads.contains(p), "{}: {p}", s.name);
            }
            assert!(BUILTIN.iter().all(|b| !s.payloads.contains(&b.name)));
        }
        assert!(suite_payloads("none").unwrap().is_empty());
        // The zoo is in no suite; its names say what it is, once each.
        let mut zoo: Vec<&str> = ZOO.iter().map(|p| p.name).collect();
        assert!(zoo.iter().all(|n| n.starts_with("zoo-")));
        assert!(
            SUITES
                .iter()
                .all(|s| s.payloads.iter().all(|p| !zoo.contains(p)))
        );
        zoo.sort_unstable();
        zoo.dedup();
        assert_eq!(zoo.len(), ZOO.len());
        assert!(builtin("zoo-spawn-bomb").is_some());
        assert!(builtin_names().contains(&"zoo-rdpmc"));
        let e = suite_payloads("nope").unwrap_err().to_string();
        assert!(
            e.contains("no suite `nope`") && e.contains("memory ("),
            "{e}"
        );
        if SUITE.is_empty() {
            let e = suite_payloads("core").unwrap_err().to_string();
            assert!(e.contains("needs the payload `add-latency`"), "{e}");
        } else {
            let got: Vec<&str> = suite_payloads("core")
                .unwrap()
                .iter()
                .map(|p| p.name)
                .collect();
            assert_eq!(got, suite("core").unwrap().payloads);
            assert!(SUITE.iter().all(|p| p.elf.starts_with(b"\x7fELF")));
        }
    }
}
