//! I/O: durable file and directory creation, checksummed writers and
//! positional reads. The only module allowed `unsafe`; every block carries
//! a `SAFETY:` argument.

pub mod durable;
pub mod read;
pub mod writer;
