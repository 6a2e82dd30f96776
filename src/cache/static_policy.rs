//! The static baselines' cache contents, chosen once before an epoch: the
//! highest out-degree nodes (PaGraph) and the most often pre-sampled nodes
//! (FGNN's PreSC).

use crate::error::Result;
use crate::sample::fanouts::ResolvedFanouts;
use crate::sample::sampler::EpochSampler;
use crate::sample::source::NeighborSource;
use crate::store::Store;

/// The `k` nodes with the highest out-degree (ties by id).
pub fn top_out_degree(store: &Store, k: usize) -> Result<Vec<u64>> {
    let deg = crate::sample::neighbor_cache::out_degrees(store)?;
    Ok(top_k(
        &deg.iter().map(|&d| u64::from(d)).collect::<Vec<_>>(),
        k,
    ))
}

/// The `k` nodes sampled most often over `rounds` pre-sampling epochs
/// (epochs numbered from `u64::MAX` down, so they never coincide with a
/// training epoch), counting from sampling alone.
pub fn top_presampled(
    source: &dyn NeighborSource,
    train: &[u64],
    batch_size: usize,
    fanouts: &ResolvedFanouts,
    seed: u64,
    rounds: u64,
    k: usize,
) -> Result<Vec<u64>> {
    top_presampled_by(source.num_nodes(), rounds, k, &|epoch| {
        EpochSampler::new(source, train, batch_size, fanouts.clone(), seed, epoch)
    })
}

/// [`top_presampled`] over the epochs `sampler(epoch)` samples (node or
/// link batches) of a graph of `num_nodes` nodes.
pub fn top_presampled_by<'s>(
    num_nodes: u64,
    rounds: u64,
    k: usize,
    sampler: &dyn Fn(u64) -> Result<EpochSampler<'s>>,
) -> Result<Vec<u64>> {
    let mut counts = vec![0u64; num_nodes as usize];
    for r in 0..rounds.max(1) {
        let sampler = sampler(u64::MAX - r)?;
        for b in 0..sampler.num_batches() {
            for &id in &sampler.sample(b)?.ids {
                counts[id as usize] += 1;
            }
        }
    }
    Ok(top_k(&counts, k))
}

pub(crate) fn top_k(score: &[u64], k: usize) -> Vec<u64> {
    let mut nodes: Vec<u64> = (0..score.len() as u64).collect();
    nodes.sort_by(|&a, &b| score[b as usize].cmp(&score[a as usize]).then(a.cmp(&b)));
    nodes.truncate(k);
    nodes
}
