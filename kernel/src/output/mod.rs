//! Output: records and text lines, from whoever makes them to every sink.
//!
//! The flow runs one way: a producer calls the record API (`console`: `record`, `say!`), which
//! formats the line and hands it to the fan-out (`fanout`): the serial port (at once), the
//! stream kept for the results file, and text lines queued for the screen. The sinks
//! (`screen`, `results_file`) never call back into the record API: they return what they have
//! to say. `sinks` opens them, flushes them between payloads and at the end, and reports on them
//! through the console like any other producer.
//!
//! | module         | job                                                                  | host-tested |
//! |----------------|----------------------------------------------------------------------|-------------|
//! | `record`       | JSON-lines records (the contract with the host tool)                 | yes |
//! | `results_file` | the results file on the boot stick: recognising it, writing it        | yes |
//! | `screen`       | the framebuffer console (logic in `baremark-screen`, host-tested)     | no (the crate: yes) |
//! | `fanout`       | every line to the serial port, the kept stream and the screen         | no  |
//! | `console`      | the record API: records and text lines                               | no  |
//! | `sinks`        | opening the sinks, flushing them where no region is measured, their cost records | no |

pub mod record;
pub mod results_file;

#[cfg(target_os = "none")]
pub mod console;
#[cfg(target_os = "none")]
pub mod fanout;
#[cfg(target_os = "none")]
pub mod screen;
#[cfg(target_os = "none")]
pub mod sinks;
