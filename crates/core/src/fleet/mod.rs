//! The fleet around a cluster: its CAPI `Cluster` object (facts, labels to carry) and the
//! layered inventory that sets projects, namespaces, labels and annotations.

pub mod cluster;
pub mod fields;
pub mod inventory;
