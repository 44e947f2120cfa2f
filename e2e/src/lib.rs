//! Helpers shared by Oxbow's end-to-end suites.
