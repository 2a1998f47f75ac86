//! Java `.properties` files (to be written).
