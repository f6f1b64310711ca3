//! CPU identity as event tables key it: vendor, family, model (and stepping).
//!
//! The string form is the one Intel's perfmon `mapfile.csv` and Linux's pmu-events use:
//! `GenuineIntel-6-55` (family in decimal, model in hex), `AuthenticAMD-25-17`, optionally with a
//! stepping: `GenuineIntel-6-55-4`.

use core::fmt;

/// CPU vendor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Vendor {
    Intel,
    /// AMD, and Hygon (an AMD Zen licensee with the same PMU).
    Amd,
}

impl Vendor {
    /// The CPUID vendor string.
    pub fn cpuid_name(self) -> &'static str {
        match self {
            Vendor::Intel => "GenuineIntel",
            Vendor::Amd => "AuthenticAMD",
        }
    }

    /// From a CPUID vendor string.
    pub fn from_cpuid_name(name: &str) -> Option<Vendor> {
        match name {
            "GenuineIntel" => Some(Vendor::Intel),
            "AuthenticAMD" | "HygonGenuine" => Some(Vendor::Amd),
            _ => None,
        }
    }
}

/// A CPU model: vendor, display family, display model, optional stepping.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CpuModel {
    pub vendor: Vendor,
    pub family: u32,
    pub model: u32,
    pub stepping: Option<u32>,
}

/// Why a CPU string was not understood.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CpuParseError {
    /// Not `Vendor-family-model[-stepping]`.
    Shape,
    /// Vendor other than GenuineIntel, AuthenticAMD, HygonGenuine.
    UnknownVendor,
    /// Family is not a decimal number, or model/stepping not hex.
    BadNumber,
}

impl fmt::Display for CpuParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            CpuParseError::Shape => {
                "expected VENDOR-FAMILY-MODEL, e.g. GenuineIntel-6-55 or AuthenticAMD-25-17"
            }
            CpuParseError::UnknownVendor => {
                "unknown vendor (GenuineIntel, AuthenticAMD or HygonGenuine)"
            }
            CpuParseError::BadNumber => {
                "family must be decimal and model/stepping hex, e.g. GenuineIntel-6-8F"
            }
        })
    }
}

impl CpuModel {
    pub const fn new(vendor: Vendor, family: u32, model: u32) -> Self {
        Self {
            vendor,
            family,
            model,
            stepping: None,
        }
    }

    /// Parses `GenuineIntel-6-55`, `AuthenticAMD-25-17`, `GenuineIntel-6-55-4`. The model may
    /// carry a `0x` prefix.
    pub fn parse(s: &str) -> Result<Self, CpuParseError> {
        let mut parts = s.trim().split('-');
        let (Some(vendor), Some(family), Some(model)) = (parts.next(), parts.next(), parts.next())
        else {
            return Err(CpuParseError::Shape);
        };
        let stepping = parts.next();
        if parts.next().is_some() {
            return Err(CpuParseError::Shape);
        }
        let vendor = Vendor::from_cpuid_name(vendor).ok_or(CpuParseError::UnknownVendor)?;
        let family = family
            .parse::<u32>()
            .map_err(|_| CpuParseError::BadNumber)?;
        let hex = |t: &str| {
            let t = t
                .strip_prefix("0x")
                .or_else(|| t.strip_prefix("0X"))
                .unwrap_or(t);
            if t.is_empty() || t.len() > 8 {
                return Err(CpuParseError::BadNumber);
            }
            u32::from_str_radix(t, 16).map_err(|_| CpuParseError::BadNumber)
        };
        let model = hex(model)?;
        let stepping = stepping.map(hex).transpose()?;
        Ok(Self {
            vendor,
            family,
            model,
            stepping,
        })
    }

    /// AMD Zen generation (1 for Zen/Zen+, 2, 3, 4, 5), with the model ranges Linux uses
    /// (`bsp_init_amd` in arch/x86/kernel/cpu/amd.c); `None` for Intel and pre-Zen AMD.
    pub fn zen_generation(&self) -> Option<u8> {
        if self.vendor != Vendor::Amd {
            return None;
        }
        match self.family {
            0x17 => Some(match self.model {
                0x30..=0x4f | 0x60..=0x7f | 0x90..=0x91 | 0xa0..=0xaf => 2,
                _ => 1,
            }),
            0x18 => Some(1), // Hygon Dhyana is Zen 1
            0x19 => Some(match self.model {
                0x10..=0x1f | 0x60..=0xaf => 4,
                _ => 3,
            }),
            f if f >= 0x1a => Some(5),
            _ => None,
        }
    }
}

impl fmt::Display for CpuModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}-{}-{:X}",
            self.vendor.cpuid_name(),
            self.family,
            self.model
        )?;
        if let Some(s) = self.stepping {
            write!(f, "-{s:X}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;

    #[test]
    fn parses_perfmon_strings() {
        let skx = CpuModel::parse("GenuineIntel-6-55").unwrap();
        assert_eq!(skx, CpuModel::new(Vendor::Intel, 6, 0x55));
        assert_eq!(skx.to_string(), "GenuineIntel-6-55");
        let zen = CpuModel::parse("AuthenticAMD-25-17").unwrap();
        assert_eq!((zen.vendor, zen.family, zen.model), (Vendor::Amd, 25, 0x17));
        let stepped = CpuModel::parse("GenuineIntel-6-0x8F-4").unwrap();
        assert_eq!(stepped.stepping, Some(4));
        assert_eq!(stepped.to_string(), "GenuineIntel-6-8F-4");
        assert_eq!(
            CpuModel::parse("HygonGenuine-24-0").unwrap().vendor,
            Vendor::Amd
        );
    }

    #[test]
    fn rejects_bad_strings() {
        assert_eq!(CpuModel::parse("GenuineIntel-6"), Err(CpuParseError::Shape));
        assert_eq!(
            CpuModel::parse("VIA-6-5"),
            Err(CpuParseError::UnknownVendor)
        );
        assert_eq!(
            CpuModel::parse("GenuineIntel-x-5"),
            Err(CpuParseError::BadNumber)
        );
        assert_eq!(
            CpuModel::parse("GenuineIntel-6-5G"),
            Err(CpuParseError::BadNumber)
        );
        assert_eq!(
            CpuModel::parse("GenuineIntel-6-5-1-2"),
            Err(CpuParseError::Shape)
        );
        assert_eq!(
            CpuModel::parse("GenuineIntel-6-"),
            Err(CpuParseError::BadNumber)
        );
    }

    #[test]
    fn zen_generations() {
        let amd = |f, m| CpuModel::new(Vendor::Amd, f, m).zen_generation();
        assert_eq!(amd(0x17, 0x01), Some(1));
        assert_eq!(amd(0x17, 0x31), Some(2));
        assert_eq!(amd(0x19, 0x01), Some(3));
        assert_eq!(amd(0x19, 0x11), Some(4));
        assert_eq!(amd(0x19, 0x61), Some(4));
        assert_eq!(amd(0x19, 0x21), Some(3));
        assert_eq!(amd(0x17, 0x71), Some(2));
        assert_eq!(amd(0x17, 0x50), Some(1));
        assert_eq!(amd(0x1a, 0x02), Some(5));
        assert_eq!(amd(0x15, 0x02), None);
        assert_eq!(CpuModel::new(Vendor::Intel, 6, 0x55).zen_generation(), None);
    }
}
