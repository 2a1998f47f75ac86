//! The `cli` layer (see the crate docs).
pub fn main() -> i32 { 0 }
