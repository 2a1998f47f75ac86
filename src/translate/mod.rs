//! The `translate` layer (see the crate docs).
