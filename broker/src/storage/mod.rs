//! Partition logs.
