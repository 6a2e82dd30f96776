//! Synthetic features (class centroids plus noise), labels and splits.

use rayon::prelude::*;

use super::*;
use crate::error::Result;
use crate::format::pages::Dtype;
use crate::format::q8::Q8Error;
use crate::format::tables::Splits;
use crate::rng::{stream_seed, Wyrand};

pub(super) fn centroids(p: &SynthParams) -> Vec<f32> {
    let scale = 1.0 / (p.dim as f32).sqrt();
    let mut rng = Wyrand(stream_seed(p.seed, PURPOSE_CENTROIDS, 0));
    (0..u64::from(p.classes) * u64::from(p.dim))
        .map(|_| {
            if rng.next_u64() >> 63 == 0 {
                scale
            } else {
                -scale
            }
        })
        .collect()
}

pub(super) const FEATURE_BLOCK: u64 = 1 << 14;

/// Writes the encoded feature rows of nodes `first..first + count` to
/// `out`; returns their measured reconstruction error when the dtype is q8
/// (else an empty measurement).
pub(super) fn feature_block(
    p: &SynthParams,
    planted: &Planted,
    centroids: &[f32],
    first: u64,
    count: u64,
    out: &mut Vec<u8>,
) -> Q8Error {
    let dim = p.dim as usize;
    let row_bytes = p.dtype.row_bytes(dim);
    out.clear();
    out.resize(count as usize * row_bytes, 0);
    let q8 = p.dtype == Dtype::Q8;
    out.par_chunks_mut(row_bytes)
        .enumerate()
        .map_init(
            || (vec![0f32; dim], vec![0f32; dim]),
            |(values, back), (i, dst)| {
                let v = first + i as u64;
                let c = planted.class(v) as usize;
                let mut rng = Wyrand(stream_seed(p.seed, PURPOSE_FEATURES, v));
                for (x, m) in values.iter_mut().zip(&centroids[c * dim..(c + 1) * dim]) {
                    *x = m + p.feature_noise * rng.gaussian();
                }
                p.dtype.encode_f32(dim, values, dst);
                let mut e = Q8Error::default();
                if q8 {
                    crate::format::q8::decode_row(dst, back);
                    e.add_row(values, back);
                }
                e
            },
        )
        .reduce(Q8Error::default, Q8Error::merge)
}

/// Runs `write` over every block of encoded feature rows, in node order.
pub(super) fn for_each_feature_block(
    p: &SynthParams,
    planted: &Planted,
    progress: &dyn Progress,
    mut write: impl FnMut(&[u8], u64, Q8Error) -> Result<()>,
) -> Result<()> {
    let centroids = centroids(p);
    let mut buf = Vec::new();
    progress.begin("features", p.nodes);
    let mut first = 0;
    while first < p.nodes {
        let count = FEATURE_BLOCK.min(p.nodes - first);
        let measured = feature_block(p, planted, &centroids, first, count, &mut buf);
        write(&buf, count, measured)?;
        progress.advance(count);
        first += count;
    }
    progress.end();
    Ok(())
}

// ------------------------------------------------------------ labels, splits

pub(super) fn labels(p: &SynthParams, planted: &Planted) -> Vec<i32> {
    (0..p.nodes).map(|v| planted.class(v) as i32).collect()
}

/// The split each node falls in, from a hash of (seed, node).
pub fn splits(p: &SynthParams) -> Splits {
    Splits::by_fraction(p.nodes, p.split, |v| uniform_of(p.seed, PURPOSE_SPLIT, v))
}
