//! The static neighbor cache (Ginex §3.2, Ginex++ ch.3): built offline for
//! a byte budget, loaded whole, consulted by the sampler before the disk.
//!
//! Nodes are ranked by out-degree / in-degree (Aligraph's metric: how often
//! a list is sampled per byte it costs) and taken in rank order while the
//! file — header, bitmap, rank directory, location table and the encoded
//! lists — fits the budget. Empty lists are never cached: the resident
//! `indptr` already says they are empty.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::format::bytes::{le_u16, le_u32, le_u64};
use crate::format::csc::IndexWidth;
use crate::format::header::{FileHeader, FileKind};
use crate::format::neighbor_cache::{Codec, NcacheHeader, BLOCK_LISTS, BLOCK_WIDE_BIT, RANK_BLOCK};
use crate::io::durable::{
    fsync_dir, rename_no_replace, report_stale_staging, unique_staging_name, CreatedFile,
};
use crate::io::writer::write_file;
use crate::sample::neighbor_cache_pick::{Candidates, Cut};
pub use crate::sample::neighbor_cache_pick::{Pick, ReadsModel};
use crate::sample::source::ListCache;
use crate::store::{read_checked_file, Store};

/// CRC of a store's manifest payload: what a cache is tied to.
pub fn store_identity(store: &Store) -> u32 {
    crate::format::crc32(&store.manifest().encode())
}

/// What a build produced.
#[derive(Debug, Clone)]
pub struct BuildReport {
    /// The file written.
    pub path: PathBuf,
    /// Lists cached.
    pub lists: u64,
    /// Ids in the cached lists.
    pub ids: u64,
    /// File bytes (header included).
    pub bytes: u64,
    /// Blob bytes (encoded lists).
    pub blob_bytes: u64,
    /// Codec used.
    pub codec: Codec,
}

pub use crate::store::STREAM_CHUNK_BYTES;

/// Out-degree of every node (occurrences as an in-neighbor): the store's
/// recorded table ([`Store::recorded_out_degrees`], v1.10), else
/// [`Store::count_out_degrees`].
pub fn out_degrees(store: &Store) -> Result<Vec<u32>> {
    match store.recorded_out_degrees()? {
        Some(recorded) => Ok(recorded),
        None => store.count_out_degrees(),
    }
}

/// Builds a neighbor cache of at most `budget` bytes for `store` at `out`
/// (which must not exist), written atomically.
///
/// The topology is streamed twice, a run of segments at a time, never held
/// whole: the first pass counts out-degrees and each list's encoded size
/// (so the choice needs no list in memory; [`Candidates`]), the second
/// encodes the chosen lists straight into the blob. Memory: at most
/// [`build_bytes`] — 8 bytes a node while the lists are chosen, then the
/// cache's bitmap and the file's payload, which is the cache itself (its
/// allocation sized once, never copied).
pub fn build(store: &Store, budget: u64, codec: Codec, out: &Path) -> Result<BuildReport> {
    build_picked(store, budget, codec, out, &Pick::Degree)
}

/// [`build`] with the lists chosen by `pick` ([`build`]'s is
/// [`Pick::Degree`]). The file's format is the same whatever the pick:
/// only which lists it holds differs.
pub fn build_picked(
    store: &Store,
    budget: u64,
    codec: Codec,
    out: &Path,
    pick: &Pick<'_>,
) -> Result<BuildReport> {
    if out.symlink_metadata().is_ok() {
        return Err(Error::AlreadyExists {
            path: out.to_path_buf(),
        });
    }
    let n = store.num_nodes();
    let mut header = NcacheHeader {
        num_nodes: n,
        store_crc: store_identity(store),
        codec,
        width: store.index_width(),
        count: 0,
        blob_len: 0,
        budget: Some(budget),
    };
    let empty = empty_cache_bytes(store);
    // The other codecs' location table holds one offset with no list.
    let least = empty + if codec == Codec::BlockBitpack { 0 } else { 8 };
    if budget < least {
        return Err(Error::invalid_argument(format!(
            "--budget {budget} bytes is below the {least} bytes an empty cache of {n} nodes takes"
        )));
    }
    let candidates = Candidates::measure_pick(store, codec, pick)?;
    let (cut, size) = candidates.pick(codec, budget, empty);
    let bitmap = chosen_bitmap(&candidates, cut);
    drop(candidates);
    header.count = size.lists.count;
    header.blob_len = size.blob_bytes;
    // The blob's allocation becomes the payload: sized for all of it.
    let mut writer = LayoutWriter::new(codec, Vec::with_capacity(header.payload_len() as usize));
    let (width, mut scratch) = (store.index_width(), Vec::new());
    store.for_each_list(STREAM_CHUNK_BYTES, &mut |v, list| {
        if bitmap_has(&bitmap, v) {
            scratch.clear();
            codec.encode(list, width, &mut scratch)?;
            writer.push(&scratch);
        }
        Ok(())
    })?;
    let (table, blob) = writer.finish();
    if blob.len() as u64 != header.blob_len || table.len() as u64 * 8 != header.offsets_len() {
        return Err(Error::internal(format!(
            "neighbor cache layout: {} blob bytes and {} table entries written, {} and {} priced",
            blob.len(),
            table.len(),
            header.blob_len,
            header.offsets_len() / 8
        )));
    }
    let ids = (0..n)
        .filter(|&v| bitmap_has(&bitmap, v))
        .map(|v| store.indptr()[v as usize + 1] - store.indptr()[v as usize])
        .sum();
    let payload = assemble_payload(&header, &bitmap, &table, blob);
    let h = write_new_file(out, &payload)?;
    Ok(BuildReport {
        path: out.to_path_buf(),
        lists: header.count,
        ids,
        bytes: h.file_len(),
        blob_bytes: header.blob_len,
        codec,
    })
}

/// Most bytes [`build`] holds for a cache of `budget` bytes over
/// `num_nodes` nodes, besides the store itself: the larger of choosing the
/// lists ([`Candidates::BYTES_PER_NODE`] a node and a digit histogram) and
/// writing them (the payload, at most the budget, with the bitmap beside
/// it), plus a run of segments read and a block of lists being encoded.
pub fn build_bytes(num_nodes: u64, budget: u64) -> u64 {
    let bitmap = num_nodes.div_ceil(64) * 8;
    let choosing = Candidates::BYTES_PER_NODE * num_nodes + Candidates::HISTOGRAM_BYTES;
    let writing = budget + bitmap;
    choosing.max(writing) + 2 * STREAM_CHUNK_BYTES
}

/// The membership bitmap of the nodes `cut` takes.
fn chosen_bitmap(candidates: &Candidates<'_>, cut: Cut) -> Vec<u64> {
    let n = candidates.num_nodes();
    let mut bitmap = vec![0u64; n.div_ceil(64) as usize];
    for v in 0..n {
        if candidates.takes(cut, v as usize) {
            bitmap[(v / 64) as usize] |= 1 << (v % 64);
        }
    }
    bitmap
}

fn bitmap_has(bitmap: &[u64], v: u64) -> bool {
    bitmap
        .get((v / 64) as usize)
        .is_some_and(|w| w >> (v % 64) & 1 == 1)
}

/// The file's payload: everything before the blob, then the blob, whose
/// own allocation becomes the payload (it was reserved for all of it), so
/// the payload costs the budget once, not twice.
fn assemble_payload(
    header: &NcacheHeader,
    bitmap: &[u64],
    table: &[u64],
    blob: Vec<u8>,
) -> Vec<u8> {
    let mut payload = Vec::with_capacity((header.payload_len() - header.blob_len) as usize);
    header.encode(&mut payload);
    for w in bitmap {
        payload.extend_from_slice(&w.to_le_bytes());
    }
    let mut rank = 0u32;
    for (i, w) in bitmap.iter().enumerate() {
        if i as u64 % (RANK_BLOCK / 64) == 0 {
            payload.extend_from_slice(&rank.to_le_bytes());
        }
        rank += w.count_ones();
    }
    for t in table {
        payload.extend_from_slice(&t.to_le_bytes());
    }
    let mut blob = blob;
    blob.splice(0..0, payload);
    debug_assert_eq!(blob.len() as u64, header.payload_len());
    blob
}

/// Writes the neighbor-cache file `out` (which must not exist) holding
/// `payload`, atomically: through a temporary name, renamed into place.
fn write_new_file(out: &Path, payload: &[u8]) -> Result<FileHeader> {
    let name = out
        .file_name()
        .ok_or_else(|| Error::invalid_argument(format!("{} has no file name", out.display())))?;
    let parent = out
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    if out.symlink_metadata().is_ok() {
        // Refused before anything is written; never replaced.
        return Err(Error::AlreadyExists {
            path: out.to_path_buf(),
        });
    }
    report_stale_staging(parent, &name.to_string_lossy());
    // A temporary name no other process or call uses: nothing is removed
    // to make room, and on failure `write_file` removes only what it
    // created.
    let tmp = out.with_file_name(unique_staging_name(&name.to_string_lossy()));
    let h = write_file(&tmp, FileKind::NeighborCache, payload)?;
    // Written by this call: removed unless renamed onto `out`.
    let created = CreatedFile::created(&tmp);
    rename_no_replace(&tmp, out)?;
    created.keep();
    fsync_dir(parent)?;
    Ok(h)
}

/// Bytes a neighbor cache of `store` takes with no list in it: the file
/// header, the fixed part, the bitmap and the rank directory.
pub fn empty_cache_bytes(store: &Store) -> u64 {
    let header = NcacheHeader {
        num_nodes: store.num_nodes(),
        store_crc: 0,
        codec: Codec::BlockBitpack,
        width: store.index_width(),
        count: 0,
        blob_len: 0,
        budget: Some(0),
    };
    64 + header.payload_len()
}

/// Bytes the location table and blob of `codec` take for exactly `lists`
/// (in node order): what those lists cost in a cache, bitmap aside.
pub fn encoded_size<'l>(
    codec: Codec,
    width: IndexWidth,
    lists: impl Iterator<Item = &'l [u64]>,
) -> Result<u64> {
    let mut encs = Vec::new();
    for l in lists {
        let mut e = Vec::new();
        codec.encode(l, width, &mut e)?;
        encs.push(e);
    }
    let (table, blob) = if codec == Codec::BlockBitpack {
        block_layout(encs.iter().map(|e| e.as_slice()))
    } else {
        offset_layout(encs.iter().map(|e| e.as_slice()))
    };
    Ok(8 * table.len() as u64 + blob.len() as u64)
}

/// The per-list location table (`count + 1` offsets) and the blob.
fn offset_layout<'e>(lists: impl Iterator<Item = &'e [u8]>) -> (Vec<u64>, Vec<u8>) {
    let mut writer = LayoutWriter::new(Codec::Raw, Vec::new());
    lists.for_each(|e| writer.push(e));
    writer.finish()
}

/// The `block-bitpack` directory and blob of `lists` (see [`LayoutWriter`]).
fn block_layout<'e>(lists: impl Iterator<Item = &'e [u8]>) -> (Vec<u64>, Vec<u8>) {
    let mut writer = LayoutWriter::new(Codec::BlockBitpack, Vec::new());
    lists.for_each(|e| writer.push(e));
    writer.finish()
}

/// Lays encoded lists out one at a time, in node order, as a location
/// table and a blob. For `block-bitpack`: a directory entry per
/// [`BLOCK_LISTS`] lists (the block's blob offset, [`BLOCK_WIDE_BIT`] when
/// its end offsets are `u32`) and, per block, each list's end offset
/// relative to the block's first list, then the lists (one block is held
/// while it fills); for the other codecs `count + 1` offsets.
struct LayoutWriter {
    blocked: bool,
    table: Vec<u64>,
    blob: Vec<u8>,
    /// The open block's lists, and where each one ends among them.
    block: Vec<u8>,
    ends: Vec<usize>,
}

impl LayoutWriter {
    /// A writer for `codec` appending to `blob`.
    fn new(codec: Codec, blob: Vec<u8>) -> Self {
        let blocked = codec == Codec::BlockBitpack;
        LayoutWriter {
            blocked,
            table: if blocked { Vec::new() } else { vec![0] },
            blob,
            block: Vec::new(),
            ends: Vec::new(),
        }
    }

    /// Appends the next list's encoding.
    fn push(&mut self, encoded: &[u8]) {
        if !self.blocked {
            self.blob.extend_from_slice(encoded);
            self.table.push(self.blob.len() as u64);
            return;
        }
        self.block.extend_from_slice(encoded);
        self.ends.push(self.block.len());
        if self.ends.len() as u64 == BLOCK_LISTS {
            self.close_block();
        }
    }

    fn close_block(&mut self) {
        if self.ends.is_empty() {
            return;
        }
        let wide = self.block.len() > usize::from(u16::MAX);
        self.table
            .push(self.blob.len() as u64 | if wide { BLOCK_WIDE_BIT } else { 0 });
        for &end in &self.ends {
            if wide {
                self.blob.extend_from_slice(&(end as u32).to_le_bytes());
            } else {
                self.blob.extend_from_slice(&(end as u16).to_le_bytes());
            }
        }
        self.blob.extend_from_slice(&self.block);
        self.block.clear();
        self.ends.clear();
    }

    /// The location table and the blob.
    fn finish(mut self) -> (Vec<u64>, Vec<u8>) {
        if self.blocked {
            self.close_block();
        }
        (self.table, self.blob)
    }
}

/// A loaded neighbor cache, tied to the store it was built for.
pub struct NeighborCache<'a> {
    path: PathBuf,
    header: NcacheHeader,
    bitmap: Vec<u64>,
    rank: Vec<u32>,
    offsets: Vec<u64>,
    blob: Vec<u8>,
    indptr: Option<&'a [u64]>,
}

impl<'a> NeighborCache<'a> {
    /// Loads `path` (checksums verified) for `store`; refuses a cache built
    /// for another store.
    pub fn open(path: &Path, store: &'a Store) -> Result<Self> {
        NeighborCache::open_unbound(path)?.bind(store)
    }

    /// Ties a cache loaded with [`open_unbound`](Self::open_unbound) to
    /// `store`; refuses a cache built for another store.
    pub fn bind<'s>(self, store: &'s Store) -> Result<NeighborCache<'s>> {
        let header = self.header;
        if header.num_nodes != store.num_nodes()
            || header.store_crc != store_identity(store)
            || header.width != store.index_width()
        {
            return Err(Error::invalid_argument(format!(
                "{} was built for another store (its manifest checksum {:#010x} differs from {}'s {:#010x}); rebuild it with `ginex cache build`",
                self.path.display(),
                header.store_crc,
                store.dir().display(),
                store_identity(store)
            )));
        }
        Ok(NeighborCache {
            path: self.path,
            header: self.header,
            bitmap: self.bitmap,
            rank: self.rank,
            offsets: self.offsets,
            blob: self.blob,
            indptr: Some(store.indptr()),
        })
    }

    /// Loads and checks a cache file without its store (lists then decode
    /// without the degree cross-check): for `ginex-dump`.
    pub fn open_unbound(path: &Path) -> Result<NeighborCache<'static>> {
        let file = read_checked_file(path, FileKind::NeighborCache)?;
        let header = NcacheHeader::decode(&file.payload, file.header.version, path)?;
        let p = &file.payload;
        let mut at = header.fixed_len() as usize;
        let mut take = |len: u64| -> &[u8] {
            let s = &p[at..at + len as usize];
            at += len as usize;
            s
        };
        let bitmap: Vec<u64> = take(header.bitmap_len())
            .chunks_exact(8)
            .map(|c| le_u64(c, 0))
            .collect();
        let rank: Vec<u32> = take(header.rank_len())
            .chunks_exact(4)
            .map(|c| le_u32(c, 0))
            .collect();
        let offsets: Vec<u64> = take(header.offsets_len())
            .chunks_exact(8)
            .map(|c| le_u64(c, 0))
            .collect();
        // The blob is the payload's tail: moved to the front of the
        // payload's own allocation, not copied beside it (the cache is
        // held once, not twice, while it loads).
        let mut blob = file.payload;
        blob.drain(..at);
        blob.truncate(header.blob_len as usize);
        blob.shrink_to_fit();
        let cache = NeighborCache {
            path: path.to_path_buf(),
            header,
            bitmap,
            rank,
            offsets,
            blob,
            indptr: None,
        };
        cache.check_tables()?;
        Ok(cache)
    }

    fn check_tables(&self) -> Result<()> {
        let bad = |what: &str| Error::corrupt(&self.path, 64, format!("neighbor cache: {what}"));
        let ones: u64 = self.bitmap.iter().map(|w| u64::from(w.count_ones())).sum();
        if ones != self.header.count {
            return Err(bad("bitmap population differs from the list count"));
        }
        if let Some(last) = self.bitmap.last() {
            let tail_bits = self.header.num_nodes % 64;
            if tail_bits != 0 && last >> tail_bits != 0 {
                return Err(bad("bitmap marks nodes beyond the node count"));
            }
        }
        let mut rank = 0u32;
        for (i, w) in self.bitmap.iter().enumerate() {
            if i as u64 % (RANK_BLOCK / 64) == 0
                && self.rank.get(i / (RANK_BLOCK / 64) as usize) != Some(&rank)
            {
                return Err(bad("rank directory is inconsistent with the bitmap"));
            }
            rank += w.count_ones();
        }
        if self.header.codec == Codec::BlockBitpack {
            for i in (0..self.header.count).step_by(BLOCK_LISTS as usize) {
                if self.block_span(i as usize).is_none() {
                    return Err(bad(&format!(
                        "block of list {i}: offsets do not tile the blob"
                    )));
                }
            }
            return Ok(());
        }
        if self.offsets.first() != Some(&0)
            || self.offsets.windows(2).any(|w| w[1] < w[0])
            || self.offsets.last() != Some(&self.header.blob_len)
        {
            return Err(bad(
                "list offsets are not increasing from 0 to the blob length",
            ));
        }
        Ok(())
    }

    /// For the block holding entry `i` of a `block-bitpack` cache: the blob
    /// offset of its end-offset array, that array's width, its entry count
    /// and the blob offset of its first list; None unless the block's
    /// directory entry and end offsets tile the blob exactly.
    fn block_span(&self, i: usize) -> Option<(usize, usize, usize, usize)> {
        let b = i / BLOCK_LISTS as usize;
        let entry = *self.offsets.get(b)?;
        let base = usize::try_from(entry & !BLOCK_WIDE_BIT).ok()?;
        let w = if entry & BLOCK_WIDE_BIT != 0 { 4 } else { 2 };
        let first = b * BLOCK_LISTS as usize;
        let n = (self.header.count as usize - first).min(BLOCK_LISTS as usize);
        let next = match self.offsets.get(b + 1) {
            Some(e) => usize::try_from(e & !BLOCK_WIDE_BIT).ok()?,
            None => self.blob.len(),
        };
        if b == 0 && base != 0 {
            return None;
        }
        let lists = base.checked_add(n * w)?;
        if lists > next || next > self.blob.len() {
            return None;
        }
        let mut prev = 0usize;
        for k in 0..n {
            let end = self.rel_end(base, w, k)?;
            if end < prev {
                return None;
            }
            prev = end;
        }
        (lists + prev == next).then_some((base, w, n, lists))
    }

    fn rel_end(&self, base: usize, w: usize, k: usize) -> Option<usize> {
        let at = base + k * w;
        let b = self.blob.get(at..at + w)?;
        Some(if w == 2 {
            usize::from(le_u16(b, 0))
        } else {
            le_u32(b, 0) as usize
        })
    }

    /// Blob range of entry `i`.
    fn list_range(&self, i: usize) -> Option<(usize, usize)> {
        if self.header.codec != Codec::BlockBitpack {
            return Some((
                *self.offsets.get(i)? as usize,
                *self.offsets.get(i + 1)? as usize,
            ));
        }
        let b = i / BLOCK_LISTS as usize;
        let entry = *self.offsets.get(b)?;
        let base = (entry & !BLOCK_WIDE_BIT) as usize;
        let w = if entry & BLOCK_WIDE_BIT != 0 { 4 } else { 2 };
        let n = (self.header.count as usize - b * BLOCK_LISTS as usize).min(BLOCK_LISTS as usize);
        let k = i % BLOCK_LISTS as usize;
        let lists = base + n * w;
        let lo = if k == 0 {
            0
        } else {
            self.rel_end(base, w, k - 1)?
        };
        let hi = self.rel_end(base, w, k)?;
        Some((lists + lo, lists + hi))
    }

    /// Cached node ids, ascending.
    pub fn cached_nodes(&self) -> Vec<u64> {
        let mut out = Vec::with_capacity(self.header.count as usize);
        for (i, &w) in self.bitmap.iter().enumerate() {
            let mut w = w;
            while w != 0 {
                out.push(i as u64 * 64 + u64::from(w.trailing_zeros()));
                w &= w - 1;
            }
        }
        out
    }

    /// The header.
    pub fn header(&self) -> &NcacheHeader {
        &self.header
    }

    /// Bytes held in memory.
    pub fn memory_bytes(&self) -> u64 {
        (self.bitmap.len() * 8 + self.rank.len() * 4 + self.offsets.len() * 8 + self.blob.len())
            as u64
    }

    /// Whether `v`'s list is cached.
    pub fn contains(&self, v: u64) -> bool {
        self.bitmap
            .get((v / 64) as usize)
            .is_some_and(|w| w >> (v % 64) & 1 == 1)
    }

    /// Entry index of `v` if cached: one bitmap test plus a rank lookup.
    fn entry(&self, v: u64) -> Option<usize> {
        let word = *self.bitmap.get((v / 64) as usize)?;
        if word >> (v % 64) & 1 == 0 {
            return None;
        }
        let block = (v / RANK_BLOCK) as usize;
        let mut r = self.rank[block] as usize;
        let first_word = block * (RANK_BLOCK / 64) as usize;
        for w in &self.bitmap[first_word..(v / 64) as usize] {
            r += w.count_ones() as usize;
        }
        r += (word & ((1u64 << (v % 64)) - 1)).count_ones() as usize;
        Some(r)
    }

    /// Decodes every cached list and checks it against `store` (verify).
    pub fn verify_lists(&self, store: &Store) -> Result<u64> {
        let mut out = Vec::new();
        let mut checked = 0;
        for v in 0..self.header.num_nodes {
            out.clear();
            if self.lookup(v, &mut out)? {
                if out != store.in_neighbors(v)? {
                    return Err(Error::corrupt(
                        &self.path,
                        64,
                        format!("cached list of node {v} differs from the store's"),
                    ));
                }
                checked += 1;
            }
        }
        Ok(checked)
    }
}

impl ListCache for NeighborCache<'_> {
    fn lookup(&self, v: u64, out: &mut Vec<u64>) -> Result<bool> {
        let Some(i) = self.entry(v) else {
            return Ok(false);
        };
        let (lo, hi) = self
            .list_range(i)
            .filter(|&(lo, hi)| lo <= hi && hi <= self.blob.len())
            .ok_or_else(|| {
                Error::corrupt(&self.path, 64, format!("location of node {v}'s list"))
            })?;
        let degree = self
            .indptr
            .map_or(u64::MAX, |ip| ip[v as usize + 1] - ip[v as usize]);
        let at = 64
            + (self.header.fixed_len()
                + self.header.bitmap_len()
                + self.header.rank_len()
                + self.header.offsets_len())
            + lo as u64;
        let before = out.len();
        self.header.codec.decode(
            &self.blob[lo..hi],
            degree,
            self.header.width,
            out,
            &self.path,
            at,
        )?;
        if self.indptr.is_some() && (out.len() - before) as u64 != degree {
            return Err(Error::corrupt(
                &self.path,
                at,
                format!(
                    "cached list of node {v} has {} ids, the store says {degree}",
                    out.len() - before
                ),
            ));
        }
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `block-bitpack` cache over `lists` (entry i = node i), unbound.
    fn block_cache(lists: &[Vec<u64>]) -> NeighborCache<'static> {
        let encs: Vec<Vec<u8>> = lists
            .iter()
            .map(|l| {
                let mut e = Vec::new();
                Codec::BlockBitpack
                    .encode(l, IndexWidth::U64, &mut e)
                    .unwrap();
                e
            })
            .collect();
        let (dir, blob) = block_layout(encs.iter().map(|e| e.as_slice()));
        let n = lists.len() as u64;
        let mut bitmap = vec![0u64; n.div_ceil(64) as usize];
        for v in 0..n {
            bitmap[(v / 64) as usize] |= 1 << (v % 64);
        }
        let mut rank = Vec::new();
        let mut r = 0u32;
        for (i, w) in bitmap.iter().enumerate() {
            if i as u64 % (RANK_BLOCK / 64) == 0 {
                rank.push(r);
            }
            r += w.count_ones();
        }
        NeighborCache {
            path: PathBuf::from("test.ncache"),
            header: NcacheHeader {
                num_nodes: n,
                store_crc: 0,
                codec: Codec::BlockBitpack,
                width: IndexWidth::U64,
                count: n,
                blob_len: blob.len() as u64,
                budget: Some(0),
            },
            bitmap,
            rank,
            offsets: dir,
            blob,
            indptr: None,
        }
    }

    #[test]
    fn block_location_finds_every_list_including_wide_blocks() {
        // 70 lists (two full blocks and a partial one); list 40 is big
        // enough (40k ids at up to 20 bits) to make its block wide.
        let lists: Vec<Vec<u64>> = (0..70u64)
            .map(|v| match v {
                40 => (0..40_000u64).map(|i| i * 999_983 % (1 << 40)).collect(),
                v if v % 7 == 0 => Vec::new(),
                v => (0..v).map(|i| u64::MAX - 1000 + i * 3).collect(),
            })
            .map(|mut l: Vec<u64>| {
                l.sort_unstable();
                l
            })
            .collect();
        let cache = block_cache(&lists);
        assert_ne!(cache.offsets[1] & BLOCK_WIDE_BIT, 0, "block 1 is wide");
        assert_eq!(cache.offsets[0] & BLOCK_WIDE_BIT, 0, "block 0 is narrow");
        cache.check_tables().unwrap();
        let mut out = Vec::new();
        for (v, l) in lists.iter().enumerate() {
            out.clear();
            assert!(cache.lookup(v as u64, &mut out).unwrap());
            assert_eq!(&out, l, "node {v}");
        }
    }

    #[test]
    fn a_block_table_that_does_not_tile_the_blob_is_refused() {
        let lists: Vec<Vec<u64>> = (0..40u64).map(|v| (0..v % 5).collect()).collect();
        let good = block_cache(&lists);
        good.check_tables().unwrap();

        let mut c = block_cache(&lists);
        c.offsets[1] += 1; // directory entry off by one
        assert!(c.check_tables().is_err());

        let mut c = block_cache(&lists);
        c.blob[0] = 0xff; // first end offset past its block
        assert!(c.check_tables().is_err());

        let mut c = block_cache(&lists);
        c.offsets[0] = 4; // the first block must start the blob
        assert!(c.check_tables().is_err());

        let mut c = block_cache(&lists);
        c.offsets.pop(); // a block missing from the directory
        assert!(c.check_tables().is_err());
    }
}
