//! I/O: durable file and directory creation, checksummed writers and
//! positional reads. The only module allowed `unsafe`; every block carries
//! a `SAFETY:` argument.

pub mod aligned;
pub mod backend;
pub mod cpu_time;
pub mod device_busy;
pub mod dir_lock;
pub mod durable;
pub mod fault;
pub mod floats;
pub mod heap;
pub mod page_reader;
pub mod pread;
pub mod read;
pub mod space;
pub mod uring;
pub mod writer;

pub use backend::{make_reader, Backend};
