//! Synthetic features (class centroids plus noise), labels and splits.

use rayon::prelude::*;

use super::*;
use crate::error::Result;
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

/// Writes the encoded feature rows of nodes `first..first + count` to `out`.
pub(super) fn feature_block(
    p: &SynthParams,
    planted: &Planted,
    centroids: &[f32],
    first: u64,
    count: u64,
    out: &mut Vec<u8>,
) {
    let dim = p.dim as usize;
    let row_bytes = dim * p.dtype.size();
    out.clear();
    out.resize(count as usize * row_bytes, 0);
    out.par_chunks_mut(row_bytes).enumerate().for_each_init(
        || vec![0f32; dim],
        |values, (i, dst)| {
            let v = first + i as u64;
            let c = planted.class(v) as usize;
            let mut rng = Wyrand(stream_seed(p.seed, PURPOSE_FEATURES, v));
            for (x, m) in values.iter_mut().zip(&centroids[c * dim..(c + 1) * dim]) {
                *x = m + p.feature_noise * rng.gaussian();
            }
            p.dtype.encode_f32(values, dst);
        },
    );
}

/// Runs `write` over every block of encoded feature rows, in node order.
pub(super) fn for_each_feature_block(
    p: &SynthParams,
    planted: &Planted,
    progress: &dyn Progress,
    mut write: impl FnMut(&[u8], u64) -> Result<()>,
) -> Result<()> {
    let centroids = centroids(p);
    let mut buf = Vec::new();
    progress.begin("features", p.nodes);
    let mut first = 0;
    while first < p.nodes {
        let count = FEATURE_BLOCK.min(p.nodes - first);
        feature_block(p, planted, &centroids, first, count, &mut buf);
        write(&buf, count)?;
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
