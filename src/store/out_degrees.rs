//! Every node's out-degree (format/out-degrees.md): the table a v1.10
//! store records, or a count over its topology where it has none.

use crate::error::{Error, Result};
use crate::format::bytes::le_u32;
use crate::format::header::FileKind;
use crate::io::read::open;
use crate::store::{Store, STREAM_CHUNK_BYTES};

impl Store {
    /// Every node's out-degree as the store recorded it (format/out-degrees.md;
    /// stores written before v1.10 have none), streamed in
    /// [`STREAM_CHUNK`](crate::io::read::STREAM_CHUNK) pieces (4 bytes a
    /// node, never the file twice) with its CRC checked.
    /// [`Store::count_out_degrees`] counts them where the store has none
    /// ([`crate::sample::neighbor_cache::out_degrees`] picks).
    pub fn recorded_out_degrees(&self) -> Result<Option<Vec<u32>>> {
        const _: () = assert!(crate::io::read::STREAM_CHUNK % 4 == 0);
        let Some(entry) = self.manifest.file(FileKind::OutDegrees) else {
            return Ok(None);
        };
        let path = self.path_of(FileKind::OutDegrees);
        let start = u64::from(FileKind::OutDegrees.header_len());
        let payload = entry.len.saturating_sub(start);
        let n = self.num_nodes();
        if payload != n.saturating_mul(4) {
            return Err(Error::corrupt(
                &path,
                start,
                format!("out-degree payload is {payload} bytes, expected 4 x {n}"),
            ));
        }
        let file = open(&path)?;
        let mut degrees = Vec::with_capacity(n as usize);
        let got = crate::io::read::stream_crc(&file, &path, start, payload, |_, chunk| {
            degrees.extend(chunk.chunks_exact(4).map(|c| le_u32(c, 0)));
            Ok(())
        })?;
        Error::check_crc(&path, "payload", start, entry.payload_crc, got)?;
        Ok(Some(degrees))
    }

    /// Every node's out-degree counted in one streaming pass over the
    /// topology (one run of segments in memory, 4 bytes a node),
    /// saturating at `u32::MAX`.
    pub fn count_out_degrees(&self) -> Result<Vec<u32>> {
        let mut out = vec![0u32; self.num_nodes() as usize];
        self.for_each_list(STREAM_CHUNK_BYTES, &mut |_, list| {
            for &u in list {
                if let Some(d) = out.get_mut(u as usize) {
                    *d = d.saturating_add(1);
                }
            }
            Ok(())
        })?;
        Ok(out)
    }
}
