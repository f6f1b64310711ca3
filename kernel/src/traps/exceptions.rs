//! Names of the 32 CPU exception vectors, for fault records.

/// `(mnemonic, name)` of each exception vector 0-31 (Intel SDM vol. 3A, table 6-1).
pub const EXCEPTIONS: [(&str, &str); 32] = [
    ("#DE", "divide-error"),
    ("#DB", "debug"),
    ("NMI", "non-maskable-interrupt"),
    ("#BP", "breakpoint"),
    ("#OF", "overflow"),
    ("#BR", "bound-range-exceeded"),
    ("#UD", "invalid-opcode"),
    ("#NM", "device-not-available"),
    ("#DF", "double-fault"),
    ("CSO", "coprocessor-segment-overrun"),
    ("#TS", "invalid-tss"),
    ("#NP", "segment-not-present"),
    ("#SS", "stack-segment-fault"),
    ("#GP", "general-protection"),
    ("#PF", "page-fault"),
    ("RSV", "reserved-15"),
    ("#MF", "x87-floating-point"),
    ("#AC", "alignment-check"),
    ("#MC", "machine-check"),
    ("#XM", "simd-floating-point"),
    ("#VE", "virtualization"),
    ("#CP", "control-protection"),
    ("RSV", "reserved-22"),
    ("RSV", "reserved-23"),
    ("RSV", "reserved-24"),
    ("RSV", "reserved-25"),
    ("RSV", "reserved-26"),
    ("RSV", "reserved-27"),
    ("#HV", "hypervisor-injection"),
    ("#VC", "vmm-communication"),
    ("#SX", "security"),
    ("RSV", "reserved-31"),
];

/// Mnemonic and name of exception `vector`, or `None` for vectors 32 and up.
pub fn describe(vector: u64) -> Option<(&'static str, &'static str)> {
    EXCEPTIONS.get(usize::try_from(vector).ok()?).copied()
}

/// Decodes a page-fault error code into its flags, e.g. `write,user`.
pub fn page_fault_flags(error_code: u64) -> impl Iterator<Item = &'static str> {
    [
        (0, "present", "not-present"),
        (1, "write", "read"),
        (2, "user", "supervisor"),
        (3, "reserved-bit", ""),
        (4, "instruction-fetch", ""),
        (5, "protection-key", ""),
        (6, "shadow-stack", ""),
        (15, "sgx", ""),
    ]
    .into_iter()
    .filter_map(move |(bit, set, clear)| {
        let s = if error_code & (1 << bit) != 0 {
            set
        } else {
            clear
        };
        (!s.is_empty()).then_some(s)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    extern crate std;
    use std::vec::Vec;

    #[test]
    fn names() {
        assert_eq!(describe(14), Some(("#PF", "page-fault")));
        assert_eq!(describe(8), Some(("#DF", "double-fault")));
        assert_eq!(describe(32), None);
    }

    #[test]
    fn page_fault_error_code() {
        let f: Vec<_> = page_fault_flags(0b10010).collect();
        assert_eq!(
            f,
            ["not-present", "write", "supervisor", "instruction-fetch"]
        );
    }
}
