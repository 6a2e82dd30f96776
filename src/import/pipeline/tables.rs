//! Per-node tables: labels ([`labels_from_npy`], [`label_value`]), split
//! and original-id files ([`for_each_id`], [`read_ids`]), random splits,
//! and the [`Build`] steps that store them.

use std::path::Path;

use crate::error::Result;
use crate::format::tables::Splits;
use crate::import::npy::{NpyFile, NpyType};
use crate::import::remap::IdMap;
use crate::import::text::IdLines;
use crate::rng::stream_seed;

use super::{bad, node_id, Build};

/// A label from a float (`NaN` → -1) or integer value; `at` is 1-based.
pub fn label_value(x: f64, int: Option<i128>, path: &Path, at: u64) -> Result<i32> {
    let v = match int {
        Some(i) => i,
        None if x.is_nan() => return Ok(-1),
        None if x.fract() != 0.0 || !x.is_finite() => {
            return Err(bad(
                path,
                Some(at),
                format!(
                    "label {x} is not a whole number; labels are class ids (NaN or -1 = missing)"
                ),
            ))
        }
        None => x as i128,
    };
    if v < -1 || v > i128::from(i32::MAX) {
        return Err(bad(
            path,
            Some(at),
            format!(
                "label {v} is out of range; labels are class ids 0..2^31 (NaN or -1 = missing)"
            ),
        ));
    }
    Ok(v as i32)
}

/// Appends the labels of an array of shape (K,) or (K, 1).
pub fn labels_from_npy(f: &NpyFile, out: &mut Vec<i32>) -> Result<()> {
    let shape_ok = matches!(f.header.shape.as_slice(), [_] | [_, 1]);
    if !shape_ok {
        return Err(bad(
            &f.path,
            None,
            format!(
                "labels have shape {:?}; expected (N,) or (N, 1)",
                f.header.shape
            ),
        ));
    }
    let k = f.len();
    let (mut raw, mut ints, mut floats) = (Vec::new(), Vec::new(), Vec::new());
    let is_float = matches!(f.header.dtype, NpyType::Float(_));
    for first in (0..k).step_by(1 << 20) {
        let c = (1u64 << 20).min(k - first) as usize;
        if is_float {
            f.read_f64(first, c, &mut raw, &mut floats)?;
            for (i, x) in floats.iter().enumerate() {
                out.push(label_value(*x, None, &f.path, first + i as u64 + 1)?);
            }
        } else {
            f.read_ints(first, c, &mut raw, &mut ints)?;
            for (i, v) in ints.iter().enumerate() {
                out.push(label_value(0.0, Some(*v), &f.path, first + i as u64 + 1)?);
            }
        }
    }
    Ok(())
}

/// Calls `visit(value, position)` for every integer of an id file: `.npy`
/// of shape (K,)/(K,1) (position = 1-based element), or text with one id per
/// line, `.gz` allowed (position = line). `words` name the file's contents
/// in errors: ("id array has", "K", "ids").
pub fn for_each_id(
    path: &Path,
    words: (&str, &str, &str),
    visit: &mut dyn FnMut(i128, u64) -> Result<()>,
) -> Result<()> {
    let (has, len, plural) = words;
    if path.extension().is_some_and(|e| e == "npy") {
        let f = NpyFile::open(path)?;
        if f.header.shape.len() > 2 || f.header.shape.get(1).is_some_and(|&c| c != 1) {
            return Err(bad(
                path,
                None,
                format!(
                    "{has} shape {:?}; expected ({len},) or ({len}, 1)",
                    f.header.shape
                ),
            ));
        }
        let (mut raw, mut vals) = (Vec::new(), Vec::new());
        let k = f.len();
        for first in (0..k).step_by(1 << 20) {
            let c = (1u64 << 20).min(k - first) as usize;
            if !f.read_ints(first, c, &mut raw, &mut vals)? {
                return Err(bad(
                    path,
                    None,
                    format!("{plural} must be integers, the array holds floats"),
                ));
            }
            for (i, v) in vals.iter().enumerate() {
                visit(*v, first + i as u64 + 1)?;
            }
        }
    } else {
        let mut lines = IdLines::open(path)?;
        while let Some(v) = lines.next_id()? {
            visit(v, lines.line())?;
        }
    }
    Ok(())
}

/// Reads a list of node ids (`.npy` of shape (K,)/(K,1), or text with one
/// id per line, `.gz` allowed), checks them against `n` (or maps them),
/// sorts them and refuses repeats.
pub fn read_ids(path: &Path, n: u64, map: Option<&IdMap>) -> Result<Vec<u64>> {
    read_ids_by(path, &|v, at| node_id(v, n, map, path, at, "id"))
}

/// The ids of an id file (one per line, or `.npy`), each the store id
/// `id_of` gives the value read at its position; sorted, repeats refused.
pub fn read_ids_by(path: &Path, id_of: &dyn Fn(i128, u64) -> Result<u64>) -> Result<Vec<u64>> {
    let mut ids = Vec::new();
    for_each_id(path, ("id array has", "K", "ids"), &mut |v, at| {
        ids.push(id_of(v, at)?);
        Ok(())
    })?;
    let before = ids.len();
    ids.sort_unstable();
    ids.dedup();
    if ids.len() != before {
        return Err(bad(
            path,
            None,
            format!("{} ids appear more than once", before - ids.len()),
        ));
    }
    Ok(ids)
}

/// A seeded random split of `0..n` with the given fractions.
pub fn random_split(n: u64, fractions: [f64; 3], seed: u64) -> Splits {
    Splits::by_fraction(n, fractions, |v| {
        (stream_seed(seed, 31, v) >> 11) as f64 / (1u64 << 53) as f64
    })
}

impl Build {
    /// Writes labels (one per node); `num_classes` defaults to max + 1.
    pub fn labels(
        &mut self,
        labels: &[i32],
        num_classes: Option<u32>,
        source: &Path,
    ) -> Result<()> {
        if labels.len() as u64 != self.n {
            return Err(bad(
                source,
                None,
                format!(
                    "{} labels for {} nodes; expected ({},) or ({}, 1)",
                    labels.len(),
                    self.n,
                    self.n,
                    self.n
                ),
            ));
        }
        let classes = match num_classes {
            Some(c) => c,
            None => {
                // The largest label + 1, which must itself fit the store's
                // class count (at most 2^31 - 1 classes).
                let (pos, max) = labels
                    .iter()
                    .enumerate()
                    .max_by_key(|(i, l)| (**l, std::cmp::Reverse(*i)))
                    .map_or((0, -1), |(i, l)| (i, *l));
                let classes = (i64::from(max) + 1).max(1);
                if classes > i64::from(i32::MAX) {
                    return Err(bad(
                        source,
                        Some(pos as u64 + 1),
                        format!(
                            "label {max} of node {pos} would make {classes} classes (the largest label + 1); at most {} classes are supported, so class ids must be below {}",
                            i32::MAX,
                            i32::MAX
                        ),
                    ));
                }
                classes as u32
            }
        };
        if let Some(pos) = labels
            .iter()
            .position(|&l| i64::from(l) >= i64::from(classes))
        {
            let l = labels.get(pos).copied().unwrap_or_default();
            return Err(bad(
                source,
                Some(pos as u64 + 1),
                format!("label {l} of node {pos} is not below --num-classes {classes}"),
            ));
        }
        self.builder.write_labels(labels, classes)?;
        Ok(())
    }

    /// Writes the splits (the builder checks order, range and overlap;
    /// importers check overlap first to name their sources).
    pub fn splits(&mut self, s: &Splits) -> Result<()> {
        self.builder.write_splits(s)
    }

    /// Writes the original id of every node.
    pub fn original_ids(&mut self, ids: &[u64]) -> Result<()> {
        self.builder.write_original_ids(ids)
    }
}
