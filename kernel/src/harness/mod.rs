//! The measurement harness (docs/harness.md): the event plan for this CPU, the statistics of
//! the repetitions a payload measured, and the records and table of each benchmark. The loop
//! itself runs in ring 3 (the SDK's `bench` module); `task::run` serves its syscalls.
//!
//! | module    | job                                                                     |
//! |-----------|-------------------------------------------------------------------------|
//! | `plan`    | the `events` list resolved for this PMU, split into counter groups       |
//! | `stats`   | min, median, mean, stddev, max, 20-80 mean; overhead removal; outliers   |
//! | `session` | one benchmark: checks on the syscalls, samples, results, records, table  |

pub mod plan;
pub mod session;
pub mod stats;
