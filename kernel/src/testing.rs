//! Deterministic random inputs for host tests (a property-test crate would pull `std` features
//! into the kernel's bare-metal build through cargo's feature unification).

extern crate std;
use std::string::String;
use std::vec::Vec;

/// xorshift64* generator.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1)
    }
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    /// A string of up to `max` characters drawn from ASCII, control characters, quotes,
    /// backslashes and multi-byte characters.
    pub fn string(&mut self, max: u64) -> String {
        const SPECIAL: [char; 12] = [
            '"',
            '\\',
            '\n',
            '\r',
            '\t',
            '\u{0}',
            '\u{1f}',
            '\u{7f}',
            'é',
            '漢',
            '\u{1F600}',
            '=',
        ];
        let len = self.below(max + 1);
        (0..len)
            .map(|_| match self.below(3) {
                0 => SPECIAL[self.below(SPECIAL.len() as u64) as usize],
                _ => char::from(b' ' + self.below(95) as u8),
            })
            .collect()
    }
    /// Text shaped like a configuration file: lines of keys, `=`, values, comments, garbage.
    pub fn config_like_text(&mut self) -> String {
        const PIECES: [&str; 12] = [
            "on_end",
            "test",
            "timer_checks",
            "=",
            " ",
            "#",
            "\n",
            "qemu-exit",
            "halt",
            "panic",
            "on",
            "\u{0}",
        ];
        let mut s = String::new();
        for _ in 0..self.below(30) {
            if self.below(4) == 0 {
                s.push_str(&self.string(6));
            } else {
                s.push_str(PIECES[self.below(PIECES.len() as u64) as usize]);
            }
        }
        s
    }
    pub fn bytes(&mut self, max: u64) -> Vec<u8> {
        let len = self.below(max + 1);
        // Half the time start with a plausible ustar header magic so the parser goes deeper.
        let mut v: Vec<u8> = (0..len).map(|_| self.next() as u8).collect();
        if v.len() >= 512 && self.below(2) == 0 {
            v[257..263].copy_from_slice(b"ustar\0");
        }
        v
    }
}
