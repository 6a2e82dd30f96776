//! Link batches in PyG `LinkNeighborLoader`'s layout: `edge_label_index`
//! and `edge_label` (binary mode) or `src_index`, `dst_pos_index` and
//! `dst_neg_index` (triplet mode), indices into the batch's `ids`.

use ginex::{EdgeOrder, LinkLabels, NegMode, NegSource};
use numpy::ndarray::{Array1, Array2};
use numpy::{IntoPyArray, PyArray1, PyArray2};
use pyo3::prelude::*;

/// A link batch's labels in numpy's layout, made with the GIL released.
pub(crate) enum LinkOut {
    /// `edge_label_index` (2 × P(1 + K), row-major) and `edge_label`.
    Binary(Vec<i64>, Vec<f32>),
    /// `src_index`, `dst_pos_index` (P each), `dst_neg_index` (P × K).
    Triplet(Vec<i64>, Vec<i64>, Vec<i64>, usize),
}

impl LinkOut {
    /// `l` as `mode` presents it.
    pub(crate) fn of(l: &LinkLabels, mode: NegMode) -> LinkOut {
        let wide = |v: &[u32]| v.iter().map(|&x| i64::from(x)).collect::<Vec<i64>>();
        match mode {
            NegMode::Binary => {
                let (src, dst, label) = l.binary();
                let mut index = wide(&src);
                index.extend(wide(&dst));
                LinkOut::Binary(index, label)
            }
            NegMode::Triplet => {
                LinkOut::Triplet(wide(&l.src), wide(&l.dst), wide(&l.neg_dst), l.neg)
            }
        }
    }
}

/// The link fields of a `ginex.Batch` (all None for a node batch).
#[derive(Default)]
pub(crate) struct LinkArrays {
    pub edge_label_index: Option<Py<PyArray2<i64>>>,
    pub edge_label: Option<Py<PyArray1<f32>>>,
    pub src_index: Option<Py<PyArray1<i64>>>,
    pub dst_pos_index: Option<Py<PyArray1<i64>>>,
    pub dst_neg_index: Option<Py<PyArray2<i64>>>,
}

impl LinkArrays {
    /// Wraps `out`'s buffers (no copy).
    pub(crate) fn wrap(py: Python<'_>, out: Option<LinkOut>) -> PyResult<LinkArrays> {
        let shape_err = |e: numpy::ndarray::ShapeError| crate::GinexError::new_err(e.to_string());
        Ok(match out {
            None => LinkArrays::default(),
            Some(LinkOut::Binary(index, label)) => {
                let n = label.len();
                let index = Array2::from_shape_vec((2, n), index).map_err(shape_err)?;
                LinkArrays {
                    edge_label_index: Some(index.into_pyarray(py).unbind()),
                    edge_label: Some(Array1::from(label).into_pyarray(py).unbind()),
                    ..LinkArrays::default()
                }
            }
            Some(LinkOut::Triplet(src, dst, neg, k)) => {
                let p = src.len();
                let neg = Array2::from_shape_vec((p, k), neg).map_err(shape_err)?;
                LinkArrays {
                    src_index: Some(Array1::from(src).into_pyarray(py).unbind()),
                    dst_pos_index: Some(Array1::from(dst).into_pyarray(py).unbind()),
                    dst_neg_index: Some(neg.into_pyarray(py).unbind()),
                    ..LinkArrays::default()
                }
            }
        })
    }
}

/// A link loader's `negatives=` (`uniform`, `batch`, `mixed:F`) and
/// `edge_order=` (`random`, `blocked[:P]`), as `--negatives` and
/// `--edge-order` take them; refused without link batches (`link`
/// false), naming the argument.
pub(crate) fn link_local(
    link: bool,
    negatives: Option<&str>,
    edge_order: Option<&str>,
) -> PyResult<(NegSource, EdgeOrder)> {
    for (arg, given) in [("negatives", negatives), ("edge_order", edge_order)] {
        if let (Some(v), false) = (given, link) {
            return Err(crate::arg_err(
                arg,
                format!("{v:?} is for link batches (give neg=, or use ginex.LinkLoader)"),
            ));
        }
    }
    Ok((
        negatives
            .map(NegSource::parse)
            .transpose()
            .map_err(|e| crate::arg_err("negatives", e))?
            .unwrap_or_default(),
        edge_order
            .map(EdgeOrder::parse)
            .transpose()
            .map_err(|e| crate::arg_err("edge_order", e))?
            .unwrap_or_default(),
    ))
}
