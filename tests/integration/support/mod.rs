//! What the integration tests share, one concern a file. Imports among them run one way, from
//! the top of this list down: `tools` (what a test needs of the machine, and skipping without
//! it) -> `builder` (the one builder over the real binary) -> `output` (reading what `retry`
//! wrote), `wait` (waiting for a condition, bounded) -> `process` (processes, signals and
//! pipes seen from outside). Test modules take them all at once (`use crate::support::*`).

mod builder;
mod output;
mod process;
mod tools;
mod wait;

pub use builder::*;
pub use output::*;
pub use process::*;
pub use tools::*;
pub use wait::*;
