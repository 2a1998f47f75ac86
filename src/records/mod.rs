//! The `records` layer (see the crate docs).
