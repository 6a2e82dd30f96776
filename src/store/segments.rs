//! CSC segments as read back from `indices`: the one check of a segment's
//! bytes against the CRC in the segment table.

use std::path::Path;

use crate::error::{Error, Result};
use crate::format::crc32;
use crate::format::csc::Segment;

/// Checks `bytes`, segment `index` of the indices file at `path` read from
/// file offset `offset`, against the segment's CRC.
pub fn check_segment(
    path: &Path,
    index: usize,
    seg: &Segment,
    offset: u64,
    bytes: &[u8],
) -> Result<()> {
    let got = crc32(bytes);
    if got != seg.crc {
        return Err(Error::ChecksumMismatch {
            path: path.to_path_buf(),
            region: format!("segment {index}"),
            offset,
            expected: seg.crc,
            got,
        });
    }
    Ok(())
}
