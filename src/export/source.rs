//! Streaming reads of a store for the exporters: feature rows in blocks of
//! pages (read by [`Store::read_feature_range`]), in-neighbor lists segment by segment, and the per-node tables
//! (labels, splits, original ids) through cursors. Every byte read is
//! checked: feature pages and CSC segments against their CRCs as they are
//! read, and each table's payload CRC in one streaming pass when it is
//! opened. Resident memory is the store's `indptr` plus a few blocks of
//! [`Source::block_bytes`].

use std::fs::File;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::format::bytes::{le_i32, le_u64};
use crate::format::header::{FileHeader, FileKind, HEADER_SIZE};
use crate::format::manifest::store_file_name;
use crate::format::tables::{SPLIT_IDS_OFFSET, TEST_COUNT_OFFSET, TRAIN_COUNT_OFFSET};
use crate::format::PAGE_SIZE;
use crate::io::read::{open, read_exact_at};
use crate::store::Store;

/// The smallest block the exporters stream in.
const MIN_BLOCK: u64 = 64 << 10;
/// The largest block (bigger blocks do not make sequential I/O faster).
const MAX_BLOCK: u64 = 32 << 20;
/// Blocks resident at once (input, decoded values, output buffers).
const BLOCKS_IN_FLIGHT: u64 = 6;

/// A store opened for streaming export within a memory budget.
pub struct Source<'a> {
    store: &'a Store,
    block: u64,
    indices: File,
    indices_path: PathBuf,
}

impl<'a> Source<'a> {
    /// Plans blocks for `memory` bytes: the store's resident `indptr`
    /// (8 bytes a node) comes first; what is left is split into blocks.
    pub fn new(store: &'a Store, memory: u64) -> Result<Self> {
        let resident = (store.num_nodes() + 1) * 8;
        let floor = resident + BLOCKS_IN_FLIGHT * MIN_BLOCK;
        if memory < floor {
            return Err(Error::invalid_argument(format!(
                "--memory {memory} bytes is too small for {}: the store's indptr takes {resident} bytes and the export needs {} more for its buffers (give at least {floor})",
                store.dir().display(),
                BLOCKS_IN_FLIGHT * MIN_BLOCK
            )));
        }
        let block = ((memory - resident) / BLOCKS_IN_FLIGHT).clamp(MIN_BLOCK, MAX_BLOCK);
        let indices_path = store.dir().join(store_file_name(FileKind::Indices));
        Ok(Source {
            store,
            block,
            indices: open(&indices_path)?,
            indices_path,
        })
    }

    /// The store.
    pub fn store(&self) -> &Store {
        self.store
    }

    /// Bytes per streaming block.
    pub fn block_bytes(&self) -> u64 {
        self.block
    }

    /// Rows per feature block (at least one).
    pub fn rows_per_block(&self) -> u64 {
        let layout = self.store.layout();
        let rpp = layout.rows_per_page() as u64;
        let pages = (self.block / PAGE_SIZE as u64).max(1);
        if rpp >= 1 {
            pages * rpp
        } else {
            (pages / layout.pages_per_row()).max(1)
        }
    }

    /// Calls `f(dst, sources)` for every node in id order with its sorted
    /// in-neighbor list (the edges `src -> dst`), reading `indices` a few
    /// segments at a time and checking each segment's CRC.
    pub fn in_lists(&self, f: &mut dyn FnMut(u64, &[u64]) -> Result<()>) -> Result<()> {
        self.in_lists_range(0..self.store.num_nodes(), f)
    }

    /// Like [`in_lists`](Self::in_lists) for the nodes `nodes` only (a
    /// node type's id range): reads the segments that hold their lists,
    /// and calls `f` for each node of the range in id order.
    pub fn in_lists_range(
        &self,
        nodes: std::ops::Range<u64>,
        f: &mut dyn FnMut(u64, &[u64]) -> Result<()>,
    ) -> Result<()> {
        let width = self.store.index_width().bytes() as u64;
        let indptr = self.store.indptr();
        let segments = self.store.segments();
        let mut buf = Vec::new();
        let mut ids = Vec::new();
        let mut next_node = nodes.start;
        let mut i = segments.partition_point(|s| s.first_node + s.node_count <= nodes.start);
        while i < segments.len() && segments.get(i).is_some_and(|s| s.first_node < nodes.end) {
            // A run of segments of about one block.
            let start = i;
            let mut bytes = 0u64;
            while let Some(s) = segments.get(i) {
                if i > start
                    && (bytes + s.edge_count * width > self.block || s.first_node >= nodes.end)
                {
                    break;
                }
                bytes += s.edge_count * width;
                i += 1;
            }
            let run = segments.get(start..i).unwrap_or_default();
            let Some(first) = run.first() else { break };
            buf.resize(bytes as usize, 0);
            let offset = PAGE_SIZE as u64 + first.edge_start * width;
            read_exact_at(&self.indices, &self.indices_path, offset, &mut buf)?;
            ids.clear();
            let mut at = 0usize;
            for (k, s) in run.iter().enumerate() {
                let len = (s.edge_count * width) as usize;
                let part = buf.get(at..at + len).unwrap_or_default();
                Error::check_crc(
                    &self.indices_path,
                    format_args!("segment {}", start + k),
                    offset + at as u64,
                    s.crc,
                    crc32fast::hash(part),
                )?;
                at += len;
            }
            self.store.index_width().decode(&buf, &mut ids);
            let base = first.edge_start;
            let last = run.last().map_or(0, |s| s.first_node + s.node_count);
            for v in first.first_node.max(nodes.start)..last.min(nodes.end) {
                let lo = (indptr[v as usize] - base) as usize;
                let hi = (indptr[v as usize + 1] - base) as usize;
                f(v, ids.get(lo..hi).unwrap_or_default())?;
            }
            next_node = next_node.max(last.min(nodes.end));
        }
        // Nodes after the last segment (none in a valid store) have no edges.
        for v in next_node..nodes.end {
            f(v, &[])?;
        }
        Ok(())
    }

    /// Opens a per-node table of the store, if it has one, after checking
    /// its whole payload against the header CRC in one streaming pass.
    pub fn table(&self, kind: FileKind) -> Result<Option<Table>> {
        if self.store.manifest().file(kind).is_none() {
            return Ok(None);
        }
        let path = self.store.dir().join(store_file_name(kind));
        let file = open(&path)?;
        let mut head = [0u8; HEADER_SIZE];
        read_exact_at(&file, &path, 0, &mut head)?;
        let header = FileHeader::decode(&head, &path)?.expect_kind(kind, &path)?;
        let start = u64::from(header.header_len);
        let mut hasher = crc32fast::Hasher::new();
        let mut buf = vec![0u8; self.block as usize];
        let mut at = 0u64;
        while at < header.payload_len {
            let k = (header.payload_len - at).min(self.block) as usize;
            let part = buf.get_mut(..k).unwrap_or_default();
            read_exact_at(&file, &path, start + at, part)?;
            hasher.update(part);
            at += k as u64;
        }
        let got = hasher.finalize();
        Error::check_crc(&path, "payload", start, header.payload_crc, got)?;
        Ok(Some(Table {
            file,
            path,
            start,
            len: header.payload_len,
            block: self.block,
        }))
    }

    /// The split lists as three cursors (train, valid, test), if the store
    /// has splits.
    pub fn split_cursors(&self) -> Result<Option<[IdCursor; 3]>> {
        let Some(t) = self.table(FileKind::Splits)? else {
            return Ok(None);
        };
        let mut counts = [0u8; SPLIT_IDS_OFFSET];
        t.read(0, &mut counts)?;
        let count = |at: usize| le_u64(&counts, at);
        let c = [
            count(TRAIN_COUNT_OFFSET),
            count(TRAIN_COUNT_OFFSET + 8),
            count(TEST_COUNT_OFFSET),
        ];
        let t = std::sync::Arc::new(t);
        let mut first = 0u64;
        let cursors = c.map(|n| {
            let cur = IdCursor::new(std::sync::Arc::clone(&t), SPLIT_IDS_OFFSET as u64, first, n);
            first += n;
            cur
        });
        Ok(Some(cursors))
    }
}

/// The checked payload of a table file, read by position.
pub struct Table {
    file: File,
    path: PathBuf,
    start: u64,
    len: u64,
    block: u64,
}

/// A value stored little-endian in a table's payload.
pub trait TableValue: Sized {
    /// Bytes per value.
    const WIDTH: usize;
    /// Decodes one value from `WIDTH` bytes.
    fn decode(bytes: &[u8]) -> Self;
}

impl TableValue for i32 {
    const WIDTH: usize = 4;
    fn decode(bytes: &[u8]) -> Self {
        le_i32(bytes, 0)
    }
}

impl TableValue for u64 {
    const WIDTH: usize = 8;
    fn decode(bytes: &[u8]) -> Self {
        le_u64(bytes, 0)
    }
}

impl Table {
    /// Reads payload bytes `at..at + buf.len()`.
    pub fn read(&self, at: u64, buf: &mut [u8]) -> Result<()> {
        if at + buf.len() as u64 > self.len {
            return Err(Error::corrupt(
                &self.path,
                self.start + at,
                format!(
                    "payload is {} bytes, a read of {} at {at} runs past it",
                    self.len,
                    buf.len()
                ),
            ));
        }
        read_exact_at(&self.file, &self.path, self.start + at, buf)
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The file offset of value `index` of `width` bytes (for errors).
    pub fn payload_offset(&self, index: u64, width: u64) -> u64 {
        self.start + index.saturating_mul(width)
    }

    /// Appends the fixed-width values of the nodes `nodes` (`i32` labels,
    /// `u64` original ids: see [`TableValue`]), as
    /// [`Store::read_feature_range`] appends their rows; `raw` is a
    /// scratch buffer.
    pub fn values<T: TableValue>(
        &self,
        nodes: std::ops::Range<u64>,
        raw: &mut Vec<u8>,
        out: &mut Vec<T>,
    ) -> Result<()> {
        raw.resize(nodes.end.saturating_sub(nodes.start) as usize * T::WIDTH, 0);
        self.read(nodes.start * T::WIDTH as u64, raw)?;
        out.extend(raw.chunks_exact(T::WIDTH).map(T::decode));
        Ok(())
    }

    /// Values per block of `width`-byte elements.
    pub fn per_block(&self, width: u64) -> u64 {
        (self.block / width).max(1)
    }
}

/// A forward cursor over a sorted list of `u64` ids stored in a table.
pub struct IdCursor {
    table: std::sync::Arc<Table>,
    base: u64,
    next: u64,
    end: u64,
    buf: Vec<u64>,
    pos: usize,
    raw: Vec<u8>,
}

impl IdCursor {
    fn new(table: std::sync::Arc<Table>, base: u64, first: u64, count: u64) -> Self {
        IdCursor {
            table,
            base,
            next: first,
            end: first + count,
            buf: Vec::new(),
            pos: 0,
            raw: Vec::new(),
        }
    }

    /// Ids in the list.
    pub fn len(&self) -> u64 {
        self.end - self.next + (self.buf.len() - self.pos) as u64
    }

    /// True when the list is exhausted.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The next id without consuming it.
    pub fn peek(&mut self) -> Result<Option<u64>> {
        if self.pos == self.buf.len() {
            if self.next == self.end {
                return Ok(None);
            }
            let k = (self.end - self.next).min(self.table.per_block(8));
            self.raw.resize(k as usize * 8, 0);
            self.table.read(self.base + self.next * 8, &mut self.raw)?;
            self.buf.clear();
            self.buf
                .extend(self.raw.chunks_exact(8).map(|c| le_u64(c, 0)));
            self.pos = 0;
            self.next += k;
        }
        Ok(self.buf.get(self.pos).copied())
    }

    /// Consumes the next id.
    pub fn next_id(&mut self) -> Result<Option<u64>> {
        let v = self.peek()?;
        if v.is_some() {
            self.pos += 1;
        }
        Ok(v)
    }

    /// Sets `mask[id - first] = 1` for every id below `first + mask.len()`
    /// (ids below `first` must have been consumed already).
    pub fn fill_mask(&mut self, first: u64, mask: &mut [u8]) -> Result<()> {
        let end = first + mask.len() as u64;
        while let Some(id) = self.peek()? {
            if id >= end {
                break;
            }
            if let Some(m) = id.checked_sub(first).and_then(|i| mask.get_mut(i as usize)) {
                *m = 1;
            }
            self.pos += 1;
        }
        Ok(())
    }
}
