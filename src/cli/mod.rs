//! The `cli` layer (see the crate docs).
/// Entry point.
pub fn main() -> i32 { 0 }
