//! Writing and reading runtime files (`format/runtime.md`): a common-header
//! file of framed, checksummed records whose payloads are bincode encodings
//! of the payload structs of `format::runtime`.

use std::fs::File;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};

use crate::cache::belady::Update;
use crate::error::{Error, Result};
use crate::format::header::{FileHeader, FileKind, HEADER_SIZE};
use crate::format::runtime::{
    decode_payload, encode_payload, IdsPayload, InitPayload, LinkPayload, RecordHeader, RecordKind,
    RunStamp, Seq, UpdatePayload, RECORD_HEADER_SIZE,
};
use crate::format::version::{V1_2, V1_3};
use crate::io::writer::ChecksummedWriter;
use crate::sample::link::LinkLabels;

/// Appends records to a new runtime file; [`finish`](Self::finish) writes
/// the header and fsyncs.
pub struct RunWriter {
    out: ChecksummedWriter,
}

impl RunWriter {
    /// Creates `path` (must not exist) for runtime records of `kind`
    /// ([`FileKind::RunSamples`] or [`FileKind::RunChanges`]) and writes
    /// its first record, the `run` record holding `stamp`.
    pub fn create(path: &Path, kind: FileKind, stamp: &RunStamp) -> Result<Self> {
        let mut w = RunWriter {
            out: ChecksummedWriter::create_as(path, kind, stamp.version())?,
        };
        w.append(RecordKind::Run, stamp.first_batch, &stamp.encode()?)?;
        Ok(w)
    }

    /// Appends one framed record.
    pub fn append(&mut self, kind: RecordKind, batch: u64, payload: &[u8]) -> Result<()> {
        self.out
            .write_payload(&RecordHeader::for_payload(kind, batch, payload).encode())?;
        self.out.write_payload(payload)
    }

    /// Appends the sampled ids of a batch.
    pub fn append_ids(&mut self, batch: u64, ids: &[u64]) -> Result<()> {
        let p = encode_payload(
            &IdsPayload {
                ids: Seq::borrowed(ids),
            },
            8 + ids.len() * 8,
        )?;
        self.append(RecordKind::Ids, batch, &p)
    }

    /// Appends a link batch's edges over its seeds.
    pub fn append_link(&mut self, batch: u64, l: &LinkLabels) -> Result<()> {
        let p = encode_payload(
            &LinkPayload {
                src: Seq::borrowed(&l.src),
                dst: Seq::borrowed(&l.dst),
                neg: l.neg as u64,
                neg_dst: Seq::borrowed(&l.neg_dst),
            },
            32 + (l.src.len() * 2 + l.neg_dst.len()) * 4,
        )?;
        self.append(RecordKind::Link, batch, &p)
    }

    /// Appends the cache init (ids to load before `first_batch`).
    pub fn append_init(&mut self, first_batch: u64, init: &[u64]) -> Result<()> {
        let p = encode_payload(
            &InitPayload {
                init: Seq::borrowed(init),
            },
            8 + init.len() * 8,
        )?;
        self.append(RecordKind::Init, first_batch, &p)
    }

    /// Appends the update applied after `batch`.
    pub fn append_update(&mut self, batch: u64, u: &Update) -> Result<()> {
        let p = encode_payload(
            &UpdatePayload {
                in_ids: Seq::borrowed(&u.in_ids),
                out_ids: Seq::borrowed(&u.out_ids),
                in_positions: Seq::borrowed(&u.in_positions),
            },
            24 + (u.in_ids.len() * 2 + u.out_ids.len()) * 8,
        )?;
        self.append(RecordKind::Update, batch, &p)
    }

    /// Writes the header and fsyncs the file.
    pub fn finish(self) -> Result<FileHeader> {
        self.out.finish()
    }
}

/// A decoded record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Record {
    /// Sampled ids of `batch`, seeds first.
    Ids {
        /// Batch index.
        batch: u64,
        /// The ids.
        ids: Vec<u64>,
    },
    /// Hop adjacencies of `batch`, kept encoded (the sampler's codec).
    Adj {
        /// Batch index.
        batch: u64,
        /// The encoded payload.
        payload: Vec<u8>,
    },
    /// Cache init before `batch`.
    Init {
        /// First batch of the superbatch.
        batch: u64,
        /// Ids to load.
        init: Vec<u64>,
    },
    /// Update after `batch`.
    Update {
        /// Batch index.
        batch: u64,
        /// The changeset.
        update: Update,
    },
    /// A link batch's edges over its seeds.
    Link {
        /// Batch index.
        batch: u64,
        /// Its positives and negatives (shapes checked; indices checked
        /// against the batch's seeds by the reader that knows them).
        labels: LinkLabels,
    },
}

/// Streams the records of a runtime file, checking each record's header
/// and payload CRC as it goes and the whole-payload CRC at the end.
pub struct RunReader {
    input: BufReader<File>,
    path: PathBuf,
    header: FileHeader,
    stamp: RunStamp,
    offset: u64,
    hasher: crc32fast::Hasher,
    done: bool,
}

impl RunReader {
    /// Opens a runtime file of `kind` and reads its `run` record (see
    /// [`stamp`](Self::stamp)).
    pub fn open(path: &Path, kind: FileKind) -> Result<Self> {
        let mut file = File::open(path).map_err(|e| Error::io("open", path, e))?;
        let len = file
            .metadata()
            .map_err(|e| Error::io("stat", path, e))?
            .len();
        let mut head = [0u8; HEADER_SIZE];
        file.read_exact(&mut head).map_err(|e| match e.kind() {
            std::io::ErrorKind::UnexpectedEof => Error::corrupt(
                path,
                0,
                "runtime file is shorter than its header (torn write?)",
            ),
            _ => Error::io("read", path, e),
        })?;
        let header = FileHeader::decode(&head, path)?.expect_kind(kind, path)?;
        if header.version < V1_2 {
            return Err(Error::invalid_argument(format!(
                "{}: runtime file of format version {}, which does not record its store and run (runtime files have since {V1_2}); it was written by an older ginex: delete it and run the inspector again",
                path.display(),
                header.version
            )));
        }
        if header.version < V1_3 {
            return Err(Error::invalid_argument(format!(
                "{}: runtime file of format version {}, whose record payloads predate the bincode encoding of runtime files {V1_3}; it was written by an older ginex: delete it and run the inspector again",
                path.display(),
                header.version
            )));
        }
        if header.file_len() != len {
            return Err(Error::corrupt(
                path,
                len.min(header.file_len()),
                format!("file is {len} bytes, its header says {}", header.file_len()),
            ));
        }
        let mut r = RunReader {
            input: BufReader::with_capacity(1 << 20, file),
            path: path.to_path_buf(),
            header,
            stamp: RunStamp::default(),
            offset: u64::from(header.header_len),
            hasher: crc32fast::Hasher::new(),
            done: false,
        };
        let at = r.offset;
        match r.next_raw()? {
            Some((h, payload, payload_at)) if h.kind == RecordKind::Run => {
                r.stamp = RunStamp::decode(&payload, path, payload_at, header.version)?;
            }
            Some((h, _, _)) => {
                return Err(Error::corrupt(
                    path,
                    at,
                    format!(
                        "the first record is a {} record, not the run record naming the file's store and run",
                        h.kind.name()
                    ),
                ))
            }
            None => {
                return Err(Error::corrupt(
                    path,
                    at,
                    "no run record (the file has no records)",
                ))
            }
        }
        Ok(r)
    }

    /// The file's header.
    pub fn header(&self) -> FileHeader {
        self.header
    }

    /// The store, run and parameters the file records (its `run` record).
    pub fn stamp(&self) -> &RunStamp {
        &self.stamp
    }

    fn read(&mut self, buf: &mut [u8], batch: Option<u64>) -> Result<()> {
        self.input.read_exact(buf).map_err(|e| match e.kind() {
            std::io::ErrorKind::UnexpectedEof => Error::corrupt(
                &self.path,
                self.offset,
                match batch {
                    Some(b) => format!("record of batch {b} is torn (file ends inside it)"),
                    None => "record header is torn (file ends inside it)".into(),
                },
            ),
            _ => Error::io("read", &self.path, e),
        })?;
        self.hasher.update(buf);
        Ok(())
    }

    /// The next record, or `None` after the last one (once the
    /// whole-payload CRC has been checked).
    pub fn next_record(&mut self) -> Result<Option<Record>> {
        let at = self.offset;
        match self.next_raw()? {
            None => Ok(None),
            Some((h, _, _)) if h.kind == RecordKind::Run => Err(Error::corrupt(
                &self.path,
                at,
                "a second run record (only the first record is one)",
            )),
            Some((h, payload, payload_at)) => {
                decode_record(h, payload, &self.path, payload_at).map(Some)
            }
        }
    }

    /// The next record's header, checked payload and payload offset.
    fn next_raw(&mut self) -> Result<Option<(RecordHeader, Vec<u8>, u64)>> {
        if self.done {
            return Ok(None);
        }
        let end = self.header.file_len();
        if self.offset == end {
            self.done = true;
            let got = std::mem::replace(&mut self.hasher, crc32fast::Hasher::new()).finalize();
            Error::check_crc(
                &self.path,
                "payload",
                u64::from(self.header.header_len),
                self.header.payload_crc,
                got,
            )?;
            return Ok(None);
        }
        let at = self.offset;
        let mut head = [0u8; RECORD_HEADER_SIZE];
        if end - at < RECORD_HEADER_SIZE as u64 {
            return Err(Error::corrupt(
                &self.path,
                at,
                "record header is torn (file ends inside it)",
            ));
        }
        self.read(&mut head, None)?;
        let h = RecordHeader::decode(&head, &self.path, at)?;
        if h.payload_len > end - at - RECORD_HEADER_SIZE as u64 {
            return Err(Error::corrupt(
                &self.path,
                at,
                format!(
                    "{} record of batch {} runs past the end of the file",
                    h.kind.name(),
                    h.batch
                ),
            ));
        }
        let mut payload = vec![0u8; h.payload_len as usize];
        self.read(&mut payload, Some(h.batch))?;
        let payload_at = at + RECORD_HEADER_SIZE as u64;
        self.offset = payload_at + h.payload_len;
        Error::check_crc(
            &self.path,
            format_args!("{} record of batch {}", h.kind.name(), h.batch),
            payload_at,
            h.payload_crc,
            crate::format::crc32(&payload),
        )?;
        Ok(Some((h, payload, payload_at)))
    }
}

fn decode_record(h: RecordHeader, p: Vec<u8>, path: &Path, base: u64) -> Result<Record> {
    let batch = h.batch;
    let bad = |what: String| {
        Error::corrupt(
            path,
            base,
            format!("{} record of batch {batch}: {what}", h.kind.name()),
        )
    };
    Ok(match h.kind {
        RecordKind::Run => {
            return Err(Error::corrupt(
                path,
                base,
                "internal: run records are decoded by RunReader::open",
            ))
        }
        RecordKind::Adj => Record::Adj { batch, payload: p },
        RecordKind::Link => {
            let l = decode_payload::<LinkPayload>(&p).map_err(bad)?;
            let labels = LinkLabels {
                src: l.src.into_vec(),
                dst: l.dst.into_vec(),
                neg: usize::try_from(l.neg).map_err(|_| bad(format!("K = {}", l.neg)))?,
                neg_dst: l.neg_dst.into_vec(),
            };
            // Shapes only: every index is below u32::MAX.
            labels
                .check(u32::MAX as usize, "link")
                .map_err(|e| bad(e.to_string()))?;
            Record::Link { batch, labels }
        }
        RecordKind::Ids => Record::Ids {
            batch,
            ids: decode_payload::<IdsPayload>(&p)
                .map_err(bad)?
                .ids
                .into_vec(),
        },
        RecordKind::Init => Record::Init {
            batch,
            init: decode_payload::<InitPayload>(&p)
                .map_err(bad)?
                .init
                .into_vec(),
        },
        RecordKind::Update => {
            let u = decode_payload::<UpdatePayload>(&p).map_err(bad)?;
            if u.in_positions.len() != u.in_ids.len() || u.out_ids.len() > u.in_ids.len() {
                return Err(bad(
                    "in_ids, out_ids and in_positions lengths disagree".into()
                ));
            }
            Record::Update {
                batch,
                update: Update {
                    in_ids: u.in_ids.into_vec(),
                    out_ids: u.out_ids.into_vec(),
                    in_positions: u.in_positions.into_vec(),
                },
            }
        }
    })
}

/// Reads a runtime file (verifying all checksums): its run record's stamp
/// and every other record.
pub fn read_all(path: &Path, kind: FileKind) -> Result<(RunStamp, Vec<Record>)> {
    let mut r = RunReader::open(path, kind)?;
    let mut out = Vec::new();
    while let Some(rec) = r.next_record()? {
        out.push(rec);
    }
    Ok((r.stamp, out))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stamp() -> RunStamp {
        RunStamp {
            store_id: 42,
            seed: 1,
            fanouts: vec![5, 5],
            num_batches: 2,
            ..RunStamp::default()
        }
    }

    fn sample_file(dir: &Path) -> PathBuf {
        let path = dir.join("sb-0.changes");
        let mut w = RunWriter::create(&path, FileKind::RunChanges, &stamp()).unwrap();
        w.append_init(0, &[5, 6, 7]).unwrap();
        w.append_update(
            0,
            &Update {
                in_ids: vec![9],
                out_ids: vec![5],
                in_positions: vec![3],
            },
        )
        .unwrap();
        w.append_update(1, &Update::default()).unwrap();
        w.finish().unwrap();
        path
    }

    #[test]
    fn round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let (got, recs) = read_all(&sample_file(dir.path()), FileKind::RunChanges).unwrap();
        assert_eq!(got, stamp());
        assert_eq!(recs.len(), 3);
        assert_eq!(
            recs[0],
            Record::Init {
                batch: 0,
                init: vec![5, 6, 7]
            }
        );
        assert_eq!(
            recs[1],
            Record::Update {
                batch: 0,
                update: Update {
                    in_ids: vec![9],
                    out_ids: vec![5],
                    in_positions: vec![3]
                }
            }
        );
    }

    #[test]
    fn every_flipped_byte_and_every_truncation_is_detected() {
        let dir = tempfile::tempdir().unwrap();
        let path = sample_file(dir.path());
        let original = std::fs::read(&path).unwrap();
        for pos in 0..original.len() {
            let mut d = original.clone();
            d[pos] ^= 0x21;
            std::fs::write(&path, &d).unwrap();
            assert!(
                read_all(&path, FileKind::RunChanges).is_err(),
                "flip at {pos} unnoticed"
            );
        }
        for cut in 0..original.len() {
            std::fs::write(&path, &original[..cut]).unwrap();
            assert!(
                read_all(&path, FileKind::RunChanges).is_err(),
                "truncation to {cut} unnoticed"
            );
        }
    }

    /// The error reading the sample file after `damage` changed its bytes.
    fn error_after_damage(damage: impl FnOnce(&mut Vec<u8>, &Path)) -> String {
        let dir = tempfile::tempdir().unwrap();
        let path = sample_file(dir.path());
        let mut d = std::fs::read(&path).unwrap();
        damage(&mut d, &path);
        std::fs::write(&path, &d).unwrap();
        read_all(&path, FileKind::RunChanges)
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn damaged_record_names_batch_and_offset() {
        let err = error_after_damage(|d, _| {
            let last = d.len() - 1; // inside the payload of batch 1's update
            d[last] ^= 1;
        });
        assert!(
            err.contains("update record of batch 1") && err.contains("offset"),
            "{err}"
        );
    }

    #[test]
    fn a_file_of_an_older_version_is_refused_clearly() {
        let err = error_after_damage(|d, path| {
            let mut h = FileHeader::decode(d, path).unwrap();
            h.version = crate::format::version::V1_0;
            d[..HEADER_SIZE].copy_from_slice(&h.encode());
        });
        assert!(
            err.contains("sb-0.changes")
                && err.contains("version 1.0")
                && err.contains("does not record its store and run"),
            "{err}"
        );
    }

    #[test]
    fn every_record_kind_round_trips() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sb-0.samples");
        let mut w = RunWriter::create(&path, FileKind::RunSamples, &stamp()).unwrap();
        let hops = vec![crate::sample::sampler::Hop {
            num_dst: 1,
            num_src: 3,
            src: vec![1, 2],
            dst: vec![0, 0],
            weights: Vec::new(),
        }];
        let adj = crate::sample::sampler::encode_hops(&hops).unwrap();
        w.append_ids(0, &[7, 8, 9]).unwrap();
        w.append(RecordKind::Adj, 0, &adj).unwrap();
        w.append_ids(1, &[]).unwrap();
        w.finish().unwrap();
        let (got, recs) = read_all(&path, FileKind::RunSamples).unwrap();
        assert_eq!(got, stamp());
        assert_eq!(
            recs,
            vec![
                Record::Ids {
                    batch: 0,
                    ids: vec![7, 8, 9]
                },
                Record::Adj {
                    batch: 0,
                    payload: adj.clone()
                },
                Record::Ids {
                    batch: 1,
                    ids: vec![]
                },
            ]
        );
        assert_eq!(crate::sample::sampler::decode_hops(&adj).unwrap(), hops);
        // The update with companions and an empty one, from sample_file.
        let (_, recs) = read_all(&sample_file(dir.path()), FileKind::RunChanges).unwrap();
        assert_eq!(
            recs[2],
            Record::Update {
                batch: 1,
                update: Update::default()
            }
        );
    }

    /// A payload whose CRC is right but whose bincode is not (a writer bug,
    /// or damage that kept the CRC): refused naming the file, the record,
    /// the batch and the payload's offset, never a panic.
    #[test]
    fn a_payload_that_does_not_decode_is_refused_naming_file_batch_and_offset() {
        let dir = tempfile::tempdir().unwrap();
        let cases: [(&str, RecordKind, Vec<u8>, &str); 5] = [
            (
                "torn",
                RecordKind::Ids,
                vec![3, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0],
                "ends inside a field",
            ),
            (
                "huge count",
                RecordKind::Init,
                u64::MAX.to_le_bytes().to_vec(),
                "exceeds the decode limit",
            ),
            (
                "trailing",
                RecordKind::Ids,
                vec![0, 0, 0, 0, 0, 0, 0, 0, 9],
                "unexpected bytes after the last field",
            ),
            (
                "lengths",
                RecordKind::Update,
                [1u64, 4, 0, 0]
                    .iter()
                    .flat_map(|v| v.to_le_bytes())
                    .collect(),
                "lengths disagree",
            ),
            ("empty", RecordKind::Update, vec![], "ends inside a field"),
        ];
        for (name, kind, payload, want) in cases {
            let path = dir.path().join(format!("sb-{name}.changes"));
            let mut w = RunWriter::create(&path, FileKind::RunChanges, &stamp()).unwrap();
            w.append(kind, 5, &payload).unwrap();
            w.finish().unwrap();
            let err = read_all(&path, FileKind::RunChanges).unwrap_err();
            let msg = err.to_string();
            let run_len = stamp().encode().unwrap().len() as u64;
            let at = (HEADER_SIZE + 2 * RECORD_HEADER_SIZE) as u64 + run_len;
            assert!(
                matches!(err, Error::Corrupt { offset, .. } if offset == at),
                "{name}: {msg}"
            );
            assert!(
                msg.contains(&format!("sb-{name}.changes"))
                    && msg.contains(&format!("{} record of batch 5", kind.name()))
                    && msg.contains(want),
                "{name}: {msg}"
            );
        }
        // The run record's own payload, refused when the file is opened.
        let path = dir.path().join("sb-run.samples");
        let mut w = RunWriter {
            out: ChecksummedWriter::create(&path, FileKind::RunSamples).unwrap(),
        };
        w.append(RecordKind::Run, 0, &[1, 2, 3]).unwrap();
        w.finish().unwrap();
        let msg = read_all(&path, FileKind::RunSamples)
            .unwrap_err()
            .to_string();
        assert!(
            msg.contains("sb-run.samples")
                && msg.contains("run record")
                && msg.contains("ends inside a field"),
            "{msg}"
        );
    }

    #[test]
    fn a_version_1_2_file_is_refused_clearly() {
        let err = error_after_damage(|d, path| {
            let mut h = FileHeader::decode(d, path).unwrap();
            h.version = crate::format::version::V1_2;
            d[..HEADER_SIZE].copy_from_slice(&h.encode());
        });
        assert!(
            err.contains("sb-0.changes")
                && err.contains("version 1.2")
                && err.contains("bincode")
                && err.contains("delete it and run the inspector again"),
            "{err}"
        );
    }

    #[test]
    fn a_file_without_its_run_record_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sb-0.changes");
        let mut w = RunWriter {
            out: ChecksummedWriter::create(&path, FileKind::RunChanges).unwrap(),
        };
        w.append_init(0, &[1]).unwrap();
        w.finish().unwrap();
        let err = read_all(&path, FileKind::RunChanges)
            .unwrap_err()
            .to_string();
        assert!(err.contains("not the run record"), "{err}");
    }
}
