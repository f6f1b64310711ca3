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
];

/// The built-in payload called `name`.
pub fn builtin(name: &str) -> Option<&'static Payload> {
    BUILTIN.iter().find(|p| p.name == name)
}
