//! The bodies of the fuzz targets (`targets`), shared with the ordinary host test that runs
//! them over the committed seeds (tests/tests/fuzz_seeds.rs).
//!
//! The host tool's record parser and result assembler are compiled here from their source
//! files instead of through the `baremark` crate: that crate's build script needs the kernel
//! and the payloads built for x86_64-unknown-none as artifact dependencies, and cargo-fuzz's
//! RUSTFLAGS (sanitizer, coverage instrumentation) would apply to those bare-metal builds too,
//! which cannot link them. Both files use only `crate::records` and registry crates.

#[path = "../../boot/src/records.rs"]
pub mod records;
#[path = "../../boot/src/results.rs"]
pub mod results;

pub mod targets;
