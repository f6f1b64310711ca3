//! Characters and tokens: the cursor over the input, which characters make names and end
//! modifier runs or term values, raw-event tokens (`r01c2`) and numbers.

pub(super) struct Cursor<'a> {
    pub(super) s: &'a str,
    /// Always on a char boundary.
    pub(super) pos: usize,
}

impl<'a> Cursor<'a> {
    pub(super) fn rest(&self) -> &'a str {
        self.s.get(self.pos..).unwrap_or("")
    }

    pub(super) fn peek(&self) -> Option<char> {
        self.rest().chars().next()
    }

    pub(super) fn bump(&mut self) {
        if let Some(c) = self.peek() {
            self.pos += c.len_utf8();
        }
    }

    pub(super) fn take_while(&mut self, f: impl Fn(char) -> bool) -> &'a str {
        let rest = self.rest();
        let len = rest
            .char_indices()
            .find(|&(_, c)| !f(c))
            .map_or(rest.len(), |(i, _)| i);
        self.pos += len;
        rest.get(..len).unwrap_or("")
    }

    pub(super) fn skip_ws(&mut self) {
        self.take_while(|c| c.is_whitespace());
    }

    /// Length of the char at the cursor (0 at the end), for error spans.
    pub(super) fn char_len(&self) -> usize {
        self.peek().map_or(0, char::len_utf8)
    }
}

pub(super) fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-')
}

/// Characters that end a modifier run or a term value.
pub(super) fn is_delimiter(c: char) -> bool {
    matches!(c, ',' | '{' | '}' | ':' | '/' | '=') || c.is_whitespace()
}

/// The hex digits of a raw event token (`r01c2` -> `01c2`).
pub(super) fn raw_digits(token: &str) -> Option<&str> {
    let hex = token.strip_prefix('r')?;
    (!hex.is_empty() && hex.bytes().all(|b| b.is_ascii_hexdigit())).then_some(hex)
}

/// A name that was probably meant as a raw event (`r`, `rxyz`): `r` plus letters and digits.
pub(super) fn looks_like_raw(token: &str) -> bool {
    token
        .strip_prefix('r')
        .is_some_and(|rest| rest.bytes().all(|b| b.is_ascii_alphanumeric()))
}

pub(super) fn parse_number(t: &str) -> Option<u64> {
    match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        // Checked by hand because from_str_radix also takes a sign.
        Some(hex) if !hex.is_empty() && hex.bytes().all(|b| b.is_ascii_hexdigit()) => {
            u64::from_str_radix(hex, 16).ok()
        }
        Some(_) => None,
        None if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) => t.parse().ok(),
        None => None,
    }
}
