//! One module per subcommand. Each takes its parsed arguments and returns the exit code; what
//! several share (connecting, selecting groups, reading) is in `session`, the formats in
//! `output`.

pub mod apply;
pub mod failback;
pub mod generate;
pub mod replication;
pub mod source_plan;
pub mod topics;
pub mod translate;
pub mod undo;
pub mod upstream;
pub mod verify;
pub mod wait_copied;
pub mod watch;
