//! Full verification: every checksum of every file, plus the structural
//! rules a checksum cannot express (sorted lists, ids in range, zero padding).

use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::path::Path;

use crate::error::{Error, Result};
use crate::format::header::{FileHeader, FileKind, HEADER_SIZE};
use crate::format::pages::{Dtype, FeatureLayout, LAYOUT_RECORD_END};
use crate::format::q8::Q8_RECORD_END;
use crate::format::version::{V1_11, V1_7};
use crate::format::PAGE_SIZE;
use crate::io::read::{open, stream_crc, STREAM_CHUNK};
use crate::store::edge_splits::CscCheck;
use crate::store::relation_counts::RelationCounts;
use crate::store::segments::check_segment;
use crate::store::{read_checked_file, Store};

/// What [`Store::verify`] checked.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VerifyReport {
    /// Files checked (the manifest included).
    pub files: u64,
    /// Bytes read.
    pub bytes: u64,
    /// Feature pages whose CRC was checked.
    pub pages: u64,
    /// CSC segments whose CRC was checked.
    pub segments: u64,
}

/// Streams a file's payload through `visit`, checking the header padding is
/// zero and the payload CRC matches the header.
fn stream_payload(
    store: &Store,
    kind: FileKind,
    visit: impl FnMut(u64, &[u8]) -> Result<()>,
) -> Result<u64> {
    let path = store.path_of(kind);
    let entry = store
        .manifest()
        .file(kind)
        .ok_or_else(|| Error::corrupt(&path, 0, "file is not in the manifest"))?;
    let header_len = kind.header_len() as u64;
    let file = open(&path)?;
    let mut head = vec![0u8; header_len as usize];
    crate::io::read::read_exact_at(&file, &path, 0, &mut head)?;
    // A v1.7 `features.pages` has its layout record (checked at open)
    // before the padding.
    let version = FileHeader::decode(&head, &path)?.version;
    let padding = match kind == FileKind::FeaturePages {
        true if version >= V1_11 && store.dtype() == Dtype::Q8 => Q8_RECORD_END,
        true if version >= V1_7 => LAYOUT_RECORD_END,
        _ => HEADER_SIZE,
    };
    check_header_padding(&path, &head, padding)?;
    let got = stream_crc(&file, &path, header_len, entry.len - header_len, visit)?;
    Error::check_crc(&path, "payload", header_len, entry.payload_crc, got)?;
    Ok(entry.len)
}

/// Checks the scale of every q8 row starting in feature page `index`
/// (`page`, its CRC checked): a q8 store is one section (q8 is refused in
/// stores of several layouts), its rows fit a page or start one.
fn check_q8_page(store: &Store, path: &Path, index: u64, page: &[u8]) -> Result<()> {
    let layout = store.layout();
    let rpp = layout.rows_per_page() as u64;
    let (rows, first) = match rpp {
        0 if index % layout.pages_per_row() != 0 => return Ok(()),
        0 => (1, index / layout.pages_per_row()),
        _ => (rpp, index * rpp),
    };
    let row_bytes = layout.row_bytes().min(PAGE_SIZE);
    for r in first..(first + rows).min(store.feature_rows()) {
        let at = layout.locate(r).offset_in_page;
        let bytes = page.get(at..at + row_bytes).unwrap_or_default();
        if let Some(why) = crate::format::q8::check_row(bytes) {
            return Err(Error::corrupt(
                path,
                FeatureLayout::page_offset(index) + at as u64,
                format!("feature row {r} (page {index}): {why}"),
            ));
        }
    }
    Ok(())
}

/// Checks that the bytes of a page header from `from` (after the common
/// header and any record it holds) are zero.
fn check_header_padding(path: &Path, head: &[u8], from: usize) -> Result<()> {
    if let Some(i) = head[from..].iter().position(|&b| b != 0) {
        return Err(Error::corrupt(
            path,
            (from + i) as u64,
            "header padding is not zero",
        ));
    }
    Ok(())
}

fn read_all(r: &mut BufReader<File>, path: &Path, offset: u64, buf: &mut [u8]) -> Result<()> {
    r.read_exact(buf).map_err(|e| {
        if e.kind() == std::io::ErrorKind::UnexpectedEof {
            Error::corrupt(path, offset, "file is truncated")
        } else {
            Error::io("read", path, e)
        }
    })
}

impl Store {
    /// Checks every checksum of every file and the structure of every
    /// table. Returns the first damage found, naming file and offset.
    pub fn verify(&self) -> Result<VerifyReport> {
        self.verify_with_progress(&mut |_| {})
    }

    /// [`verify`](Self::verify), calling `progress` with bytes read so far.
    pub fn verify_with_progress(&self, progress: &mut dyn FnMut(u64)) -> Result<VerifyReport> {
        let mut report = VerifyReport::default();
        // The manifest, indptr, segment table and page CRCs were fully
        // checked by `open`; re-read them so a damaged file on disk is found
        // even if it changed after opening.
        let reopened = Store::open(self.dir())?;
        if reopened.manifest() != self.manifest() {
            return Err(Error::corrupt(
                self.dir().join("MANIFEST"),
                0,
                "manifest changed since the store was opened",
            ));
        }
        for kind in [
            FileKind::Manifest,
            FileKind::Indptr,
            FileKind::SegmentTable,
            FileKind::PageChecksums,
        ] {
            let path = self.path_of(kind);
            let checked = read_checked_file(&path, kind)?;
            report.files += 1;
            report.bytes += checked.header.file_len();
        }
        progress(report.bytes);

        // Feature pages: payload CRC and every page CRC.
        let crcs = self.page_crcs();
        let pages_path = self.path_of(FileKind::FeaturePages);
        let q8 = self.dtype() == Dtype::Q8;
        report.bytes += stream_payload(self, FileKind::FeaturePages, |pos, chunk| {
            for (i, page) in chunk.chunks_exact(PAGE_SIZE).enumerate() {
                let index = pos / PAGE_SIZE as u64 + i as u64;
                let got = crate::format::crc32(page);
                Error::check_crc(
                    &pages_path,
                    format_args!("feature page {index}"),
                    FeatureLayout::page_offset(index),
                    crcs.get(index as usize).copied().unwrap_or(!got),
                    got,
                )?;
                if q8 {
                    check_q8_page(self, &pages_path, index, page)?;
                }
            }
            progress(pos + chunk.len() as u64);
            Ok(())
        })?;
        report.pages = crcs.len() as u64;
        report.files += 1;

        let edge_splits = self.edge_splits()?;
        let mut csc_check = edge_splits.as_ref().map(CscCheck::new);
        report.bytes += self.verify_indices(progress, csc_check.as_mut())?;
        report.segments = self.segments().len() as u64;
        report.files += 1;

        for (kind, present) in [
            (FileKind::Labels, self.labels()?.is_some()),
            (FileKind::Splits, self.splits()?.is_some()),
            (FileKind::OriginalIds, self.original_ids()?.is_some()),
            (FileKind::EdgeSplits, edge_splits.is_some()),
            (
                FileKind::OutDegrees,
                self.manifest().file(FileKind::OutDegrees).is_some(),
            ),
        ] {
            if present {
                report.files += 1;
                report.bytes += self.manifest().file(kind).map(|f| f.len).unwrap_or(0);
            }
        }
        Ok(report)
    }

    /// Streams `indices` segment by segment: payload CRC, segment CRCs, ids
    /// in range and each list sorted; with edge splits, that the held-out
    /// edges are absent and the listed training edges present.
    fn verify_indices(
        &self,
        progress: &mut dyn FnMut(u64),
        mut edge_splits: Option<&mut CscCheck>,
    ) -> Result<u64> {
        let splits_path = self.path_of(FileKind::EdgeSplits);
        let path = self.path_of(FileKind::Indices);
        let width = self.index_width();
        let wb = width.bytes() as u64;
        let n = self.num_nodes();
        let indptr = self.indptr();
        let entry_len = self
            .manifest()
            .file(FileKind::Indices)
            .map(|f| f.len)
            .unwrap_or(0);
        let mut file = open(&path)?;
        let mut head = vec![0u8; PAGE_SIZE];
        crate::io::read::read_exact_at(&file, &path, 0, &mut head)?;
        check_header_padding(&path, &head, HEADER_SIZE)?;
        file.seek(SeekFrom::Start(PAGE_SIZE as u64))
            .map_err(|e| Error::io("seek", &path, e))?;
        let mut reader = BufReader::with_capacity(STREAM_CHUNK, file);
        let mut whole = crc32fast::Hasher::new();
        let mut buf = Vec::new();
        let mut ids = Vec::new();
        let mut done = 0u64;
        let mut relations = self.schema().map(RelationCounts::new);
        let recorded_degrees = self.recorded_out_degrees()?;
        let mut degree_sum = DegreeFingerprint::default();
        for (si, seg) in self.segments().iter().enumerate() {
            let offset = width.edge_file_offset(seg.edge_start);
            buf.resize((seg.edge_count * wb) as usize, 0);
            read_all(&mut reader, &path, offset, &mut buf)?;
            whole.update(&buf);
            check_segment(&path, si, seg, offset, &buf)?;
            ids.clear();
            width.decode(&buf, &mut ids);
            for v in seg.first_node..seg.end_node() {
                let lo = (indptr[v as usize] - seg.edge_start) as usize;
                let hi = (indptr[v as usize + 1] - seg.edge_start) as usize;
                let list = &ids[lo..hi];
                if let Some(j) = list.iter().position(|&u| u >= n) {
                    let at = width.edge_file_offset(indptr[v as usize] + j as u64);
                    return Err(Error::corrupt(
                        &path,
                        at,
                        format!("in-neighbor {} of node {v} is not below {n}", list[j]),
                    ));
                }
                if let Some(j) = list.windows(2).position(|w| w[1] < w[0]) {
                    let at = width.edge_file_offset(indptr[v as usize] + j as u64 + 1);
                    return Err(Error::corrupt(
                        &path,
                        at,
                        format!("in-neighbors of node {v} are not sorted"),
                    ));
                }
                if let Some(check) = edge_splits.as_deref_mut() {
                    check.list(v, list, &splits_path)?;
                }
                if recorded_degrees.is_some() {
                    degree_sum.add_list(list);
                }
                if let Some(counts) = &mut relations {
                    counts.add(v, list).map_err(|(j, reason)| {
                        let at = width.edge_file_offset(indptr[v as usize] + j as u64);
                        Error::corrupt(&path, at, reason)
                    })?;
                }
            }
            done += buf.len() as u64;
            if si % 1024 == 0 {
                progress(done);
            }
        }
        let mut rest = [0u8; 1];
        if reader
            .read(&mut rest)
            .map_err(|e| Error::io("read", &path, e))?
            != 0
        {
            return Err(Error::corrupt(
                &path,
                entry_len,
                "bytes after the last segment",
            ));
        }
        let header_crc = self
            .manifest()
            .file(FileKind::Indices)
            .map(|f| f.payload_crc)
            .unwrap_or(0);
        let got = whole.finalize();
        Error::check_crc(&path, "payload", PAGE_SIZE as u64, header_crc, got)?;
        if let Some(counts) = relations {
            counts.check(&self.path_of(FileKind::Schema))?;
        }
        if let Some(recorded) = recorded_degrees {
            self.check_out_degrees(&recorded, degree_sum)?;
        }
        if let Some(check) = edge_splits {
            check.finish(&splits_path)?;
        }
        Ok(entry_len)
    }
}

/// A fingerprint of a store's out-degrees: the sum, over every id of every
/// in-neighbor list, of a 64-bit mix of the id. It equals the sum over
/// nodes of `degree * mix(node)` exactly when the degrees are right, but
/// for a mismatch the mix cancels with probability about 2^-64; it costs a
/// multiply an edge and no memory, where a recount costs a random write
/// an edge into 4 bytes a node (at 2.3 B edges, `verify` took 90 s with a
/// recount).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct DegreeFingerprint(u64);

impl DegreeFingerprint {
    fn add_list(&mut self, list: &[u64]) {
        for &u in list {
            self.0 = self.0.wrapping_add(crate::rng::mix64(u));
        }
    }

    /// The fingerprint of a table of degrees.
    fn of_table(degrees: &[u32]) -> Self {
        DegreeFingerprint(degrees.iter().enumerate().fold(0u64, |acc, (v, &d)| {
            acc.wrapping_add(u64::from(d).wrapping_mul(crate::rng::mix64(v as u64)))
        }))
    }
}

impl Store {
    /// `out_degrees` must hold what the topology counts: a table whose
    /// CRC holds but whose counts are wrong would misplan every run. The
    /// fingerprint of `indices` decides; where it disagrees (or a degree
    /// saturated, which the fingerprint does not model) the degrees are
    /// recounted to name the first wrong entry.
    fn check_out_degrees(&self, recorded: &[u32], counted: DegreeFingerprint) -> Result<()> {
        let saturated = recorded.contains(&u32::MAX);
        if !saturated && DegreeFingerprint::of_table(recorded) == counted {
            return Ok(());
        }
        let path = self.path_of(FileKind::OutDegrees);
        let counted = self.count_out_degrees()?;
        let Some(v) = recorded.iter().zip(&counted).position(|(r, c)| r != c) else {
            return if saturated {
                Ok(())
            } else {
                Err(Error::corrupt(
                    &path,
                    u64::from(FileKind::OutDegrees.header_len()),
                    "the out-degrees do not sum to the in-neighbor lists, yet no entry differs on a recount (indices changed during verify?)",
                ))
            };
        };
        let offset = u64::from(FileKind::OutDegrees.header_len()) + 4 * v as u64;
        Err(Error::corrupt(
            path,
            offset,
            format!(
                "node {v}'s recorded out-degree is {}, but it is an in-neighbor {} times in indices",
                recorded[v], counted[v]
            ),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::DegreeFingerprint;

    /// The fingerprint of the lists equals the table's for the right
    /// degrees, and differs when one moves between nodes (the sum of
    /// degrees unchanged) or one is off by one.
    #[test]
    fn the_degree_fingerprint_tells_a_right_table_from_a_wrong_one() {
        let lists: [&[u64]; 4] = [&[3], &[0], &[0, 1], &[]];
        let mut of_lists = DegreeFingerprint::default();
        for l in lists {
            of_lists.add_list(l);
        }
        assert_eq!(DegreeFingerprint::of_table(&[2, 1, 0, 1]), of_lists);
        assert_ne!(DegreeFingerprint::of_table(&[1, 2, 0, 1]), of_lists);
        assert_ne!(DegreeFingerprint::of_table(&[2, 1, 0, 2]), of_lists);
        assert_ne!(DegreeFingerprint::of_table(&[2, 1, 1, 1]), of_lists);
    }
}
