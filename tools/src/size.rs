//! Parsing byte sizes: the library's parser (`ginex::size`), which
//! `LoaderBuilder::memory` shares.

pub use ginex::size::parse_bytes;
