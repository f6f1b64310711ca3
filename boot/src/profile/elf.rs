//! A payload ELF's symbols, source lines and code, for naming sampled RIPs: the symbol table
//! through `object`, DWARF line tables through `addr2line` (when the ELF has them).

use std::borrow::Cow;
use std::rc::Rc;

use anyhow::{Context as _, Result, bail};
use object::{Object, ObjectSection, ObjectSymbol, SymbolKind};

type Reader = gimli::EndianRcSlice<gimli::RunTimeEndian>;

/// A function of the symbol table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Function {
    /// Demangled, without the hash (`profile::heavy`).
    pub name: String,
    pub start: u64,
    pub size: u64,
}

impl Function {
    pub fn contains(&self, addr: u64) -> bool {
        addr >= self.start && addr - self.start < self.size.max(1)
    }
}

/// A source position.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Line {
    pub file: String,
    pub line: u32,
}

impl std::fmt::Display for Line {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.file, self.line)
    }
}

/// One payload ELF, ready to name addresses.
pub struct Symbolizer {
    /// Sorted by start address.
    functions: Vec<Function>,
    lines: Option<addr2line::Context<Reader>>,
    /// Executable sections: (address, bytes).
    code: Vec<(u64, Vec<u8>)>,
    /// Folder prefix removed from source paths (the current folder), so they read
    /// `payloads/profile/src/main.rs`.
    strip_prefix: Option<String>,
}

impl Symbolizer {
    /// Reads `elf` (`what` names it in errors). Fails when it is not an ELF or has no function
    /// symbols (stripped): a profile could name nothing.
    pub fn new(elf: &[u8], what: &str) -> Result<Symbolizer> {
        let file = object::File::parse(elf)
            .with_context(|| format!("{what}: not an ELF file the profiler can read"))?;
        let mut functions: Vec<Function> = file
            .symbols()
            .chain(file.dynamic_symbols())
            .filter(|s| s.kind() == SymbolKind::Text && s.address() != 0)
            .filter_map(|s| {
                let raw = s.name().ok()?;
                Some(Function {
                    name: demangle(raw),
                    start: s.address(),
                    size: s.size(),
                })
            })
            .collect();
        if functions.is_empty() {
            bail!(
                "{what}: the ELF has no function symbols (stripped?): build the payload without \
                 `strip = \"symbols\"` to profile it (docs/profiling.md)"
            );
        }
        functions.sort_by_key(|f| (f.start, std::cmp::Reverse(f.size)));
        functions.dedup_by_key(|f| f.start);
        let code = file
            .sections()
            .filter(|s| s.kind() == object::SectionKind::Text)
            .filter_map(|s| Some((s.address(), s.data().ok()?.to_vec())))
            .collect();
        let lines = load_lines(&file).ok().flatten();
        let strip_prefix = std::env::current_dir()
            .ok()
            .and_then(|d| d.to_str().map(|s| format!("{}/", s.trim_end_matches('/'))));
        Ok(Symbolizer {
            functions,
            lines,
            code,
            strip_prefix,
        })
    }

    /// Whether the ELF has DWARF line tables.
    pub fn has_lines(&self) -> bool {
        self.lines.is_some()
    }

    /// The function `addr` lies in. A symbol of size 0 covers up to the next symbol.
    pub fn function(&self, addr: u64) -> Option<&Function> {
        let i = self.functions.partition_point(|f| f.start <= addr);
        let f = self.functions.get(i.checked_sub(1)?)?;
        let end = if f.size > 0 {
            f.start + f.size
        } else {
            self.functions.get(i).map_or(f.start + 1, |n| n.start)
        };
        (addr < end).then_some(f)
    }

    /// The function called `name` (demangled, as [`Function::name`]).
    pub fn function_named(&self, name: &str) -> Option<&Function> {
        self.functions.iter().find(|f| f.name == name)
    }

    /// The source line of `addr`, from the line tables.
    pub fn line(&self, addr: u64) -> Option<Line> {
        let loc = self.lines.as_ref()?.find_location(addr).ok()??;
        let file = loc.file?;
        let file = match &self.strip_prefix {
            Some(p) => file.strip_prefix(p.as_str()).unwrap_or(file),
            None => file,
        };
        Some(Line {
            file: file.to_string(),
            line: loc.line?,
        })
    }

    /// The code bytes of `f`, when an executable section holds all of them.
    pub fn code(&self, f: &Function) -> Option<&[u8]> {
        self.code.iter().find_map(|(addr, bytes)| {
            let off = usize::try_from(f.start.checked_sub(*addr)?).ok()?;
            bytes.get(off..off.checked_add(usize::try_from(f.size).ok()?)?)
        })
    }
}

/// Rust names demangled without their hash (`{:#}`); other names as they are.
fn demangle(raw: &str) -> String {
    addr2line::demangle(raw, gimli::DW_LANG_Rust).unwrap_or_else(|| raw.to_string())
}

/// The DWARF of `file`, when it has a `.debug_line` section.
fn load_lines(file: &object::File<'_>) -> Result<Option<addr2line::Context<Reader>>> {
    if file.section_by_name(".debug_line").is_none() {
        return Ok(None);
    }
    let endian = if file.is_little_endian() {
        gimli::RunTimeEndian::Little
    } else {
        gimli::RunTimeEndian::Big
    };
    let load = |id: gimli::SectionId| -> Result<Reader, gimli::Error> {
        let data: Cow<'_, [u8]> = file
            .section_by_name(id.name())
            .and_then(|s| s.uncompressed_data().ok())
            .unwrap_or(Cow::Borrowed(&[]));
        Ok(Reader::new(Rc::from(&*data), endian))
    };
    let dwarf = gimli::Dwarf::load(load)?;
    Ok(Some(addr2line::Context::from_dwarf(dwarf)?))
}
