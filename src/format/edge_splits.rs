//! Edge splits for link prediction: the held-out (and optionally the
//! training) positive edges and their negatives.
//!
//! Spec: `format/edge-splits.md`. The payload is a fixed part (flags and
//! one record per split), then each split's arrays back to back.

use std::path::Path;

use crate::error::{Error, Result};
use crate::format::bytes::{le_u32, le_u64};
use crate::format::schema::Schema;
use crate::format::version::{Version, V1_6, V1_9};

/// Offset of the flags word (`u32`) in the payload.
pub const FLAGS_OFFSET: usize = 0;
/// Offset of the relation index (`u32`, v1.9; zero without
/// [`FLAG_RELATION`], reserved before 1.9).
pub const RELATION_OFFSET: usize = FLAGS_OFFSET + 4;
/// Offset of the first split record (train, then valid, then test).
pub const RECORDS_OFFSET: usize = RELATION_OFFSET + 4;
/// Offset of a record's positive count `P` (`u64`), from the record.
pub const RECORD_COUNT_OFFSET: usize = 0;
/// Offset of a record's negatives per positive `K` (`u32`; 0 = none).
pub const RECORD_K_OFFSET: usize = RECORD_COUNT_OFFSET + 8;
/// Offset of a record's negative flags (`u32`).
pub const RECORD_NEG_FLAGS_OFFSET: usize = RECORD_K_OFFSET + 4;
/// Size of one split record.
pub const RECORD_SIZE: usize = RECORD_NEG_FLAGS_OFFSET + 4;
/// Offset of the first array (the train sources, or the valid sources when
/// the train split is not listed).
pub const ARRAYS_OFFSET: usize = RECORDS_OFFSET + 3 * RECORD_SIZE;

/// Flag: the graph was imported undirected.
pub const FLAG_UNDIRECTED: u32 = 1;
/// Flag: the training positives are listed (else they are the CSC's edges).
pub const FLAG_TRAIN_LISTED: u32 = 2;
/// Flag (v1.9): the splits are of one relation of a typed store, the one
/// whose index the relation field holds.
pub const FLAG_RELATION: u32 = 4;
/// Negative flag: every negative's source is its positive's source, so
/// the negative sources are not stored.
pub const NEG_SRC_IS_POSITIVE: u32 = 1;

/// The names of the three splits, in payload order.
pub const SPLIT_NAMES: [&str; 3] = ["train", "valid", "test"];

/// `K` negatives per positive, row-major: negative `j` of positive `i` is
/// `(src[i*K+j], dst[i*K+j])`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Negatives {
    /// Negatives per positive (at least 1).
    pub k: usize,
    /// Sources, `P x K`.
    pub src: Vec<u64>,
    /// Destinations, `P x K`.
    pub dst: Vec<u64>,
}

/// Held-out (or training) positive edges of one split, and the negatives
/// they are evaluated against.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EdgeSplit {
    /// Positive sources.
    pub src: Vec<u64>,
    /// Positive destinations.
    pub dst: Vec<u64>,
    /// K negatives per positive, row-major: negative j of positive i is
    /// (neg_src[i*K+j], neg_dst[i*K+j]). OGB citation2: neg_src = the
    /// positive's source; GAE random split: K = 1 and random non-edge pairs.
    pub negatives: Option<Negatives>,
}

impl EdgeSplit {
    /// Number of positive edges.
    pub fn len(&self) -> usize {
        self.src.len()
    }

    /// Whether the split holds no edge.
    pub fn is_empty(&self) -> bool {
        self.src.is_empty()
    }

    /// Negatives per positive (0 without negatives).
    pub fn k(&self) -> usize {
        self.negatives.as_ref().map_or(0, |n| n.k)
    }

    /// Whether every negative's source is its positive's (OGB protocol).
    fn neg_src_is_positive(&self) -> bool {
        self.negatives.as_ref().is_some_and(|n| {
            n.k > 0
                && n.src
                    .chunks(n.k)
                    .zip(&self.src)
                    .all(|(row, s)| row.iter().all(|x| x == s))
        })
    }
}

/// The edge splits of a store (format/edge-splits.md).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EdgeSplits {
    /// Whether the graph was imported undirected: a held-out pair {u,v}
    /// lists once and both directions are absent from the CSC.
    pub undirected: bool,
    /// None = every message-passing edge of the CSC is a training positive
    /// (each undirected pair once: the direction with src < dst, plus
    /// self-loops once).
    pub train: Option<EdgeSplit>,
    /// Validation positives (not in the CSC).
    pub valid: EdgeSplit,
    /// Test positives (not in the CSC).
    pub test: EdgeSplit,
    /// The relation of a typed store the splits are of, by its index in
    /// the schema (`--target-relation` at import, v1.9): every positive
    /// and negative joins its source type to its destination type.
    /// None: every edge of the graph is a positive.
    pub relation: Option<u32>,
}

/// The key two edges of one split collide on: the pair itself, or on an
/// undirected graph its endpoints in order.
pub fn edge_key(undirected: bool, src: u64, dst: u64) -> (u64, u64) {
    if undirected && src > dst {
        (dst, src)
    } else {
        (src, dst)
    }
}

impl EdgeSplits {
    /// The splits in payload order, `None` for an unlisted train split.
    pub fn parts(&self) -> [(&'static str, Option<&EdgeSplit>); 3] {
        [
            ("train", self.train.as_ref()),
            ("valid", Some(&self.valid)),
            ("test", Some(&self.test)),
        ]
    }

    /// The splits with every id `v` replaced by `map(v)` (a store written
    /// renumbered).
    #[doc(hidden)]
    pub fn map_ids(&self, map: impl Fn(u64) -> Result<u64>) -> Result<EdgeSplits> {
        let ids = |v: &[u64]| v.iter().map(|&x| map(x)).collect::<Result<Vec<u64>>>();
        let one = |s: &EdgeSplit| -> Result<EdgeSplit> {
            Ok(EdgeSplit {
                src: ids(&s.src)?,
                dst: ids(&s.dst)?,
                negatives: match &s.negatives {
                    None => None,
                    Some(n) => Some(Negatives {
                        k: n.k,
                        src: ids(&n.src)?,
                        dst: ids(&n.dst)?,
                    }),
                },
            })
        };
        Ok(EdgeSplits {
            undirected: self.undirected,
            relation: self.relation,
            train: self.train.as_ref().map(one).transpose()?,
            valid: one(&self.valid)?,
            test: one(&self.test)?,
        })
    }

    /// Checks the rules a payload must follow (format/edge-splits.md,
    /// "Invariants") except those that need the CSC: lengths agree, ids
    /// below `n`, no positive twice in a split or in two splits.
    pub fn validate(&self, n: u64) -> std::result::Result<(), String> {
        let mut keys: Vec<((u64, u64), usize, usize)> = Vec::new();
        for (si, (name, split)) in self.parts().into_iter().enumerate() {
            let Some(s) = split else { continue };
            if s.src.len() != s.dst.len() {
                return Err(format!(
                    "{name}: {} sources but {} destinations",
                    s.src.len(),
                    s.dst.len()
                ));
            }
            if let Some(neg) = &s.negatives {
                let want = s.len().checked_mul(neg.k);
                if neg.k == 0 || want != Some(neg.src.len()) || want != Some(neg.dst.len()) {
                    return Err(format!(
                        "{name}: negatives of K = {} need {} x K sources and destinations, got {} and {}",
                        neg.k,
                        s.len(),
                        neg.src.len(),
                        neg.dst.len()
                    ));
                }
                if let Some((j, v)) = neg
                    .src
                    .iter()
                    .chain(&neg.dst)
                    .enumerate()
                    .find(|(_, &v)| v >= n)
                {
                    let (i, k) = ((j % neg.src.len().max(1)) / neg.k, j % neg.k);
                    return Err(format!(
                        "{name}: negative {k} of positive {i} has node {v}, not below the node count {n}"
                    ));
                }
            }
            for (i, (&a, &b)) in s.src.iter().zip(&s.dst).enumerate() {
                if a >= n || b >= n {
                    return Err(format!(
                        "{name}: edge {i} ({a}, {b}) has a node not below the node count {n}"
                    ));
                }
                keys.push((edge_key(self.undirected, a, b), si, i));
            }
        }
        keys.sort_unstable();
        let repeat = keys.windows(2).find_map(|w| match w {
            [x, y] if x.0 == y.0 => Some((*x, *y)),
            _ => None,
        });
        if let Some((((a, b), s0, i0), (_, s1, i1))) = repeat {
            let name = |s: usize| SPLIT_NAMES.get(s).copied().unwrap_or("?");
            return Err(if s0 == s1 {
                format!(
                    "{}: edge ({a}, {b}) is listed twice (edges {i0} and {i1})",
                    name(s0)
                )
            } else {
                format!(
                    "edge ({a}, {b}) is in two splits ({} edge {i0}, {} edge {i1})",
                    name(s0),
                    name(s1)
                )
            });
        }
        Ok(())
    }

    /// Encodes the payload (the splits must pass [`validate`](Self::validate)).
    #[doc(hidden)]
    pub fn encode(&self) -> Vec<u8> {
        let mut b = Vec::new();
        let mut flags = 0;
        if self.undirected {
            flags |= FLAG_UNDIRECTED;
        }
        if self.train.is_some() {
            flags |= FLAG_TRAIN_LISTED;
        }
        if self.relation.is_some() {
            flags |= FLAG_RELATION;
        }
        b.extend_from_slice(&flags.to_le_bytes());
        b.extend_from_slice(&self.relation.unwrap_or(0).to_le_bytes());
        let parts = self.parts();
        for (_, s) in parts {
            let (count, k, neg_flags) = s.map_or((0, 0, 0), |s| {
                let nf = if s.neg_src_is_positive() {
                    NEG_SRC_IS_POSITIVE
                } else {
                    0
                };
                (s.len() as u64, s.k() as u32, nf)
            });
            b.extend_from_slice(&count.to_le_bytes());
            b.extend_from_slice(&k.to_le_bytes());
            b.extend_from_slice(&neg_flags.to_le_bytes());
        }
        let put = |b: &mut Vec<u8>, ids: &[u64]| {
            b.reserve(ids.len() * 8);
            for id in ids {
                b.extend_from_slice(&id.to_le_bytes());
            }
        };
        for (_, s) in parts {
            let Some(s) = s else { continue };
            put(&mut b, &s.src);
            put(&mut b, &s.dst);
            if let Some(neg) = &s.negatives {
                if !s.neg_src_is_positive() {
                    put(&mut b, &neg.src);
                }
                put(&mut b, &neg.dst);
            }
        }
        b
    }

    /// Checks the recorded relation against the store's `schema`: it
    /// names one of its relations, and every positive and negative of
    /// every split joins that relation's source type to its destination
    /// type. Without a relation there is nothing to check.
    pub fn check_relation(&self, schema: Option<&Schema>) -> std::result::Result<(), String> {
        let Some(r) = self.relation else {
            return Ok(());
        };
        let schema = schema.ok_or_else(|| {
            format!("the splits are of relation {r}, but the store is homogeneous (no schema)")
        })?;
        let rel = schema.relations.get(r as usize).ok_or_else(|| {
            format!(
                "the splits are of relation {r}, but the schema has {} relations",
                schema.relations.len()
            )
        })?;
        let name = schema.canonical(rel);
        let ids = |t: u32| schema.node_types.get(t as usize).map_or(0..0, |t| t.ids());
        let (src_ids, dst_ids) = (ids(rel.src), ids(rel.dst));
        for (split, s) in self.parts() {
            let Some(s) = s else { continue };
            let neg = s.negatives.as_ref();
            let pairs = s.src.iter().zip(&s.dst).map(|(&a, &b)| ("edge", a, b));
            let negs = neg
                .into_iter()
                .flat_map(|n| n.src.iter().zip(&n.dst).map(|(&a, &b)| ("negative", a, b)));
            for (i, (what, a, b)) in pairs.chain(negs).enumerate() {
                if !src_ids.contains(&a) || !dst_ids.contains(&b) {
                    let i = if what == "edge" { i } else { i - s.len() };
                    return Err(format!(
                        "{split}: {what} {i} ({a}, {b}) is not a pair of {name} (sources {src_ids:?}, destinations {dst_ids:?})"
                    ));
                }
            }
        }
        Ok(())
    }

    /// The version the file is written as: 1.9 when it records a
    /// relation, else 1.6 (byte for byte the 1.6 file).
    pub fn written_version(&self) -> Version {
        if self.relation.is_some() {
            V1_9
        } else {
            V1_6
        }
    }

    /// Decodes a payload of a store of `n` nodes, from a file of format
    /// `version`, and checks it ([`validate`](Self::validate)). `path` is
    /// for errors; offsets are payload offsets.
    #[doc(hidden)]
    pub fn decode(p: &[u8], n: u64, path: &Path, version: Version) -> Result<EdgeSplits> {
        let bad = |at: usize, what: String| Error::corrupt(path, at as u64, what);
        if p.len() < ARRAYS_OFFSET {
            return Err(bad(
                0,
                format!(
                    "edge-splits payload is {} bytes, shorter than its {ARRAYS_OFFSET}-byte fixed part",
                    p.len()
                ),
            ));
        }
        let flags = le_u32(p, FLAGS_OFFSET);
        let known = if version >= V1_9 {
            FLAG_UNDIRECTED | FLAG_TRAIN_LISTED | FLAG_RELATION
        } else {
            FLAG_UNDIRECTED | FLAG_TRAIN_LISTED
        };
        if flags & !known != 0 {
            return Err(bad(
                FLAGS_OFFSET,
                format!("unknown flags {flags:#x} for a v{version} file"),
            ));
        }
        let relation = (flags & FLAG_RELATION != 0).then(|| le_u32(p, RELATION_OFFSET));
        if relation.is_none() && le_u32(p, RELATION_OFFSET) != 0 {
            return Err(bad(
                RELATION_OFFSET,
                "the relation field is not zero but the relation flag is clear".into(),
            ));
        }
        let train_listed = flags & FLAG_TRAIN_LISTED != 0;
        // (count, k, neg_flags) per split and the payload length they imply.
        let mut records = [(0u64, 0u32, 0u32); 3];
        let mut expected = Some(ARRAYS_OFFSET as u64);
        for (i, rec) in records.iter_mut().enumerate() {
            let at = RECORDS_OFFSET + i * RECORD_SIZE;
            let (count, k, neg_flags) = (
                le_u64(p, at + RECORD_COUNT_OFFSET),
                le_u32(p, at + RECORD_K_OFFSET),
                le_u32(p, at + RECORD_NEG_FLAGS_OFFSET),
            );
            let name = SPLIT_NAMES.get(i).copied().unwrap_or("?");
            if i == 0 && !train_listed && (count, k, neg_flags) != (0, 0, 0) {
                return Err(bad(
                    at,
                    "the train record is not zero but the train split is not listed".into(),
                ));
            }
            if neg_flags & !NEG_SRC_IS_POSITIVE != 0 || (k == 0 && neg_flags != 0) {
                return Err(bad(
                    at + RECORD_NEG_FLAGS_OFFSET,
                    format!("{name}: invalid negative flags {neg_flags:#x} for K = {k}"),
                ));
            }
            let negs = if neg_flags & NEG_SRC_IS_POSITIVE != 0 {
                1
            } else {
                2
            };
            let words = count
                .checked_mul(u64::from(k))
                .and_then(|nk| nk.checked_mul(if k == 0 { 0 } else { negs }))
                .and_then(|w| w.checked_add(count.checked_mul(2)?));
            expected = words
                .and_then(|w| w.checked_mul(8))
                .and_then(|bytes| expected?.checked_add(bytes));
            *rec = (count, k, neg_flags);
        }
        if expected != Some(p.len() as u64) {
            return Err(bad(
                RECORDS_OFFSET,
                format!(
                    "split records {:?} (count, K, flags) do not match the payload length {}",
                    records,
                    p.len()
                ),
            ));
        }
        let mut at = ARRAYS_OFFSET;
        let mut take = |len: u64| -> Vec<u64> {
            let v = (0..len as usize)
                .map(|i| le_u64(p, at + 8 * i))
                .collect::<Vec<u64>>();
            at += 8 * len as usize;
            v
        };
        let mut splits = Vec::with_capacity(3);
        for (count, k, neg_flags) in records {
            let src = take(count);
            let dst = take(count);
            let negatives = (k > 0).then(|| {
                let k = k as usize;
                let nsrc = if neg_flags & NEG_SRC_IS_POSITIVE != 0 {
                    src.iter()
                        .flat_map(|&s| std::iter::repeat_n(s, k))
                        .collect()
                } else {
                    take(count * k as u64)
                };
                Negatives {
                    k,
                    src: nsrc,
                    dst: take(count * k as u64),
                }
            });
            splits.push(EdgeSplit {
                src,
                dst,
                negatives,
            });
        }
        let test = splits.pop().unwrap_or_default();
        let valid = splits.pop().unwrap_or_default();
        let train = splits.pop().filter(|_| train_listed);
        let out = EdgeSplits {
            undirected: flags & FLAG_UNDIRECTED != 0,
            train,
            valid,
            test,
            relation,
        };
        out.validate(n).map_err(|what| bad(ARRAYS_OFFSET, what))?;
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn offsets_match_the_spec_table() {
        assert_eq!(
            [FLAGS_OFFSET, RELATION_OFFSET, RECORDS_OFFSET, ARRAYS_OFFSET],
            [0, 4, 8, 56]
        );
        assert_eq!(
            [
                RECORD_COUNT_OFFSET,
                RECORD_K_OFFSET,
                RECORD_NEG_FLAGS_OFFSET,
                RECORD_SIZE
            ],
            [0, 8, 12, 16]
        );
        assert_eq!(
            [
                FLAG_UNDIRECTED,
                FLAG_TRAIN_LISTED,
                FLAG_RELATION,
                NEG_SRC_IS_POSITIVE
            ],
            [1, 2, 4, 1]
        );
    }

    fn split(edges: &[(u64, u64)], negs: Option<(usize, Vec<(u64, u64)>)>) -> EdgeSplit {
        EdgeSplit {
            src: edges.iter().map(|e| e.0).collect(),
            dst: edges.iter().map(|e| e.1).collect(),
            negatives: negs.map(|(k, n)| Negatives {
                k,
                src: n.iter().map(|e| e.0).collect(),
                dst: n.iter().map(|e| e.1).collect(),
            }),
        }
    }

    #[test]
    fn a_small_payload_has_the_spec_bytes() {
        // The worked example of format/edge-splits.md.
        let s = EdgeSplits {
            undirected: true,
            train: None,
            valid: split(&[(0, 1)], Some((1, vec![(2, 3)]))),
            test: split(&[(1, 2)], Some((2, vec![(1, 0), (1, 3)]))),
            relation: None,
        };
        let b = s.encode();
        assert_eq!(b.len(), 56 + 8 * (4 + 2 + 2));
        assert_eq!(le_u32(&b, 0), 1);
        assert_eq!((le_u64(&b, 24), le_u32(&b, 32), le_u32(&b, 36)), (1, 1, 0));
        assert_eq!((le_u64(&b, 40), le_u32(&b, 48), le_u32(&b, 52)), (1, 2, 1));
        let words: Vec<u64> = b[56..].chunks(8).map(|c| le_u64(c, 0)).collect();
        assert_eq!(words, [0, 1, 2, 3, 1, 2, 0, 3]);
        assert_eq!(s.written_version(), V1_6);
        assert_eq!(EdgeSplits::decode(&b, 4, Path::new("e"), V1_6).unwrap(), s);
        // v1.9: the splits of relation 2 set flag bit 2 and the relation
        // field; nothing else changes. A 1.6 reader's version refuses it.
        let r = EdgeSplits {
            relation: Some(2),
            ..s.clone()
        };
        let rb = r.encode();
        assert_eq!(r.written_version(), V1_9);
        assert_eq!((le_u32(&rb, 0), le_u32(&rb, 4)), (5, 2));
        assert_eq!(rb[8..], b[8..]);
        assert_eq!(EdgeSplits::decode(&rb, 4, Path::new("e"), V1_9).unwrap(), r);
        let err = EdgeSplits::decode(&rb, 4, Path::new("e"), V1_6)
            .unwrap_err()
            .to_string();
        assert!(err.contains("unknown flags 0x5"), "{err}");
        // A relation field without the flag is corruption.
        let mut bad = b.clone();
        bad[4] = 1;
        let err = EdgeSplits::decode(&bad, 4, Path::new("e"), V1_9)
            .unwrap_err()
            .to_string();
        assert!(err.contains("relation flag is clear"), "{err}");
    }

    fn arb_split(n: u64) -> impl Strategy<Value = EdgeSplit> {
        (
            proptest::collection::vec((0..n, 0..n), 0..12),
            0usize..3,
            any::<bool>(),
        )
            .prop_map(move |(edges, k, same_src)| {
                let negs = (k > 0).then(|| {
                    let pairs = edges
                        .iter()
                        .enumerate()
                        .flat_map(|(i, e)| {
                            (0..k).map(move |j| {
                                let d = (e.1 + 1 + j as u64) % n;
                                (
                                    if same_src {
                                        e.0
                                    } else {
                                        (i as u64 + j as u64) % n
                                    },
                                    d,
                                )
                            })
                        })
                        .collect();
                    (k, pairs)
                });
                split(&edges, negs)
            })
    }

    proptest! {
        #[test]
        fn round_trip(undirected in any::<bool>(), train in proptest::option::of(arb_split(9)),
                      valid in arb_split(9), test in arb_split(9),
                      relation in proptest::option::of(0u32..4)) {
            let s = EdgeSplits { undirected, train, valid, test, relation };
            prop_assume!(s.validate(9).is_ok());
            let v = s.written_version();
            prop_assert_eq!(EdgeSplits::decode(&s.encode(), 9, Path::new("e"), v).unwrap(), s);
        }

        #[test]
        fn truncation_is_an_error(cut in 0usize..120) {
            let s = EdgeSplits {
                undirected: false,
                train: Some(split(&[(0, 1)], None)),
                valid: split(&[(1, 2)], Some((1, vec![(3, 4)]))),
                test: split(&[(2, 3)], None),
                relation: None,
            };
            let b = s.encode();
            prop_assume!(cut < b.len());
            prop_assert!(EdgeSplits::decode(&b[..cut], 5, Path::new("e"), V1_9).is_err());
        }
    }

    #[test]
    fn overlaps_duplicates_and_range_are_refused() {
        let base = EdgeSplits {
            undirected: true,
            train: None,
            valid: split(&[(0, 1)], None),
            test: split(&[(2, 3)], None),
            relation: None,
        };
        let err = |s: &EdgeSplits, n| {
            EdgeSplits::decode(&s.encode(), n, Path::new("e"), V1_9)
                .unwrap_err()
                .to_string()
        };
        let mut s = base.clone();
        s.test = split(&[(1, 0)], None);
        assert!(
            err(&s, 4).contains("edge (0, 1) is in two splits (valid edge 0, test edge 0)"),
            "{}",
            err(&s, 4)
        );
        let mut s = base.clone();
        s.valid = split(&[(0, 1), (1, 0)], None);
        assert!(
            err(&s, 4).contains("valid: edge (0, 1) is listed twice"),
            "{}",
            err(&s, 4)
        );
        // Directed: (0, 1) and (1, 0) are two edges.
        s.undirected = false;
        assert!(EdgeSplits::decode(&s.encode(), 4, Path::new("e"), V1_9).is_ok());
        assert!(err(&base, 3).contains("test: edge 0 (2, 3) has a node not below"));
        let mut s = base.clone();
        s.valid = split(&[(0, 1)], Some((1, vec![(0, 7)])));
        assert!(
            err(&s, 4).contains("negative 0 of positive 0 has node 7"),
            "{}",
            err(&s, 4)
        );
        // A flipped flag bit is caught.
        let mut b = base.encode();
        b[0] |= 8;
        assert!(EdgeSplits::decode(&b, 4, Path::new("e"), V1_9).is_err());
    }
}
