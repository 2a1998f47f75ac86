//! The `mm2` layer (see the crate docs).
