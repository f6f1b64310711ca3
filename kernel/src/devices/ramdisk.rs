//! Reading the ramdisk: a POSIX ustar archive (`tar --format=ustar`), as the host tool writes it.
//!
//! Written here rather than taken from a crate on purpose: the kernel's dependency graph must
//! stay free of crates whose `std` features host-side test dependencies switch on, because cargo
//! unifies those features into the kernel's bare-metal artifact build (a tar crate pulled in
//! `num-traits`, which `proptest` then built with `std`). The format is small and fixed, and
//! this reader checks everything: header checksums, sizes, bounds, UTF-8 names.
//!
//! Regular files are returned; directories, links and extended headers (pax `x`/`g`, GNU `L`/`K`)
//! are skipped with their data.

use core::fmt;

const BLOCK: usize = 512;

/// One regular file in the archive.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry<'a> {
    /// ustar splits paths longer than 100 bytes into a prefix and a name; usually empty.
    pub prefix: &'a str,
    pub name: &'a str,
    pub data: &'a [u8],
}

impl Entry<'_> {
    /// Whether the entry's full path (`prefix/name`, or `name`) is `path`.
    pub fn is(&self, path: &str) -> bool {
        if self.prefix.is_empty() {
            return self.name == path;
        }
        path.strip_prefix(self.prefix)
            .and_then(|rest| rest.strip_prefix('/'))
            == Some(self.name)
    }
}

/// Why the archive cannot be read further. `offset` is the byte offset of the bad header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TarError {
    /// The archive ends inside a header or inside a file's data.
    Truncated { offset: usize },
    /// The header checksum does not match.
    BadChecksum { offset: usize },
    /// A numeric field is not octal (or uses the base-256 extension, never written by baremark).
    BadNumber { offset: usize },
    /// A name is not UTF-8.
    BadName { offset: usize },
}

impl fmt::Display for TarError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            TarError::Truncated { offset } => write!(f, "archive truncated at byte {offset}"),
            TarError::BadChecksum { offset } => write!(f, "bad header checksum at byte {offset}"),
            TarError::BadNumber { offset } => {
                write!(f, "bad numeric field in the header at byte {offset}")
            }
            TarError::BadName { offset } => {
                write!(f, "file name is not UTF-8 in the header at byte {offset}")
            }
        }
    }
}

/// Iterates over the regular files of a ustar archive. After an error the iterator ends.
pub fn entries(archive: &[u8]) -> Entries<'_> {
    Entries {
        archive,
        offset: 0,
        done: false,
    }
}

/// Iterator returned by [`entries`].
pub struct Entries<'a> {
    archive: &'a [u8],
    offset: usize,
    done: bool,
}

impl<'a> Iterator for Entries<'a> {
    type Item = Result<Entry<'a>, TarError>;

    fn next(&mut self) -> Option<Self::Item> {
        while !self.done {
            match self.step() {
                Ok(Some(Some(entry))) => return Some(Ok(entry)),
                Ok(Some(None)) => continue, // skipped (not a regular file)
                Ok(None) => self.done = true,
                Err(e) => {
                    self.done = true;
                    return Some(Err(e));
                }
            }
        }
        None
    }
}

impl<'a> Entries<'a> {
    /// Reads the header at `self.offset`: `Ok(None)` at the end of the archive,
    /// `Ok(Some(None))` for a skipped entry.
    #[allow(clippy::type_complexity)]
    fn step(&mut self) -> Result<Option<Option<Entry<'a>>>, TarError> {
        let offset = self.offset;
        if offset == self.archive.len() {
            return Ok(None); // no end-of-archive blocks: accept the end
        }
        let header = self
            .archive
            .get(offset..offset + BLOCK)
            .ok_or(TarError::Truncated { offset })?;
        if header.iter().all(|&b| b == 0) {
            return Ok(None);
        }
        let stored = octal(&header[148..156]).ok_or(TarError::BadNumber { offset })?;
        // The checksum is the sum of the header bytes with the checksum field read as spaces.
        let sum: u64 = header
            .iter()
            .enumerate()
            .map(|(i, &b)| {
                if (148..156).contains(&i) {
                    u64::from(b' ')
                } else {
                    u64::from(b)
                }
            })
            .sum();
        if sum != stored {
            return Err(TarError::BadChecksum { offset });
        }
        let size = octal(&header[124..136]).ok_or(TarError::BadNumber { offset })?;
        let size = usize::try_from(size).map_err(|_| TarError::Truncated { offset })?;
        let data_start = offset + BLOCK;
        let data_end = data_start
            .checked_add(size)
            .ok_or(TarError::Truncated { offset })?;
        let data = self
            .archive
            .get(data_start..data_end)
            .ok_or(TarError::Truncated { offset })?;
        // Next header: data rounded up to whole blocks (the final block may be missing).
        let padded = size
            .div_ceil(BLOCK)
            .checked_mul(BLOCK)
            .ok_or(TarError::Truncated { offset })?;
        self.offset = (data_start + padded).min(self.archive.len());
        if data_start + padded > self.archive.len() && data_end != self.archive.len() {
            return Err(TarError::Truncated { offset });
        }
        let regular = matches!(header[156], b'0' | 0);
        if !regular {
            return Ok(Some(None));
        }
        let name = field_str(&header[0..100]).ok_or(TarError::BadName { offset })?;
        let is_ustar = &header[257..262] == b"ustar";
        let prefix = if is_ustar {
            field_str(&header[345..500]).ok_or(TarError::BadName { offset })?
        } else {
            ""
        };
        Ok(Some(Some(Entry { prefix, name, data })))
    }
}

/// A NUL-terminated (or full-width) text field.
fn field_str(field: &[u8]) -> Option<&str> {
    let end = field.iter().position(|&b| b == 0).unwrap_or(field.len());
    core::str::from_utf8(&field[..end]).ok()
}

/// An octal number field, padded with spaces or NULs.
fn octal(field: &[u8]) -> Option<u64> {
    if field.first().is_some_and(|&b| b & 0x80 != 0) {
        return None; // base-256 extension
    }
    let digits = field
        .iter()
        .copied()
        .skip_while(|&b| b == b' ')
        .take_while(|&b| b != 0 && b != b' ');
    let mut value: u64 = 0;
    let mut any = false;
    for d in digits {
        if !(b'0'..=b'7').contains(&d) {
            return None;
        }
        value = value.checked_mul(8)?.checked_add(u64::from(d - b'0'))?;
        any = true;
    }
    any.then_some(value)
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use std::vec::Vec;

    fn archive(files: &[(&str, &[u8])]) -> Vec<u8> {
        let mut builder = tar::Builder::new(Vec::new());
        for (name, data) in files {
            let mut header = tar::Header::new_ustar();
            header.set_size(data.len() as u64);
            header.set_mode(0o644);
            header.set_cksum();
            builder.append_data(&mut header, name, *data).unwrap();
        }
        builder.into_inner().unwrap()
    }

    #[test]
    fn reads_files_written_by_the_tar_crate() {
        let big = [7u8; 1500];
        let bytes = archive(&[
            ("run.cfg", b"test = none\n"),
            ("payloads/big.elf", &big),
            ("empty", b""),
        ]);
        let got: Vec<_> = entries(&bytes).collect::<Result<_, _>>().unwrap();
        assert_eq!(got.len(), 3);
        assert_eq!(
            got[0],
            Entry {
                prefix: "",
                name: "run.cfg",
                data: b"test = none\n"
            }
        );
        assert!(got[1].is("payloads/big.elf"));
        assert_eq!(got[1].data, &big[..]);
        assert_eq!(
            got[2],
            Entry {
                prefix: "",
                name: "empty",
                data: b""
            }
        );
    }

    #[test]
    fn skips_directories() {
        let mut builder = tar::Builder::new(Vec::new());
        let mut dir = tar::Header::new_ustar();
        dir.set_entry_type(tar::EntryType::Directory);
        dir.set_size(0);
        dir.set_mode(0o755);
        dir.set_cksum();
        builder.append_data(&mut dir, "payloads/", &[][..]).unwrap();
        let mut file = tar::Header::new_ustar();
        file.set_size(2);
        file.set_mode(0o644);
        file.set_cksum();
        builder
            .append_data(&mut file, "payloads/a", &b"hi"[..])
            .unwrap();
        let bytes = builder.into_inner().unwrap();
        let got: Vec<_> = entries(&bytes).collect::<Result<_, _>>().unwrap();
        assert_eq!(
            got,
            [Entry {
                prefix: "",
                name: "payloads/a",
                data: b"hi"
            }]
        );
    }

    #[test]
    fn detects_corruption_and_truncation() {
        let bytes = archive(&[("run.cfg", b"0123456789")]);
        let mut bad = bytes.clone();
        bad[0] ^= 1; // name changed, checksum now wrong
        assert_eq!(
            entries(&bad).next(),
            Some(Err(TarError::BadChecksum { offset: 0 }))
        );
        assert_eq!(
            entries(&bytes[..300]).next(),
            Some(Err(TarError::Truncated { offset: 0 }))
        );
        assert_eq!(
            entries(&bytes[..520]).next(),
            Some(Err(TarError::Truncated { offset: 0 }))
        );
        // A trailing data block cut short but holding all the data is fine.
        assert_eq!(
            entries(&bytes[..522]).next(),
            Some(Ok(Entry {
                prefix: "",
                name: "run.cfg",
                data: b"0123456789"
            }))
        );
        assert_eq!(entries(&[]).next(), None);
        assert_eq!(entries(&[0u8; 1024]).next(), None);
    }

    #[test]
    fn long_paths_use_the_ustar_prefix() {
        let long = std::format!("{}/payload.elf", "d".repeat(120));
        let bytes = archive(&[(long.as_str(), b"x")]);
        let entry = entries(&bytes).next().unwrap().unwrap();
        assert!(!entry.prefix.is_empty());
        assert!(entry.is(&long));
        assert!(!entry.is("payload.elf"));
    }

    #[test]
    fn octal_fields() {
        assert_eq!(octal(b"00000000012\0"), Some(10));
        assert_eq!(octal(b"     12 \0"), Some(10));
        assert_eq!(octal(b"\0\0\0"), None);
        assert_eq!(octal(b"0009"), None);
        assert_eq!(octal(&[0x80, 0, 0, 1]), None);
    }

    proptest::proptest! {
        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..3000)) {
            for entry in entries(&bytes).flatten() {
                proptest::prop_assert!(entry.data.len() <= bytes.len());
            }
        }

        #[test]
        fn damaged_real_archives_never_panic(cut in 0usize..2600, flip in 0usize..2600, bit in 0u8..8) {
            let mut bytes = archive(&[("run.cfg", b"on_end = halt\n"), ("x", &[1u8; 700])]);
            if flip < bytes.len() {
                bytes[flip] ^= 1 << bit;
            }
            bytes.truncate(cut.min(bytes.len()));
            let _ = entries(&bytes).count();
        }
    }
}
