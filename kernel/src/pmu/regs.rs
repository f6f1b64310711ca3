//! MSR addresses and bit layouts of the PMUs (Intel SDM vol. 4 and 3B ch. 20; AMD APM vol. 2
//! ch. 13; checked against Linux `arch/x86/include/asm/msr-index.h`). See
//! ../shared/reference/pmu-facts.md.

/// Intel.
pub mod intel {
    /// The most GP counters the kernel drives: IA32_PMC0-7 and IA32_PERFEVTSEL0-7 (more, on
    /// architectural PMU v6 at 0x1900 + 4n, are reported and left alone). The MSR door's
    /// allow-list (`baremark_hw::msr_allow`) has the same bound.
    pub const GP_MAX: u8 = 8;
    /// The fixed counters the kernel drives: 0-3 (0x309-0x30C).
    pub const FIXED_SUPPORTED: u32 = 0b1111;
    /// IA32_PMCx, legacy alias: a write keeps bits 31:0 and sign-extends them.
    pub const PMC0: u32 = 0xc1;
    /// IA32_A_PMCx, full-width alias (only with PERF_CAPABILITIES.FW_WRITE).
    pub const A_PMC0: u32 = 0x4c1;
    /// IA32_PERFEVTSELx.
    pub const PERFEVTSEL0: u32 = 0x186;
    /// IA32_FIXED_CTRx.
    pub const FIXED_CTR0: u32 = 0x309;
    pub const PERF_CAPABILITIES: u32 = 0x345;
    pub const FIXED_CTR_CTRL: u32 = 0x38d;
    pub const PERF_GLOBAL_STATUS: u32 = 0x38e;
    pub const PERF_GLOBAL_CTRL: u32 = 0x38f;
    /// IA32_PERF_GLOBAL_OVF_CTRL (v4+: IA32_PERF_GLOBAL_STATUS_RESET): write 1s to clear.
    pub const PERF_GLOBAL_OVF_CTRL: u32 = 0x390;
    /// v4+: write 1s to set status bits.
    pub const PERF_GLOBAL_STATUS_SET: u32 = 0x391;
    pub const PERF_GLOBAL_INUSE: u32 = 0x392;
    pub const DEBUGCTL: u32 = 0x1d9;

    /// PERF_CAPABILITIES bit 13: full-width writes through IA32_A_PMCx.
    pub const CAP_FW_WRITE: u64 = 1 << 13;
    /// GLOBAL_STATUS / GLOBAL_CTRL bit of fixed counter i is 32 + i.
    pub const FIXED_SHIFT: u32 = 32;
    /// GLOBAL_STATUS bit 63: CondChgd; 62: DS buffer overflow; 59: counters frozen.
    pub const STATUS_COND_CHGD: u64 = 1 << 63;
    /// RDPMC ECX bit 30 selects fixed counters; bit 31 is the "fast" 32-bit read.
    pub const RDPMC_FIXED: u32 = 1 << 30;
    pub const RDPMC_FAST: u32 = 1 << 31;
}

/// AMD.
pub mod amd {
    /// The most core counter pairs the kernel drives (PerfCtrExtCore's six; PerfMonV2 may
    /// report up to 15).
    pub const CORE_MAX: u8 = 6;
    /// Legacy PERF_CTL0-3 and PERF_CTR0-3.
    pub const PERF_CTL0: u32 = 0xc001_0000;
    pub const PERF_CTR0: u32 = 0xc001_0004;
    /// PerfCtrExtCore: CTLn = 0xC0010200 + 2n, CTRn = 0xC0010201 + 2n.
    pub const EXT_CTL0: u32 = 0xc001_0200;
    pub const EXT_CTR0: u32 = 0xc001_0201;
    /// PerfMonV2 global registers.
    pub const GLOBAL_STATUS: u32 = 0xc000_0300;
    pub const GLOBAL_CTL: u32 = 0xc000_0301;
    pub const GLOBAL_STATUS_CLR: u32 = 0xc000_0302;
    pub const GLOBAL_STATUS_SET: u32 = 0xc000_0303;
    /// Counters are 48 bits wide.
    pub const WIDTH: u8 = 48;
}

/// The extra MSRs baremark programs with an event, in the order of `harness::plan::Platform::extra_msrs`,
/// with their SDM names. The hw crate's MSR allow-list has the same four.
pub const EXTRA_MSRS: [(u32, &str); 4] = [
    (0x1a6, "MSR_OFFCORE_RSP_0"),
    (0x1a7, "MSR_OFFCORE_RSP_1"),
    (0x3f6, "MSR_PEBS_LD_LAT"),
    (0x3f7, "MSR_PEBS_FRONTEND"),
];
