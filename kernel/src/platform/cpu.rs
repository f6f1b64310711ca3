//! CPU identification through CPUID: vendor, family/model/stepping, brand, hypervisor, and the
//! features later parts of baremark depend on.
//!
//! CPUID is unprivileged, so this module also runs (and is tested) on the host.

use raw_cpuid::{CpuId, CpuIdReader, CpuIdReaderNative, Hypervisor};

/// Features baremark cares about.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Features {
    pub x2apic: bool,
    pub tsc_deadline: bool,
    pub invariant_tsc: bool,
    pub rdtscp: bool,
    /// PDCM: IA32_PERF_CAPABILITIES exists.
    pub pdcm: bool,
    pub smep: bool,
    pub smap: bool,
    pub umip: bool,
    pub pcid: bool,
    pub nx: bool,
    /// CPUID.1:ECX[31]: running under a hypervisor.
    pub hypervisor: bool,
}

impl Features {
    /// (name, present) pairs in report order.
    pub fn list(&self) -> [(&'static str, bool); 11] {
        [
            ("x2apic", self.x2apic),
            ("tsc_deadline", self.tsc_deadline),
            ("invariant_tsc", self.invariant_tsc),
            ("rdtscp", self.rdtscp),
            ("pdcm", self.pdcm),
            ("smep", self.smep),
            ("smap", self.smap),
            ("umip", self.umip),
            ("pcid", self.pcid),
            ("nx", self.nx),
            ("hypervisor", self.hypervisor),
        ]
    }
}

/// Fixed-size string storage (no heap needed).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SmallStr<const N: usize> {
    bytes: [u8; N],
    len: usize,
}

impl<const N: usize> SmallStr<N> {
    pub fn new(s: &str) -> Self {
        let mut bytes = [0; N];
        // Cut on a character boundary.
        let mut len = s.len().min(N);
        while !s.is_char_boundary(len) {
            len -= 1;
        }
        bytes[..len].copy_from_slice(&s.as_bytes()[..len]);
        Self { bytes, len }
    }
    pub fn as_str(&self) -> &str {
        core::str::from_utf8(&self.bytes[..self.len]).unwrap_or("")
    }
}

/// What CPUID says about this CPU.
#[derive(Clone, Copy, Debug)]
pub struct CpuInfo {
    pub vendor: SmallStr<12>,
    /// Display family (base + extended, as the SDM combines them).
    pub family: u8,
    /// Display model (with the extended model for family 6 and 15).
    pub model: u8,
    pub stepping: u8,
    pub brand: SmallStr<48>,
    pub max_leaf: u32,
    pub max_extended_leaf: u32,
    /// Hypervisor vendor signature (CPUID 0x40000000), when the hypervisor bit is set.
    pub hypervisor_signature: Option<SmallStr<12>>,
    /// Short name of the hypervisor ("kvm", "tcg", "vmware", ...), when known.
    pub hypervisor_name: Option<&'static str>,
    /// Under TCG: CPUID 0x40000001 EAX bit 0, which baremark's emulator sets when its PMU model
    /// also models the micro-architecture (`pmu-uarch=on`: data caches, a branch predictor, and
    /// cycles with their stalls; docs/emulated-pmu.md). Plain QEMU returns 0 there.
    pub tcg_uarch_model: bool,
    /// With it, the cycle model's stall cycles from the same leaf: a load line from L2, from the
    /// last level, from memory, and a mispredicted branch (EBX and ECX, 16 bits each).
    pub tcg_uarch_latencies: Option<[u16; 4]>,
    pub features: Features,
}

/// Identifies the CPU with the real CPUID instruction.
pub fn identify() -> CpuInfo {
    identify_with(CpuIdReaderNative)
}

/// Identifies the CPU from any CPUID source (tests feed recorded leaves).
pub fn identify_with<R: CpuIdReader>(reader: R) -> CpuInfo {
    let cpuid = CpuId::with_cpuid_reader(reader.clone());
    let vendor = cpuid
        .get_vendor_info()
        .map_or(SmallStr::new("unknown"), |v| SmallStr::new(v.as_str()));
    let fi = cpuid.get_feature_info();
    let (family, model, stepping) = fi.as_ref().map_or((0, 0, 0), |f| {
        (f.family_id(), f.model_id(), f.stepping_id())
    });
    let brand = cpuid
        .get_processor_brand_string()
        .map_or(SmallStr::new(""), |b| SmallStr::new(b.as_str().trim()));
    let max_leaf = raw_cpuid_leaf(&reader, 0)[0];
    let ext = cpuid.get_extended_processor_and_feature_identifiers();
    let leaf7 = cpuid.get_extended_feature_info();
    let apm = cpuid.get_advanced_power_mgmt_info();
    let features = Features {
        x2apic: fi.as_ref().is_some_and(|f| f.has_x2apic()),
        tsc_deadline: fi.as_ref().is_some_and(|f| f.has_tsc_deadline()),
        invariant_tsc: apm.as_ref().is_some_and(|a| a.has_invariant_tsc()),
        rdtscp: ext.as_ref().is_some_and(|e| e.has_rdtscp()),
        pdcm: fi.as_ref().is_some_and(|f| f.has_pdcm()),
        smep: leaf7.as_ref().is_some_and(|f| f.has_smep()),
        smap: leaf7.as_ref().is_some_and(|f| f.has_smap()),
        umip: leaf7.as_ref().is_some_and(|f| f.has_umip()),
        pcid: fi.as_ref().is_some_and(|f| f.has_pcid()),
        nx: ext.as_ref().is_some_and(|e| e.has_execute_disable()),
        hypervisor: fi.as_ref().is_some_and(|f| f.has_hypervisor()),
    };
    let (hypervisor_signature, hypervisor_name) = if features.hypervisor {
        match cpuid.get_hypervisor_info() {
            Some(h) => {
                let name = match h.identify() {
                    Hypervisor::Xen => Some("xen"),
                    Hypervisor::VMware => Some("vmware"),
                    Hypervisor::HyperV => Some("hyper-v"),
                    Hypervisor::KVM => Some("kvm"),
                    Hypervisor::QEMU => Some("tcg"),
                    Hypervisor::Bhyve => Some("bhyve"),
                    Hypervisor::QNX => Some("qnx"),
                    Hypervisor::ACRN => Some("acrn"),
                    Hypervisor::Unknown(..) => None,
                };
                (Some(signature_string(&reader)), name)
            }
            None => (None, None),
        }
    } else {
        (None, None)
    };
    let tcg_leaf = (hypervisor_name == Some("tcg")
        && raw_cpuid_leaf(&reader, 0x4000_0000)[0] >= 0x4000_0001)
        .then(|| raw_cpuid_leaf(&reader, 0x4000_0001));
    let tcg_uarch_model = tcg_leaf.is_some_and(|l| l[0] & 1 != 0);
    let tcg_uarch_latencies = tcg_leaf.filter(|_| tcg_uarch_model).map(|l| {
        let lo = |v: u32| v as u16;
        let hi = |v: u32| (v >> 16) as u16;
        [lo(l[1]), hi(l[1]), lo(l[2]), hi(l[2])]
    });
    CpuInfo {
        vendor,
        family,
        model,
        stepping,
        brand,
        max_leaf,
        max_extended_leaf: raw_cpuid_leaf(&reader, 0x8000_0000)[0],
        hypervisor_signature,
        hypervisor_name,
        tcg_uarch_model,
        tcg_uarch_latencies,
        features,
    }
}

/// Executes one CPUID leaf (subleaf 0) through the reader: `[eax, ebx, ecx, edx]`.
pub fn raw_cpuid_leaf<R: CpuIdReader>(reader: &R, leaf: u32) -> [u32; 4] {
    raw_cpuid_subleaf(reader, leaf, 0)
}

/// Executes one CPUID leaf and subleaf through the reader.
pub fn raw_cpuid_subleaf<R: CpuIdReader>(reader: &R, leaf: u32, subleaf: u32) -> [u32; 4] {
    let r = reader.cpuid2(leaf, subleaf);
    [r.eax, r.ebx, r.ecx, r.edx]
}

/// The 12-character signature of CPUID 0x40000000 (EBX, ECX, EDX), printable characters only.
fn signature_string<R: CpuIdReader>(reader: &R) -> SmallStr<12> {
    let [_, b, c, d] = raw_cpuid_leaf(reader, 0x4000_0000);
    let mut bytes = [0u8; 12];
    for (i, reg) in [b, c, d].into_iter().enumerate() {
        bytes[i * 4..i * 4 + 4].copy_from_slice(&reg.to_le_bytes());
    }
    let mut out = [0u8; 12];
    let mut len = 0;
    for &b in bytes.iter().filter(|b| b.is_ascii_graphic() || **b == b' ') {
        out[len] = b;
        len += 1;
    }
    SmallStr::new(core::str::from_utf8(&out[..len]).unwrap_or("").trim())
}

#[cfg(test)]
mod tests {
    use super::*;
    use raw_cpuid::CpuIdResult;

    /// A recorded CPUID: (leaf, subleaf) -> registers; anything else reads as zeros.
    #[derive(Clone, Copy)]
    struct Recorded(&'static [((u32, u32), [u32; 4])]);

    impl CpuIdReader for Recorded {
        fn cpuid2(&self, leaf: u32, subleaf: u32) -> CpuIdResult {
            let [eax, ebx, ecx, edx] = self
                .0
                .iter()
                .find(|((l, s), _)| *l == leaf && (*s == subleaf || *s == u32::MAX))
                .map_or([0; 4], |(_, r)| *r);
            CpuIdResult { eax, ebx, ecx, edx }
        }
    }

    const fn le(s: &[u8; 4]) -> u32 {
        u32::from_le_bytes(*s)
    }

    // An Intel Skylake-SP guest under KVM (values shaped after a real CPUID dump).
    static SKYLAKE_KVM: &[((u32, u32), [u32; 4])] = &[
        ((0, u32::MAX), [0x16, le(b"Genu"), le(b"ntel"), le(b"ineI")]),
        // family 6, model 0x55 (ext model 5, model 5), stepping 4; ECX: x2apic(21),
        // tsc-deadline(24), hypervisor(31), pdcm(15), pcid(17).
        (
            (1, u32::MAX),
            [
                0x0005_0654,
                0,
                (1 << 21) | (1 << 24) | (1u32 << 31) | (1 << 15) | (1 << 17),
                0,
            ],
        ),
        ((7, 0), [0, (1 << 7) | (1 << 20), 1 << 2, 0]),
        (
            (0x4000_0000, u32::MAX),
            [0x4000_0001, le(b"KVMK"), le(b"VMKV"), le(b"M\0\0\0")],
        ),
        ((0x8000_0000, u32::MAX), [0x8000_0008, 0, 0, 0]),
        ((0x8000_0001, u32::MAX), [0, 0, 0, (1 << 20) | (1 << 27)]),
        ((0x8000_0007, u32::MAX), [0, 0, 0, 1 << 8]),
    ];

    #[test]
    fn decodes_a_recorded_intel_kvm_guest() {
        let info = identify_with(Recorded(SKYLAKE_KVM));
        assert_eq!(info.vendor.as_str(), "GenuineIntel");
        assert_eq!((info.family, info.model, info.stepping), (6, 0x55, 4));
        assert_eq!(info.max_leaf, 0x16);
        assert_eq!(info.max_extended_leaf, 0x8000_0008);
        assert_eq!(info.hypervisor_signature.unwrap().as_str(), "KVMKVMKVM");
        assert_eq!(info.hypervisor_name, Some("kvm"));
        let f = info.features;
        assert!(f.x2apic && f.tsc_deadline && f.hypervisor && f.pdcm && f.pcid);
        assert!(f.smep && f.smap && f.umip && f.nx && f.rdtscp && f.invariant_tsc);
    }

    #[test]
    fn a_cpu_without_leaves_gives_no_features_not_a_panic() {
        let info = identify_with(Recorded(&[]));
        assert_eq!(info.features, Features::default());
        assert!(info.hypervisor_signature.is_none());
    }

    #[test]
    fn identifies_the_host_cpu() {
        // The host running the tests is a real x86_64 CPU (or a VM): vendor and family exist.
        let info = identify();
        assert!(!info.vendor.as_str().is_empty());
        assert!(info.family > 0);
        assert!(info.features.nx, "every x86_64 CPU has NX");
    }

    #[test]
    fn small_str_cuts_on_char_boundaries() {
        assert_eq!(SmallStr::<4>::new("abcdef").as_str(), "abcd");
        assert_eq!(SmallStr::<4>::new("ab漢").as_str(), "ab");
    }
}
