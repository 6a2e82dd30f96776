//! The sampler an epoch uses, built in one place for the epoch, its
//! memory plan's probe and the training memory probe: node or link
//! batches over the store's neighbour lists, and the pick of the
//! neighbor cache the run builds for it.

use crate::error::{Error, Result};
use crate::exec::config::{CacheConfig, EpochConfig};
use crate::sample::link::{LinkEpoch, LinkPositives};
use crate::sample::neighbor_cache_pick::{Pick, ReadsModel};
use crate::sample::sampler::EpochSampler;
use crate::store::Store;

/// The training positives of a link epoch on `store`, and whether the
/// graph is undirected: the store's explicit train split when its edge
/// splits have one, else every edge of `source`'s CSC (each pair once when
/// undirected); undirected when `undirected` says so or the store's edge
/// splits do.
pub fn link_positives(
    store: &Store,
    source: &dyn crate::sample::source::NeighborSource,
    undirected: bool,
) -> Result<(std::sync::Arc<LinkPositives>, bool)> {
    let splits = store.edge_splits()?;
    let undirected = undirected || splits.as_ref().is_some_and(|s| s.undirected);
    let positives = match splits.and_then(|s| s.train) {
        Some(train) => LinkPositives {
            src: train.src,
            dst: train.dst,
            neg_range: None,
        },
        None => LinkPositives::from_csc(source, undirected, store.num_edges())?,
    };
    Ok((std::sync::Arc::new(positives), undirected))
}

/// The link epoch of `config` (None: node batches): its positives (the
/// config's, else [`link_positives`]), negatives drawn out of every node.
pub(crate) fn link_epoch(
    source: &dyn crate::sample::source::NeighborSource,
    store: &Store,
    config: &EpochConfig,
) -> Result<Option<LinkEpoch>> {
    let Some(mut task) = config.link else {
        return Ok(None);
    };
    let positives = match &config.link_positives {
        Some(p) => p.clone(),
        None => {
            let (p, undirected) = link_positives(store, source, task.undirected)?;
            task.undirected = undirected;
            p
        }
    };
    if positives.is_empty() {
        return Err(Error::invalid_argument(format!(
            "{} has no edges to train link prediction on",
            store.dir().display()
        )));
    }
    let neg_range = positives.neg_range.clone().unwrap_or(0..store.num_nodes());
    Ok(Some(LinkEpoch {
        positives,
        task,
        neg_range,
    }))
}

/// The pick of the run's neighbor cache: [`Pick::Reads`] over the run's
/// seeds (`train`, or the given seed nodes), fanouts and read unit (the
/// lockstep round, or the superbatch), where the fanouts are one count
/// per hop for all relations and the batches are node batches; otherwise
/// [`Pick::Degree`].
pub(crate) fn neighbor_cache_pick<'a>(
    store: &Store,
    config: &'a EpochConfig,
    train: &'a [u64],
) -> Result<Pick<'a>> {
    let uniform = config
        .fanouts
        .resolve(store.schema())?
        .uniform()
        .map(<[i64]>::to_vec);
    let (Some(fanouts), None) = (uniform, &config.link) else {
        return Ok(Pick::Degree);
    };
    let seeds: &[u64] = match &config.seed_nodes {
        Some(order) => order,
        None => train,
    };
    let per_read = match &config.cache {
        CacheConfig::Ginex(g) if g.lockstep == crate::inspect::lockstep::Lockstep::Superbatch => {
            g.superbatch
        }
        CacheConfig::Ginex(_) => crate::inspect::superbatch::sampling_round(config.workers),
        _ => 1,
    };
    let n = seeds.len() as u64;
    Ok(Pick::Reads(ReadsModel::new(
        fanouts,
        Some(seeds),
        n,
        config.batch_size as u64,
        per_read,
    )))
}

/// The sampler of `config`'s epoch over `source`, its fanouts bound to
/// `store`'s schema: link batches over `link` when given, else node
/// batches.
pub(crate) fn make_sampler<'s>(
    source: &'s dyn crate::sample::source::NeighborSource,
    store: &Store,
    config: &EpochConfig,
    train: &[u64],
    link: Option<&LinkEpoch>,
) -> Result<EpochSampler<'s>> {
    let fanouts = config
        .fanouts
        .resolve(store.schema())?
        .with_sampler(config.sampler)?;
    if let Some(link) = link {
        return EpochSampler::link(
            source,
            link.clone(),
            config.batch_size,
            fanouts,
            config.seed,
            config.epoch,
        );
    }
    match &config.seed_nodes {
        Some(order) => EpochSampler::with_order(
            source,
            order.clone(),
            config.batch_size,
            fanouts,
            config.seed,
            config.epoch,
        ),
        None => EpochSampler::new(
            source,
            train,
            config.batch_size,
            fanouts,
            config.seed,
            config.epoch,
        ),
    }
}
