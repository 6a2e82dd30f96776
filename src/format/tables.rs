//! Per-node tables: labels, splits, original ids and out-degrees.
//!
//! Spec: `format/labels.md`, `format/splits.md`, `format/orig_ids.md`,
//! `format/out-degrees.md`.

use std::path::Path;

use crate::error::{Error, Result};
use crate::format::bytes::{le_i32, le_u32, le_u64};

/// The label value that means "this node has no label".
pub const MISSING_LABEL: i32 = -1;

/// Encodes labels (one `i32` per node).
pub fn encode_labels(labels: &[i32], out: &mut Vec<u8>) {
    out.reserve(labels.len() * 4);
    for l in labels {
        out.extend_from_slice(&l.to_le_bytes());
    }
}

/// Checks that a per-node table's payload holds `width` bytes per node.
fn check_per_node_len(p: &[u8], num_nodes: u64, width: u64, what: &str, path: &Path) -> Result<()> {
    if p.len() as u64 != num_nodes.saturating_mul(width) {
        return Err(Error::corrupt(
            path,
            0,
            format!(
                "{what} payload is {} bytes, expected {width} x {num_nodes}",
                p.len()
            ),
        ));
    }
    Ok(())
}

/// The one label rule: a label is [`MISSING_LABEL`] or a class in
/// `0..num_classes`. Every path that reads or writes labels applies it
/// through this function — the builder (imports), [`decode_labels`]
/// (`Store::labels`: verify, train, predict, the loaders) and the
/// exporters (`export::write_labels`) — so no path passes a label another
/// refuses. The error names the node and the range.
pub fn check_label(node: u64, label: i32, num_classes: u32) -> std::result::Result<(), String> {
    if label == MISSING_LABEL || (0..i64::from(num_classes)).contains(&i64::from(label)) {
        Ok(())
    } else {
        Err(format!(
            "label of node {node} is {label}; expected -1 (missing) or 0..{num_classes}"
        ))
    }
}

/// Decodes a labels payload and checks every value ([`check_label`]).
pub fn decode_labels(p: &[u8], num_nodes: u64, num_classes: u32, path: &Path) -> Result<Vec<i32>> {
    check_per_node_len(p, num_nodes, 4, "labels", path)?;
    let labels: Vec<i32> = p.chunks_exact(4).map(|c| le_i32(c, 0)).collect();
    for (i, &l) in labels.iter().enumerate() {
        check_label(i as u64, l, num_classes)
            .map_err(|why| Error::corrupt(path, i as u64 * 4, why))?;
    }
    Ok(labels)
}

/// Train, validation and test node lists, each sorted ascending.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Splits {
    /// Training nodes.
    pub train: Vec<u64>,
    /// Validation nodes.
    pub valid: Vec<u64>,
    /// Test nodes.
    pub test: Vec<u64>,
}

/// Offset of the train count (`u64`) in the splits payload.
pub const TRAIN_COUNT_OFFSET: usize = 0;
/// Offset of the validation count (`u64`).
pub const VALID_COUNT_OFFSET: usize = TRAIN_COUNT_OFFSET + 8;
/// Offset of the test count (`u64`).
pub const TEST_COUNT_OFFSET: usize = VALID_COUNT_OFFSET + 8;
/// Offset of the first id.
pub const SPLIT_IDS_OFFSET: usize = TEST_COUNT_OFFSET + 8;

impl Splits {
    /// The splits from `[train, valid, test]`.
    pub fn from_lists([train, valid, test]: [Vec<u64>; 3]) -> Self {
        Splits { train, valid, test }
    }

    /// A random split of `0..n`: node `v` goes to train when `uniform(v)`
    /// (in [0, 1)) is below `train`, else to valid below `train + valid`,
    /// else to test below `train + valid + test`, else to none.
    #[doc(hidden)]
    pub fn by_fraction(
        n: u64,
        [train, valid, test]: [f64; 3],
        uniform: impl Fn(u64) -> f64,
    ) -> Self {
        let mut s = Splits::default();
        for v in 0..n {
            let u = uniform(v);
            if u < train {
                s.train.push(v);
            } else if u < train + valid {
                s.valid.push(v);
            } else if u < train + valid + test {
                s.test.push(v);
            }
        }
        s
    }

    /// Encodes the payload.
    #[doc(hidden)]
    pub fn encode(&self, out: &mut Vec<u8>) {
        for list in [&self.train, &self.valid, &self.test] {
            out.extend_from_slice(&(list.len() as u64).to_le_bytes());
        }
        for id in self.train.iter().chain(&self.valid).chain(&self.test) {
            out.extend_from_slice(&id.to_le_bytes());
        }
    }

    /// Decodes a payload and checks ids are in range, each list strictly
    /// increasing, and the lists disjoint.
    #[doc(hidden)]
    pub fn decode(p: &[u8], num_nodes: u64, path: &Path) -> Result<Splits> {
        if p.len() < SPLIT_IDS_OFFSET {
            return Err(Error::corrupt(
                path,
                0,
                "splits payload is shorter than its counts",
            ));
        }
        let counts = [
            le_u64(p, TRAIN_COUNT_OFFSET),
            le_u64(p, VALID_COUNT_OFFSET),
            le_u64(p, TEST_COUNT_OFFSET),
        ];
        let total = counts.iter().try_fold(0u64, |a, &c| a.checked_add(c));
        let expected_len = total
            .and_then(|t| t.checked_mul(8))
            .and_then(|b| b.checked_add(SPLIT_IDS_OFFSET as u64));
        if expected_len != Some(p.len() as u64) {
            return Err(Error::corrupt(
                path,
                0,
                format!(
                    "split counts {counts:?} do not match the payload length {}",
                    p.len()
                ),
            ));
        }
        let mut at = SPLIT_IDS_OFFSET;
        let mut lists = Vec::with_capacity(3);
        for (name, count) in ["train", "valid", "test"].into_iter().zip(counts) {
            let mut list = Vec::with_capacity(count as usize);
            for i in 0..count {
                let id = le_u64(p, at);
                if id >= num_nodes || list.last().is_some_and(|&prev| prev >= id) {
                    return Err(Error::corrupt(
                        path,
                        at as u64,
                        format!("{name} id #{i} is {id}: ids must be below {num_nodes} and strictly increasing"),
                    ));
                }
                list.push(id);
                at += 8;
            }
            lists.push(list);
        }
        let test = lists.pop().unwrap_or_default();
        let valid = lists.pop().unwrap_or_default();
        let train = lists.pop().unwrap_or_default();
        let splits = Splits { train, valid, test };
        if let Some(id) = splits.first_overlap() {
            return Err(Error::corrupt(
                path,
                SPLIT_IDS_OFFSET as u64,
                format!("node {id} is in more than one split"),
            ));
        }
        Ok(splits)
    }

    /// A node that appears in two lists, if any (lists must be sorted).
    #[doc(hidden)]
    pub fn first_overlap(&self) -> Option<u64> {
        let lists = [&self.train, &self.valid, &self.test];
        for (i, a) in lists.iter().enumerate() {
            for b in lists.iter().skip(i + 1) {
                let (mut a, mut b) = (a.iter().peekable(), b.iter().peekable());
                while let (Some(&&x), Some(&&y)) = (a.peek(), b.peek()) {
                    match x.cmp(&y) {
                        std::cmp::Ordering::Less => _ = a.next(),
                        std::cmp::Ordering::Greater => _ = b.next(),
                        std::cmp::Ordering::Equal => return Some(x),
                    }
                }
            }
        }
        None
    }
}

/// Encodes original ids (one `u64` per node).
pub fn encode_original_ids(ids: &[u64], out: &mut Vec<u8>) {
    for id in ids {
        out.extend_from_slice(&id.to_le_bytes());
    }
}

/// Decodes an original-id payload.
pub fn decode_original_ids(p: &[u8], num_nodes: u64, path: &Path) -> Result<Vec<u64>> {
    check_per_node_len(p, num_nodes, 8, "original-id", path)?;
    Ok(p.chunks_exact(8).map(|c| le_u64(c, 0)).collect())
}

/// Encodes out-degrees (one `u32` per node).
pub fn encode_out_degrees(degrees: &[u32], out: &mut Vec<u8>) {
    out.reserve(degrees.len() * 4);
    for d in degrees {
        out.extend_from_slice(&d.to_le_bytes());
    }
}

/// Decodes an out-degree payload.
pub fn decode_out_degrees(p: &[u8], num_nodes: u64, path: &Path) -> Result<Vec<u32>> {
    check_per_node_len(p, num_nodes, 4, "out-degree", path)?;
    Ok(p.chunks_exact(4).map(|c| le_u32(c, 0)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn offsets_match_the_spec_table() {
        assert_eq!(
            [
                TRAIN_COUNT_OFFSET,
                VALID_COUNT_OFFSET,
                TEST_COUNT_OFFSET,
                SPLIT_IDS_OFFSET
            ],
            [0, 8, 16, 24]
        );
    }

    proptest! {
        #[test]
        fn splits_round_trip(assign in proptest::collection::vec(0u8..4, 0..200)) {
            let mut s = Splits::default();
            for (id, a) in assign.iter().enumerate() {
                match a { 0 => s.train.push(id as u64), 1 => s.valid.push(id as u64), 2 => s.test.push(id as u64), _ => {} }
            }
            let mut b = Vec::new();
            s.encode(&mut b);
            prop_assert_eq!(Splits::decode(&b, assign.len() as u64, Path::new("splits")).unwrap(), s);
        }

        #[test]
        fn labels_round_trip(labels in proptest::collection::vec(-1i32..10, 0..100)) {
            let mut b = Vec::new();
            encode_labels(&labels, &mut b);
            prop_assert_eq!(decode_labels(&b, labels.len() as u64, 10, Path::new("labels")).unwrap(), labels);
        }

        #[test]
        fn original_ids_round_trip(ids in proptest::collection::vec(any::<u64>(), 0..100)) {
            let mut b = Vec::new();
            encode_original_ids(&ids, &mut b);
            prop_assert_eq!(decode_original_ids(&b, ids.len() as u64, Path::new("o")).unwrap(), ids);
        }

        #[test]
        fn out_degrees_round_trip(degrees in proptest::collection::vec(any::<u32>(), 0..100)) {
            let mut b = Vec::new();
            encode_out_degrees(&degrees, &mut b);
            prop_assert_eq!(b.len(), 4 * degrees.len());
            prop_assert_eq!(decode_out_degrees(&b, degrees.len() as u64, Path::new("d")).unwrap(), degrees);
        }
    }

    #[test]
    fn overlapping_or_out_of_range_splits_are_rejected() {
        let mut b = Vec::new();
        Splits {
            train: vec![1, 2],
            valid: vec![2],
            test: vec![],
        }
        .encode(&mut b);
        assert!(Splits::decode(&b, 5, Path::new("s"))
            .unwrap_err()
            .to_string()
            .contains("node 2"));
        let mut b = Vec::new();
        Splits {
            train: vec![7],
            valid: vec![],
            test: vec![],
        }
        .encode(&mut b);
        assert!(Splits::decode(&b, 5, Path::new("s")).is_err());
        let mut b = Vec::new();
        encode_labels(&[0, 3], &mut b);
        assert!(decode_labels(&b, 2, 3, Path::new("l")).is_err());
    }

    #[test]
    fn an_out_degree_table_of_the_wrong_length_names_its_file() {
        let mut b = Vec::new();
        encode_out_degrees(&[1, 2, 3], &mut b);
        let err = decode_out_degrees(&b, 4, Path::new("STORE/out_degrees"))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("STORE/out_degrees") && err.contains("12 bytes, expected 4 x 4"),
            "{err}"
        );
    }
}
