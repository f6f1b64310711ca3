//! What the cross-core payloads (`c2c`, `bandwidth`; docs/cores.md) share: their argument
//! text, CPU lists, the statistics they report, and (on bare metal) the worker threads that
//! put one side of a measurement on every core.
#![cfg_attr(not(test), no_std)]

#[cfg(target_os = "none")]
pub mod workers;

/// The most CPUs a run names (the kernel's `MAX_CPUS`).
pub const MAX_CPUS: usize = 512;
/// The most events counted alongside (each side's counters).
pub const MAX_EVENTS: usize = 4;
/// The most repetitions (their list must fit one `report`).
pub const MAX_REPS: usize = 31;

/// A set of CPU indices in increasing order.
#[derive(Clone, Copy)]
pub struct CpuSet {
    bits: [u64; MAX_CPUS / 64],
}

impl core::fmt::Debug for CpuSet {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl CpuSet {
    pub const EMPTY: CpuSet = CpuSet {
        bits: [0; MAX_CPUS / 64],
    };

    pub fn insert(&mut self, cpu: usize) {
        self.bits[cpu / 64] |= 1 << (cpu % 64);
    }

    pub fn contains(&self, cpu: usize) -> bool {
        cpu < MAX_CPUS && self.bits[cpu / 64] & (1 << (cpu % 64)) != 0
    }

    pub fn len(&self) -> usize {
        self.bits.iter().map(|w| w.count_ones() as usize).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The CPUs in increasing order.
    pub fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        (0..MAX_CPUS).filter(|&c| self.contains(c))
    }

    /// Parses `all`, or a list like `0,2-5,7` (each CPU below [`MAX_CPUS`]).
    pub fn parse(text: &str, all: &CpuSet) -> Result<CpuSet, &'static str> {
        if text == "all" {
            return Ok(*all);
        }
        let mut set = CpuSet::EMPTY;
        for part in text.split(',') {
            let (lo, hi) = match part.split_once('-') {
                Some((a, b)) => (parse_cpu(a)?, parse_cpu(b)?),
                None => (parse_cpu(part)?, parse_cpu(part)?),
            };
            if lo > hi {
                return Err("a range runs backwards (give LOW-HIGH)");
            }
            for c in lo..=hi {
                set.insert(c);
            }
        }
        Ok(set)
    }
}

fn parse_cpu(text: &str) -> Result<usize, &'static str> {
    match text.trim().parse::<usize>() {
        Ok(c) if c < MAX_CPUS => Ok(c),
        Ok(_) => Err("a CPU index past 511"),
        Err(_) => Err("not a CPU list (give all, or indices like 0,2-5)"),
    }
}

/// The `key=value` words of a payload's argument text, separated by spaces or newlines.
pub fn arg<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    text.split_ascii_whitespace()
        .filter_map(|w| w.split_once('='))
        .find(|(k, _)| *k == key)
        .map(|(_, v)| v)
}

/// The first word of the argument text that is not `key=value` with a known key, if any.
pub fn unknown_arg<'a>(text: &'a str, known: &[&str]) -> Option<&'a str> {
    text.split_ascii_whitespace()
        .find(|w| w.split_once('=').is_none_or(|(k, _)| !known.contains(&k)))
}

/// A number argument in `min..=max`, or `default` when it is not given.
pub fn num_arg(
    text: &str,
    key: &'static str,
    default: u64,
    min: u64,
    max: u64,
) -> Result<u64, &'static str> {
    match arg(text, key) {
        None => Ok(default),
        Some(v) => match v.parse::<u64>() {
            Ok(n) if (min..=max).contains(&n) => Ok(n),
            _ => Err(key),
        },
    }
}

/// How a side waits for the other.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Spin {
    /// A PAUSE in every wait: polite to a sibling hyperthread and, in a virtual machine, the
    /// hint that lets the host (or QEMU's round-robin TCG) run the other side now.
    Pause,
    /// Nothing between polls: the latency as the cache line arrives, on bare metal.
    Busy,
}

impl Spin {
    pub fn name(self) -> &'static str {
        match self {
            Spin::Pause => "pause",
            Spin::Busy => "busy",
        }
    }

    /// `auto` (the default): PAUSE in a virtual machine (CPUID.1:ECX[31], the hypervisor bit),
    /// where a spinning vCPU can hold up the one it waits for; busy on bare metal.
    pub fn parse(text: Option<&str>, hypervisor: bool) -> Result<Spin, &'static str> {
        match text {
            None | Some("auto") => Ok(if hypervisor { Spin::Pause } else { Spin::Busy }),
            Some("pause") => Ok(Spin::Pause),
            Some("busy") => Ok(Spin::Busy),
            Some(_) => Err("spin"),
        }
    }
}

/// Named raw events (`events=NAME=0xHEX,...`): counters_configure entries as `baremark events
/// encode` prints them.
#[derive(Clone, Copy, Debug)]
pub struct Events<'a> {
    pub names: [&'a str; MAX_EVENTS],
    pub codes: [u64; MAX_EVENTS],
    pub n: usize,
}

impl<'a> Events<'a> {
    /// `instructions:u` and `cycles:u`, architectural on Intel (0xC0, 0x3C) and on AMD (0xC0,
    /// 0x76), counting ring 3 (USR, bit 16).
    pub fn default_for(amd: bool) -> Events<'static> {
        const USR: u64 = 1 << 16;
        let cycles = if amd { 0x76 } else { 0x3c };
        Events {
            names: ["instructions:u", "cycles:u", "", ""],
            codes: [0xc0 | USR, cycles | USR, 0, 0],
            n: 2,
        }
    }

    /// `NAME=0xHEX,...` (at most [`MAX_EVENTS`]; `none`: count nothing).
    pub fn parse(text: &'a str) -> Result<Events<'a>, &'static str> {
        let mut ev = Events {
            names: [""; MAX_EVENTS],
            codes: [0; MAX_EVENTS],
            n: 0,
        };
        if text == "none" {
            return Ok(ev);
        }
        for item in text.split(',') {
            let (name, code) = item.split_once('=').ok_or("events")?;
            let code = code.strip_prefix("0x").ok_or("events")?;
            let code = u64::from_str_radix(code, 16).map_err(|_| "events")?;
            let ok_name = !name.is_empty()
                && name.len() <= 32
                && name.bytes().all(|b| b.is_ascii_graphic() && b != b',');
            if !ok_name || ev.n == MAX_EVENTS {
                return Err("events");
            }
            ev.names[ev.n] = name;
            ev.codes[ev.n] = code;
            ev.n += 1;
        }
        Ok(ev)
    }
}

/// Median, minimum and maximum of `v` (sorted in place); `None` when empty.
pub fn median_min_max(v: &mut [u64]) -> Option<(u64, u64, u64)> {
    if v.is_empty() {
        return None;
    }
    v.sort_unstable();
    let n = v.len();
    let median = if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2
    };
    Some((median, v[0], v[n - 1]))
}

/// The kernel's error codes by name, for reports.
pub fn error_name(e: baremark_sdk::Error) -> &'static str {
    use baremark_sdk::Error;
    match e {
        Error::Invalid => "EINVAL",
        Error::Fault => "EFAULT",
        Error::NoSys => "ENOSYS",
        Error::NoEnt => "ENOENT",
        Error::Busy => "EBUSY",
        Error::NoSpace => "ENOSPC",
        Error::Perm => "EPERM",
        Error::Limit => "ELIMIT",
        Error::NoDev => "ENODEV",
        Error::Counters => "ECOUNTERS",
        Error::NoMem => "ENOMEM",
        Error::Other(_) => "error",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists() {
        let mut all = CpuSet::EMPTY;
        (0..4).for_each(|c| all.insert(c));
        let s = CpuSet::parse("0,2-3", &all).unwrap();
        assert_eq!(s.iter().collect::<Vec<_>>(), [0, 2, 3]);
        assert_eq!(CpuSet::parse("all", &all).unwrap().len(), 4);
        assert!(CpuSet::parse("3-1", &all).is_err());
        assert!(CpuSet::parse("600", &all).is_err());
        assert!(CpuSet::parse("x", &all).is_err());
    }

    #[test]
    fn arguments_and_events() {
        let text = "cpus=0-3 rounds=200 events=a:u=0x100c0,b=0x3c";
        assert_eq!(arg(text, "cpus"), Some("0-3"));
        assert_eq!(num_arg(text, "rounds", 7, 1, 1000), Ok(200));
        assert_eq!(num_arg(text, "reps", 7, 1, 31), Ok(7));
        assert_eq!(num_arg("reps=40", "reps", 7, 1, 31), Err("reps"));
        assert_eq!(unknown_arg(text, &["cpus", "rounds", "events"]), None);
        assert_eq!(unknown_arg("cpus=1 bogus", &["cpus"]), Some("bogus"));
        let ev = Events::parse(arg(text, "events").unwrap()).unwrap();
        assert_eq!((ev.n, ev.names[0], ev.codes[1]), (2, "a:u", 0x3c));
        assert!(Events::parse("a=0x1,b=0x2,c=0x3,d=0x4,e=0x5").is_err());
        assert!(Events::parse("a=12").is_err());
        assert_eq!(Spin::parse(None, true), Ok(Spin::Pause));
        assert_eq!(Spin::parse(Some("auto"), false), Ok(Spin::Busy));
        assert!(Spin::parse(Some("fast"), false).is_err());
    }

    #[test]
    fn medians() {
        assert_eq!(median_min_max(&mut [5, 1, 3]), Some((3, 1, 5)));
        assert_eq!(median_min_max(&mut [4, 2]), Some((3, 2, 4)));
        assert_eq!(median_min_max(&mut []), None);
    }
}
