//! Where Oxbow puts replicas: one piece of code for the controller, which places new
//! partitions ([`new_partitions`]), and the operator, which moves existing ones when
//! brokers join or leave ([`reassignment`]). Pure functions over broker ids, racks and
//! replica lists: no I/O, so every rule is property-tested here.

pub mod new_partitions;
pub mod reassignment;

pub use new_partitions::{Candidate, PlacementError, place_partitions};
