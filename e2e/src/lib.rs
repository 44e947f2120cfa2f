//! Helpers shared by Oxbow's end-to-end suites.
//!
//! - [`broker_process`]: the real `oxbow` binary as a child process on free loopback
//!   ports, with SIGKILL and restart on the same log directory.

pub mod broker_process;
