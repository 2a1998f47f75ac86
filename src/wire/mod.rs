//! The `wire` layer (see the crate docs).
