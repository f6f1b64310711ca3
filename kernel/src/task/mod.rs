//! Ring-3 tasks: payload loading, per-task virtual counters, the user counter page.
//! (Work in progress for the ring-3 tasks issue: the host-tested parts come first.)

pub mod elf;
pub mod user_page;
pub mod vcounter;
