//! The `client` layer (see the crate docs).
