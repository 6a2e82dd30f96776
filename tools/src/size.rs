//! Parsing byte sizes: the library's parser (`ginex::internals::size`), which
//! `LoaderBuilder::memory` shares.

pub use ginex::internals::size::parse_bytes;
