//! Reading a store's edge splits (format/edge-splits.md) and checking them
//! against its CSC: held-out edges absent, listed training edges present.

use std::path::Path;

use crate::error::{Error, Result};
use crate::format::edge_splits::EdgeSplits;
use crate::format::header::FileKind;
use crate::store::{read_checked_file, Store};

impl Store {
    /// The store's edge splits; Ok(None) when it was imported without any.
    /// The file is read whole, its CRC checked and its payload validated
    /// (ids in range, lengths, no edge twice in a split or in two splits).
    pub fn edge_splits(&self) -> Result<Option<EdgeSplits>> {
        if self.manifest().file(FileKind::EdgeSplits).is_none() {
            return Ok(None);
        }
        let path = self.path_of(FileKind::EdgeSplits);
        let file = read_checked_file(&path, FileKind::EdgeSplits)?;
        let version = file.header.version;
        let splits = file.decode(|p| EdgeSplits::decode(p, self.num_nodes(), &path, version))?;
        splits
            .check_relation(self.schema())
            .map_err(|what| Error::corrupt(&path, 0, what))?;
        Ok(Some(splits))
    }
}

/// The directed edges a store's CSC must not hold (valid and test
/// positives, both directions on an undirected graph) and those it must
/// hold (the listed training positives), checked list by list as the CSC
/// streams in node order ([`CscCheck::list`]).
#[derive(Debug, Default)]
pub struct CscCheck {
    /// (dst, src, split name, index in the split), sorted.
    absent: Vec<(u64, u64, &'static str, usize)>,
    /// (dst, src, index in the train split), sorted.
    present: Vec<(u64, u64, usize)>,
    next_absent: usize,
    next_present: usize,
}

impl CscCheck {
    /// The checks of `splits`.
    pub fn new(splits: &EdgeSplits) -> Self {
        let mut absent = Vec::new();
        for (name, s) in [("valid", &splits.valid), ("test", &splits.test)] {
            for (i, (&a, &b)) in s.src.iter().zip(&s.dst).enumerate() {
                absent.push((b, a, name, i));
                if splits.undirected && a != b {
                    absent.push((a, b, name, i));
                }
            }
        }
        absent.sort_unstable();
        let mut present: Vec<(u64, u64, usize)> = splits.train.as_ref().map_or(Vec::new(), |t| {
            t.src
                .iter()
                .zip(&t.dst)
                .enumerate()
                .map(|(i, (&a, &b))| (b, a, i))
                .collect()
        });
        present.sort_unstable();
        CscCheck {
            absent,
            present,
            next_absent: 0,
            next_present: 0,
        }
    }

    /// Checks the sorted in-neighbor list of `dst`; lists must come in
    /// increasing node order. `path` names the CSC file in errors.
    pub fn list(&mut self, dst: u64, list: &[u64], path: &Path) -> Result<()> {
        while let Some(&(d, s, name, i)) = self.absent.get(self.next_absent) {
            if d > dst {
                break;
            }
            self.next_absent += 1;
            if d == dst && list.binary_search(&s).is_ok() {
                return Err(Error::corrupt(
                    path,
                    0,
                    format!("{name} edge {i} is held out, but the CSC holds the edge {s} -> {d}"),
                ));
            }
        }
        while let Some(&(d, s, i)) = self.present.get(self.next_present) {
            if d > dst {
                break;
            }
            self.next_present += 1;
            if d < dst || list.binary_search(&s).is_err() {
                return Err(Error::corrupt(
                    path,
                    0,
                    format!("train edge {i} ({s}, {d}) is not an edge of the CSC"),
                ));
            }
        }
        Ok(())
    }

    /// Call after the last list: a training edge past it is missing.
    pub fn finish(&self, path: &Path) -> Result<()> {
        match self.present.get(self.next_present) {
            Some(&(d, s, i)) => Err(Error::corrupt(
                path,
                0,
                format!("train edge {i} ({s}, {d}) is not an edge of the CSC"),
            )),
            None => Ok(()),
        }
    }
}
