//! The `Family-model` matcher: just enough regular expression for mapfile.csv's CPU patterns
//! (literals, `.`, classes, `|` groups, `?`/`*`/`+`), whole-string and case-insensitive.

use std::collections::HashMap;

use crate::cpu::CpuModel;

#[derive(Clone, Debug)]
enum Node {
    /// An upper-cased byte.
    Lit(u8),
    Any,
    /// Inclusive upper-cased byte ranges.
    Class {
        negated: bool,
        ranges: Vec<(u8, u8)>,
    },
    Group(Vec<Vec<Node>>),
    Repeat {
        node: Box<Node>,
        min: usize,
        many: bool,
    },
}

#[derive(Clone, Debug)]
pub(super) struct Pattern(Vec<Node>);

impl Pattern {
    pub(super) fn parse(text: &str) -> Result<Pattern, String> {
        if !text.is_ascii() {
            return Err("not ASCII".into());
        }
        // Case-insensitive: upper-case the pattern here and the subject when matching.
        let s = text.to_ascii_uppercase().into_bytes();
        let s = s.strip_prefix(b"^").unwrap_or(&s);
        let s = s.strip_suffix(b"$").unwrap_or(s);
        let mut pos = 0;
        let alts = parse_alternatives(s, &mut pos, 0)?;
        if pos != s.len() {
            return Err(format!("unexpected '{}'", s[pos] as char));
        }
        Ok(Pattern(vec![Node::Group(alts)]))
    }

    /// Whether the whole of `subject` matches. Subjects are CPU strings (at most 41 bytes:
    /// `GenuineIntel-4294967295-FFFFFFFF-FFFFFFFF`); one longer than [`SUBJECT_MAX`] never
    /// matches.
    pub(super) fn full_match(&self, subject: &str) -> bool {
        let s = subject.to_ascii_uppercase().into_bytes();
        if s.len() > SUBJECT_MAX {
            return false;
        }
        let mut m = Matcher {
            s: &s,
            memo: HashMap::new(),
        };
        m.seq(&self.0, 1) & (1 << s.len()) != 0
    }

    pub(super) fn matches_cpu(&self, cpu: &CpuModel) -> bool {
        let vendor = cpu.vendor.cpuid_name();
        let mut bases = vec![format!("{vendor}-{}-{:X}", cpu.family, cpu.model)];
        // Linux prints the model unpadded; accept a two-digit spelling as well.
        let padded = format!("{vendor}-{}-{:02X}", cpu.family, cpu.model);
        if padded != bases[0] {
            bases.push(padded);
        }
        bases.iter().any(|base| {
            self.full_match(base)
                || match cpu.stepping {
                    Some(s) => self.full_match(&format!("{base}-{s:X}")),
                    None => (0..16u32).any(|s| self.full_match(&format!("{base}-{s:X}"))),
                }
        })
    }
}

/// Parses `a|b|c` up to a `)` (not consumed) or the end.
fn parse_alternatives(s: &[u8], pos: &mut usize, depth: usize) -> Result<Vec<Vec<Node>>, String> {
    if depth > 16 {
        return Err("groups nested too deeply".into());
    }
    let mut alts = vec![Vec::new()];
    while let Some(&c) = s.get(*pos) {
        let node = match c {
            b')' => break,
            b'|' => {
                *pos += 1;
                alts.push(Vec::new());
                continue;
            }
            b'(' => {
                *pos += 1;
                let inner = parse_alternatives(s, pos, depth + 1)?;
                if s.get(*pos) != Some(&b')') {
                    return Err("unclosed '('".into());
                }
                *pos += 1;
                Node::Group(inner)
            }
            b'[' => {
                *pos += 1;
                parse_class(s, pos)?
            }
            b'.' => {
                *pos += 1;
                Node::Any
            }
            b'\\' => {
                let Some(&e) = s.get(*pos + 1) else {
                    return Err("'\\' at the end".into());
                };
                if e.is_ascii_alphanumeric() {
                    return Err(format!("escape '\\{}' is not supported", e as char));
                }
                *pos += 2;
                Node::Lit(e)
            }
            b'?' | b'*' | b'+' | b'{' | b'}' | b']' | b'^' | b'$' => {
                return Err(format!("unexpected '{}'", c as char));
            }
            _ => {
                *pos += 1;
                Node::Lit(c)
            }
        };
        let node = match s.get(*pos) {
            Some(&q @ (b'?' | b'*' | b'+')) => {
                *pos += 1;
                Node::Repeat {
                    node: Box::new(node),
                    min: usize::from(q == b'+'),
                    many: q != b'?',
                }
            }
            _ => node,
        };
        if let Some(last) = alts.last_mut() {
            last.push(node);
        }
    }
    Ok(alts)
}

/// Parses a class body after `[`, through `]`.
fn parse_class(s: &[u8], pos: &mut usize) -> Result<Node, String> {
    let negated = s.get(*pos) == Some(&b'^');
    if negated {
        *pos += 1;
    }
    let mut ranges = Vec::new();
    loop {
        let Some(&c) = s.get(*pos) else {
            return Err("unclosed '['".into());
        };
        *pos += 1;
        match c {
            b']' if !ranges.is_empty() => break,
            b']' => return Err("empty class".into()),
            _ => {
                if s.get(*pos) == Some(&b'-') && s.get(*pos + 1).is_some_and(|&h| h != b']') {
                    let hi = s[*pos + 1];
                    if hi < c {
                        return Err(format!("bad range {}-{}", c as char, hi as char));
                    }
                    ranges.push((c, hi));
                    *pos += 2;
                } else {
                    ranges.push((c, c));
                }
            }
        }
    }
    Ok(Node::Class { negated, ranges })
}

/// A set of positions in a subject (0..=len), one bit each.
type Positions = u128;

/// The longest subject [`Pattern::full_match`] takes: its positions must fit [`Positions`].
pub(super) const SUBJECT_MAX: usize = Positions::BITS as usize - 1;

/// Matching one subject: the set of positions each step can reach, moving forward through the
/// pattern from position 0.
///
/// Where a group or a repeat can end when it starts at `p` is computed once per (node, `p`) and
/// remembered, so the time is polynomial (nodes x positions^2) however the repeats nest, and
/// for the usual patterns about one step per node. (Recomputing a repeat's inner matches from
/// every position it reached, at every level, took time exponential in the nesting: a 60-byte
/// Family-model such as `((((.*)*)*)*...)*` hung the import; found with the `perfmon_mapfile`
/// fuzz target.)
struct Matcher<'a> {
    s: &'a [u8],
    /// (node address, start) -> end positions: of a group, or of one or more repetitions.
    memo: HashMap<(usize, usize), Positions>,
}

impl Matcher<'_> {
    /// Where matching `seq` can end, from any of `starts`.
    fn seq(&mut self, seq: &[Node], starts: Positions) -> Positions {
        let mut cur = starts;
        for node in seq {
            if cur == 0 {
                break;
            }
            cur = bits(cur).fold(0, |acc, p| acc | self.node(node, p));
        }
        cur
    }

    /// Where matching `node` from `p` can end.
    fn node(&mut self, node: &Node, p: usize) -> Positions {
        let one = |ok: bool| if ok { 1 << (p + 1) } else { 0 };
        let s = self.s;
        match node {
            Node::Lit(c) => one(s.get(p) == Some(c)),
            Node::Any => one(p < s.len()),
            // Upper-casing the pattern turned `a-f` into `A-F`; the subject is upper-cased too.
            Node::Class { negated, ranges } => one(s
                .get(p)
                .is_some_and(|c| ranges.iter().any(|&(lo, hi)| (lo..=hi).contains(c)) != *negated)),
            Node::Group(alts) => self.remembered(node, p, |m| {
                alts.iter().fold(0, |acc, alt| acc | m.seq(alt, 1 << p))
            }),
            Node::Repeat { min, .. } => self.repeated(node, p) | if *min == 0 { 1 << p } else { 0 },
        }
    }

    /// Where one or more repetitions of `repeat`'s node from `p` can end: the ends of one, and
    /// (for `*` and `+`) the ends of more from each of those. Matches never end before they
    /// start, and one ending at `p` itself adds nothing, so the recursion only moves forward.
    fn repeated(&mut self, repeat: &Node, p: usize) -> Positions {
        let Node::Repeat { node, many, .. } = repeat else {
            return 0;
        };
        self.remembered(repeat, p, |m| {
            let once = m.node(node, p);
            if !*many {
                return once;
            }
            bits(once)
                .filter(|&q| q > p)
                .fold(once, |acc, q| acc | m.repeated(repeat, q))
        })
    }

    /// `compute`'s value for (`node`, `p`), computed once.
    fn remembered(
        &mut self,
        node: &Node,
        p: usize,
        compute: impl FnOnce(&mut Self) -> Positions,
    ) -> Positions {
        let key = (core::ptr::from_ref(node).addr(), p);
        if let Some(&ends) = self.memo.get(&key) {
            return ends;
        }
        let ends = compute(self);
        self.memo.insert(key, ends);
        ends
    }
}

/// The positions in a set, in increasing order.
fn bits(mut set: Positions) -> impl Iterator<Item = usize> {
    core::iter::from_fn(move || {
        (set != 0).then(|| {
            let p = set.trailing_zeros() as usize;
            set &= set - 1;
            p
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::perfmon::tests::{cpu, pat};

    #[test]
    fn family_model_patterns() {
        assert!(pat("GenuineIntel-6-55").matches_cpu(&cpu("GenuineIntel-6-55")));
        assert!(pat("GenuineIntel-6-55").matches_cpu(&cpu("GenuineIntel-6-55-7")));
        assert!(!pat("GenuineIntel-6-55").matches_cpu(&cpu("GenuineIntel-6-5E")));
        assert!(!pat("GenuineIntel-6-5").matches_cpu(&cpu("GenuineIntel-6-55")));
        let skx = pat("GenuineIntel-6-55-[01234]");
        assert!(skx.matches_cpu(&cpu("GenuineIntel-6-55-4")));
        assert!(!skx.matches_cpu(&cpu("GenuineIntel-6-55-5")));
        assert!(
            skx.matches_cpu(&cpu("GenuineIntel-6-55")),
            "stepping unknown"
        );
        let clx = pat("GenuineIntel-6-55-[56789ABCDEF]");
        assert!(clx.matches_cpu(&cpu("GenuineIntel-6-55-b")));
        let adl = pat("GenuineIntel-6-(97|9A|B7|BA|BF)");
        assert!(adl.matches_cpu(&cpu("GenuineIntel-6-9a")));
        assert!(adl.matches_cpu(&cpu("GenuineIntel-6-BF-2")));
        assert!(!adl.matches_cpu(&cpu("GenuineIntel-6-9B")));
        let range = pat("GenuineIntel-6-5[0-9a-f]");
        assert!(range.matches_cpu(&cpu("GenuineIntel-6-5C")));
        assert!(!range.matches_cpu(&cpu("GenuineIntel-6-6C")));
        assert!(pat("GenuineIntel-6-[^5]E").matches_cpu(&cpu("GenuineIntel-6-4E")));
        assert!(!pat("GenuineIntel-6-[^5]E").matches_cpu(&cpu("GenuineIntel-6-5E")));
        assert!(pat("GenuineIntel-6-55(-[0-4])?").matches_cpu(&cpu("GenuineIntel-6-55-2")));
        assert!(pat("GenuineIntel-6-8.*").matches_cpu(&cpu("GenuineIntel-6-8F-3")));
        assert!(pat("GenuineIntel-18-1").matches_cpu(&cpu("GenuineIntel-18-1")));
        assert!(
            pat("GenuineIntel-6-0F").matches_cpu(&cpu("GenuineIntel-6-F")),
            "padded"
        );
        assert!(pat("^GenuineIntel-6-55$").matches_cpu(&cpu("GenuineIntel-6-55")));
        assert!(!pat("GenuineIntel-6-55").matches_cpu(&cpu("AuthenticAMD-6-55")));
        for bad in [
            "GenuineIntel-6-(55",
            "GenuineIntel-6-55)",
            "GenuineIntel-6-[55",
            "GenuineIntel-6-[]",
            "GenuineIntel-6-[9-0]",
            "GenuineIntel-6-\\d",
            "*GenuineIntel",
            "GenuineIntel-6-5{2}",
        ] {
            assert!(Pattern::parse(bad).is_err(), "{bad}");
        }
        // Deep nesting is refused, not a stack overflow.
        let deep = format!("{}x{}", "(".repeat(100), ")".repeat(100));
        assert!(Pattern::parse(&deep).is_err());
        // Nested repeats terminate.
        assert!(pat("(a*)*b").full_match("aaab"));
        assert!(!pat("(a?)*b").full_match("aaac"));
    }

    proptest::proptest! {
        #[test]
        fn pattern_like_input_never_panics(text in "[-()|\\[\\]^$.?*+0-9A-Fa-f]{0,40}") {
            if let Ok(p) = Pattern::parse(&text) {
                let _ = p.full_match("GenuineIntel-6-55-4");
                let _ = p.matches_cpu(&cpu("GenuineIntel-6-55"));
            }
        }
    }
}
