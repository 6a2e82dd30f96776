//! The synthetic topology: R-MAT edges with homophily rewiring, built
//! into CSC within the memory budget.

use std::path::Path;
use std::time::{Duration, Instant};

use rayon::prelude::*;

use super::hetero::HeteroShape;
use super::*;
use crate::error::Result;
use crate::rng::{stream_seed, Wyrand};
use crate::store::edges::{CscOptions, CscStats, EdgeBucketer};
use crate::store::ListSink;

pub(super) const EDGE_CHUNK: u64 = 1 << 18;
// R-MAT quadrant thresholds in 1/65536: a = 0.57, a+b = 0.76, a+b+c = 0.95.
pub(super) const RMAT_A: u64 = 37_356;
pub(super) const RMAT_AB: u64 = 49_807;
pub(super) const RMAT_ABC: u64 = 62_259;

/// The quadrant (source bit, destination bit) 16 random bits choose:
/// a (0,0), b (0,1), c (1,0), d (1,1). Without branches: they would be
/// unpredictable, and this is most of a draw's time.
pub(super) fn rmat_quadrant(bits: u64) -> (u64, u64) {
    let (past_a, past_ab, past_abc) = (bits >= RMAT_A, bits >= RMAT_AB, bits >= RMAT_ABC);
    // b and d: past an odd number of thresholds.
    (u64::from(past_ab), u64::from(past_a ^ past_ab ^ past_abc))
}

pub(super) fn rmat_pair(rng: &mut Wyrand, scale: u32, n: u64) -> (u64, u64) {
    loop {
        let (mut src, mut dst) = (0u64, 0u64);
        let mut r = 0u64;
        for level in 0..scale {
            if level % 4 == 0 {
                r = rng.next_u64();
            }
            let bits = r & 0xffff;
            r >>= 16;
            let (s, d) = rmat_quadrant(bits);
            src = src << 1 | s;
            dst = dst << 1 | d;
        }
        if src < n && dst < n {
            return (src, dst);
        }
    }
}

pub(super) fn edge_chunk(
    p: &SynthParams,
    planted: &Planted,
    chunk: u64,
    total: u64,
) -> Vec<(u64, u64)> {
    let count = (total - chunk * EDGE_CHUNK).min(EDGE_CHUNK);
    let scale = 64 - (p.nodes - 1).leading_zeros();
    let mut rng = Wyrand(stream_seed(p.seed, PURPOSE_EDGES, chunk));
    let shape = p.hetero.then(|| HeteroShape::new(p.nodes, p.seed));
    (0..count)
        .map(|i| {
            let (mut src, dst) = rmat_pair(&mut rng, scale, p.nodes);
            if let Some(shape) = &shape {
                src = shape.constrain(src, dst, chunk * EDGE_CHUNK + i);
            }
            if rng.unit() < p.homophily {
                let rewired = planted.nearest_in_class(src, planted.class(dst));
                // Typed: never across a type boundary.
                if shape
                    .as_ref()
                    .is_none_or(|s| s.type_of(rewired) == s.type_of(src))
                {
                    src = rewired;
                }
            }
            (src, dst)
        })
        .collect()
}

/// Draws every edge and builds the CSC lists into `sink`.
pub(super) fn build_topology(
    p: &SynthParams,
    planted: &Planted,
    scratch: &Path,
    sink: &mut dyn ListSink,
    progress: &dyn Progress,
    phases: &mut Vec<(&'static str, Duration)>,
) -> Result<CscStats> {
    let total = p.target_edges();
    let per_node = if p.classes > SCAN_CLASSES { 12 } else { 4 }
        + crate::store::TOPOLOGY_WRITER_BYTES_PER_NODE;
    let fixed = p.nodes * per_node + (p.memory / 4).min(256 << 20);
    let sort_budget = p.memory.saturating_sub(fixed).max(16 << 20);
    let mut bucketer = EdgeBucketer::new(scratch, p.nodes, total, sort_budget)?;
    let started = Instant::now();
    progress.begin("edges", total);
    let chunks = total.div_ceil(EDGE_CHUNK);
    let window = (rayon::current_num_threads() as u64 * 2).max(2);
    let draw = |from: u64| -> Vec<Vec<(u64, u64)>> {
        let to = (from + window).min(chunks);
        (from..to)
            .into_par_iter()
            .map(|c| edge_chunk(p, planted, c, total))
            .collect()
    };
    // Spill window k while the other threads draw window k + 1.
    let mut ready = draw(0);
    let mut next = window;
    while !ready.is_empty() {
        let spill = |batch: Vec<Vec<(u64, u64)>>, bucketer: &mut EdgeBucketer| -> Result<()> {
            for edges in batch {
                for &(s, d) in &edges {
                    bucketer.push(s, d)?;
                }
                progress.advance(edges.len() as u64);
            }
            Ok(())
        };
        let (spilled, drawn) = rayon::join(
            || spill(std::mem::take(&mut ready), &mut bucketer),
            || {
                if next < chunks {
                    draw(next)
                } else {
                    Vec::new()
                }
            },
        );
        spilled?;
        ready = drawn;
        next += window;
    }
    progress.end();
    phases.push(("draw edges", started.elapsed()));

    let started = Instant::now();
    progress.begin("csc", p.nodes);
    let mut counted = CountingSink {
        inner: sink,
        progress,
        pending: 0,
    };
    let stats = bucketer.finish(
        CscOptions {
            dedup: true,
            remove_self_loops: true,
        },
        &mut counted,
    )?;
    progress.advance(counted.pending);
    progress.end();
    phases.push(("sort + write csc", started.elapsed()));
    Ok(stats)
}

pub(super) struct CountingSink<'a> {
    inner: &'a mut dyn ListSink,
    progress: &'a dyn Progress,
    pending: u64,
}

impl ListSink for CountingSink<'_> {
    fn push_list(&mut self, list: &[u64]) -> Result<()> {
        self.pending += 1;
        if self.pending == 1 << 16 {
            self.progress.advance(self.pending);
            self.pending = 0;
        }
        self.inner.push_list(list)
    }
}
