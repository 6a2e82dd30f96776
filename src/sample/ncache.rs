//! The static neighbor cache (Ginex §3.2, Ginex++ ch.3): built offline for
//! a byte budget, loaded whole, consulted by the sampler before the disk.
//!
//! Nodes are ranked by out-degree / in-degree (Aligraph's metric: how often
//! a list is sampled per byte it costs; empty lists first) and taken in rank
//! order while the file — header, bitmap, rank directory, offsets and the
//! encoded lists — fits the budget.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::format::bytes::{le_u32, le_u64};
use crate::format::header::FileKind;
use crate::format::ncache::{Codec, NcacheHeader, NC_FIXED_SIZE, RANK_BLOCK};
use crate::io::durable::{fsync_dir, rename_no_replace};
use crate::io::writer::write_file;
use crate::sample::source::{InMemoryTopology, ListCache};
use crate::store::{read_checked_file, Store};

/// CRC of a store's manifest payload: what a cache is tied to.
pub fn store_identity(store: &Store) -> u32 {
    crc32fast::hash(&store.manifest().encode())
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

/// Out-degree of every node (occurrences as an in-neighbor).
pub fn out_degrees(topo: &InMemoryTopology, num_nodes: u64) -> Vec<u32> {
    let mut out = vec![0u32; num_nodes as usize];
    for v in 0..num_nodes {
        for &u in topo.list(v) {
            out[u as usize] = out[u as usize].saturating_add(1);
        }
    }
    out
}

/// Nodes in cache-priority order: out-degree / in-degree, descending (empty
/// lists first), ties by node id.
pub fn rank_nodes(store: &Store, out_deg: &[u32]) -> Vec<u64> {
    let indptr = store.indptr();
    let mut nodes: Vec<u64> = (0..store.num_nodes()).collect();
    let score = |v: u64| -> f64 {
        let indeg = indptr[v as usize + 1] - indptr[v as usize];
        if indeg == 0 {
            f64::INFINITY
        } else {
            f64::from(out_deg[v as usize]) / indeg as f64
        }
    };
    nodes.sort_by(|&a, &b| score(b).total_cmp(&score(a)).then(a.cmp(&b)));
    nodes
}

/// Builds a neighbor cache of at most `budget` bytes for `store` at `out`
/// (which must not exist), written atomically.
pub fn build(
    store: &Store,
    topo: &InMemoryTopology,
    budget: u64,
    codec: Codec,
    out: &Path,
) -> Result<BuildReport> {
    if out.symlink_metadata().is_ok() {
        return Err(Error::AlreadyExists {
            path: out.to_path_buf(),
        });
    }
    let n = store.num_nodes();
    let width = store.index_width();
    let mut header = NcacheHeader {
        num_nodes: n,
        store_crc: store_identity(store),
        codec,
        width,
        count: 0,
        blob_len: 0,
    };
    let fixed = 64 + header.payload_len(); // file header + empty cache
    if budget < fixed {
        return Err(Error::invalid_argument(format!(
            "--budget {budget} bytes is below the {fixed} bytes an empty cache of {n} nodes takes"
        )));
    }
    let ranked = rank_nodes(store, &out_degrees(topo, n));
    let mut used = fixed;
    let mut chosen: Vec<(u64, Vec<u8>)> = Vec::new();
    for v in ranked {
        let mut enc = Vec::new();
        codec.encode(topo.list(v), width, &mut enc)?;
        let cost = enc.len() as u64 + 8;
        if used + cost > budget {
            break;
        }
        used += cost;
        chosen.push((v, enc));
    }
    chosen.sort_unstable_by_key(|(v, _)| *v);
    header.count = chosen.len() as u64;
    header.blob_len = chosen.iter().map(|(_, e)| e.len() as u64).sum();

    let mut payload = Vec::with_capacity(header.payload_len() as usize);
    header.encode(&mut payload);
    let mut bitmap = vec![0u64; n.div_ceil(64) as usize];
    for (v, _) in &chosen {
        bitmap[(*v / 64) as usize] |= 1 << (v % 64);
    }
    for w in &bitmap {
        payload.extend_from_slice(&w.to_le_bytes());
    }
    let mut rank = 0u32;
    for (i, w) in bitmap.iter().enumerate() {
        if i as u64 % (RANK_BLOCK / 64) == 0 {
            payload.extend_from_slice(&rank.to_le_bytes());
        }
        rank += w.count_ones();
    }
    let mut offset = 0u64;
    payload.extend_from_slice(&offset.to_le_bytes());
    for (_, e) in &chosen {
        offset += e.len() as u64;
        payload.extend_from_slice(&offset.to_le_bytes());
    }
    for (_, e) in &chosen {
        payload.extend_from_slice(e);
    }
    debug_assert_eq!(payload.len() as u64, header.payload_len());

    let name = out
        .file_name()
        .ok_or_else(|| Error::invalid_argument(format!("{} has no file name", out.display())))?;
    let tmp = out.with_file_name(format!(
        ".{}.ginex-tmp-{}",
        name.to_string_lossy(),
        std::process::id()
    ));
    let _ = std::fs::remove_file(&tmp);
    let written = write_file(&tmp, FileKind::NeighborCache, &payload).and_then(|h| {
        rename_no_replace(&tmp, out)?;
        fsync_dir(
            out.parent()
                .filter(|p| !p.as_os_str().is_empty())
                .unwrap_or(Path::new(".")),
        )?;
        Ok(h)
    });
    let h = match written {
        Ok(h) => h,
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            return Err(e);
        }
    };
    Ok(BuildReport {
        path: out.to_path_buf(),
        lists: header.count,
        ids: chosen
            .iter()
            .map(|(v, _)| store.indptr()[*v as usize + 1] - store.indptr()[*v as usize])
            .sum(),
        bytes: h.file_len(),
        blob_bytes: header.blob_len,
        codec,
    })
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
        let mut cache = NeighborCache::open_unbound(path)?;
        let header = cache.header;
        if header.num_nodes != store.num_nodes()
            || header.store_crc != store_identity(store)
            || header.width != store.index_width()
        {
            return Err(Error::invalid_argument(format!(
                "{} was built for another store (its manifest checksum {:#010x} differs from {}'s {:#010x}); rebuild it with `ginex cache build`",
                path.display(),
                header.store_crc,
                store.dir().display(),
                store_identity(store)
            )));
        }
        cache.indptr = Some(store.indptr());
        Ok(cache)
    }

    /// Loads and checks a cache file without its store (lists then decode
    /// without the degree cross-check): for `ginex-dump`.
    pub fn open_unbound(path: &Path) -> Result<NeighborCache<'static>> {
        let (_, p) = read_checked_file(path, FileKind::NeighborCache)?;
        let header = NcacheHeader::decode(&p, path)?;
        let mut at = NC_FIXED_SIZE;
        let take = |at: &mut usize, len: u64| -> &[u8] {
            let s = &p[*at..*at + len as usize];
            *at += len as usize;
            s
        };
        let bitmap: Vec<u64> = take(&mut at, header.bitmap_len())
            .chunks_exact(8)
            .map(|c| le_u64(c, 0))
            .collect();
        let rank: Vec<u32> = take(&mut at, header.rank_len())
            .chunks_exact(4)
            .map(|c| le_u32(c, 0))
            .collect();
        let offsets: Vec<u64> = take(&mut at, header.offsets_len())
            .chunks_exact(8)
            .map(|c| le_u64(c, 0))
            .collect();
        let blob = take(&mut at, header.blob_len).to_vec();
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
        let (lo, hi) = (self.offsets[i] as usize, self.offsets[i + 1] as usize);
        let degree = self
            .indptr
            .map_or(u64::MAX, |ip| ip[v as usize + 1] - ip[v as usize]);
        let at = 64
            + (NC_FIXED_SIZE as u64
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
