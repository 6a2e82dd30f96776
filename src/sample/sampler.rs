//! GraphSAGE-style uniform k-hop neighbor sampling without replacement
//! (Ginex §2.1), reproducible from (run seed, epoch, batch index).
//!
//! A batch starts from its seeds. Hop `l` samples up to `fanouts[l]`
//! in-neighbors (all of them for `-1`) of *every* node collected so far
//! (as PyG's `NeighborSampler`), appending nodes not seen before to `ids`.
//! So `ids` lists each sampled node once, seeds first, and each hop's
//! targets are a prefix of `ids`.
//!
//! With per-relation fanouts (typed stores, [`crate::sample::fanouts`]) a
//! target draws up to each relation's count out of that relation's run of
//! its in-list, relations in schema order from the same random stream;
//! the drawn neighbours keep their in-list order.
//!
//! **Hop order in [`SampledBatch::hops`]: input layer first.** `hops[0]` is
//! the last hop sampled (its sources are all of `ids`); `hops.last()` has
//! the seeds as targets. A model applies its layers in that order.
//!
//! Each target's draw uses its own random stream, keyed by (batch seed, hop,
//! target position), and draws are merged in target order, so the batch is
//! the same whatever order a neighbor source delivers lists in (cache hits
//! first, say) and on any thread count.
//!
//! With a LABOR sampler ([`crate::sample::labor`], chosen with
//! [`ResolvedFanouts::with_sampler`]) a hop first collects every target's
//! candidate list (per relation run on a typed store), then draws the
//! whole batch's hop at once from one variate per candidate vertex; the
//! kept edges carry importance weights ([`Hop::weights`]).

use rayon::prelude::*;

use rustc_hash::FxHashMap;

use crate::error::{Error, Result};
use crate::format::runtime::{
    decode_payload, encode_payload, AdjPayload, HopPayload, Seq, WeightedAdjPayload,
    MAX_RUN_FANOUTS,
};
use crate::rng::{stream_seed, Wyrand};
use crate::sample::fanouts::{Fanouts, ResolvedFanouts};
use crate::sample::labor::{labor_draw, LaborKey, LaborScratch};
use crate::sample::labor_solve::Group;
use crate::sample::link::{Excluded, LinkEpoch};
pub use crate::sample::seeds::{batch_seed, epoch_order};
use crate::sample::source::NeighborSource;

/// One sampled hop: a bipartite graph in local indices (into `ids`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Hop {
    /// Targets: `ids[..num_dst]`.
    pub num_dst: usize,
    /// Sources: `ids[..num_src]`.
    pub num_src: usize,
    /// Source (neighbor) of each edge.
    pub src: Vec<u32>,
    /// Target of each edge.
    pub dst: Vec<u32>,
    /// Each edge's importance weight, each target's summing to 1 (LABOR,
    /// [`crate::sample::labor`]); empty: unweighted (neighbor sampling).
    pub weights: Vec<f32>,
}

/// A sampled batch.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SampledBatch {
    /// Every sampled node once, seeds first: the gather order.
    pub ids: Vec<u64>,
    /// Number of seeds (`ids[..num_seeds]`).
    pub num_seeds: usize,
    /// Hops, input layer first (see the module docs).
    pub hops: Vec<Hop>,
    /// A link batch's positive and negative edges over its seeds; None
    /// for a node batch.
    pub link: Option<crate::sample::link::LinkLabels>,
}

impl SampledBatch {
    /// Edges over all hops.
    pub fn num_edges(&self) -> usize {
        self.hops.iter().map(|h| h.src.len()).sum()
    }
}

/// Parses `10,10,10` (`-1` = all neighbors): one count per hop for all
/// relations. [`Fanouts::parse`] also takes per-relation fanouts.
pub fn parse_fanouts(s: &str) -> Result<Vec<i64>> {
    match Fanouts::parse(s)? {
        Fanouts::Uniform(f) => Ok(f),
        Fanouts::PerRelation(_) => Err(Error::invalid_argument(format!(
            "--fanouts {s:?}: expected one count per hop such as 10,10,10 (-1 = all)"
        ))),
    }
}

/// Samples the batch of `seeds` with per-hop `fanouts` (one count per hop
/// for all relations); `batch_seed` keys every random choice (use
/// [`batch_seed`]).
pub fn sample_batch(
    source: &dyn NeighborSource,
    seeds: &[u64],
    fanouts: &[i64],
    batch_seed: u64,
) -> Result<SampledBatch> {
    sample_batch_with(source, seeds, &ResolvedFanouts::from(fanouts), batch_seed)
}

/// [`sample_batch`] with fanouts bound to the store
/// ([`Fanouts::resolve`]): one list for all relations, or per relation.
pub fn sample_batch_with(
    source: &dyn NeighborSource,
    seeds: &[u64],
    fanouts: &ResolvedFanouts,
    batch_seed: u64,
) -> Result<SampledBatch> {
    let mut one = sample_in_lockstep(source, &[(seeds, batch_seed)], fanouts, 1)?;
    one.pop()
        .ok_or_else(|| Error::internal("lockstep sampling of one batch returned none"))
}

/// Samples several batches hop by hop together: each batch exactly as
/// [`sample_batch_with`] samples it alone (the draws are keyed by batch
/// seed, hop and target position, and merged in target order), but each
/// hop asks `source` for the lists of all the batches' targets at once,
/// in node order, each list once. A store-backed source then reads a
/// node's list once for every batch that needs it, and reads neighbouring
/// segments together (`docs/lab/performance-journal.md`, "Lockstep sampling").
///
/// `batches`: (seeds, batch seed) of each batch. `chunks` splits each
/// hop's node-ordered requests into that many runs, drawn in parallel on
/// the current rayon pool (1: on this thread); the batches do not depend
/// on it.
pub fn sample_in_lockstep(
    source: &dyn NeighborSource,
    batches: &[(&[u64], u64)],
    fanouts: &ResolvedFanouts,
    chunks: usize,
) -> Result<Vec<SampledBatch>> {
    sample_in_lockstep_excluding(source, batches, &[], fanouts, chunks)
}

/// [`sample_in_lockstep`] with batch `b`'s draws made from its targets'
/// in-lists without the edges `excluded[b]` lists (a link batch's own
/// edges, [`crate::sample::link`]); batches past `excluded.len()` exclude
/// nothing.
pub fn sample_in_lockstep_excluding(
    source: &dyn NeighborSource,
    batches: &[(&[u64], u64)],
    excluded: &[&Excluded],
    fanouts: &ResolvedFanouts,
    chunks: usize,
) -> Result<Vec<SampledBatch>> {
    let keys: Vec<LaborKey> = batches
        .iter()
        .map(|&(_, seed)| LaborKey::of_seed(seed))
        .collect();
    sample_keyed(source, batches, &keys, excluded, fanouts, chunks)
}

/// [`sample_in_lockstep_excluding`] with each batch's LABOR variates keyed
/// by `labor_keys` (one per batch;
/// [`crate::sample::labor::SamplerConfig::batch_key`]).
pub fn sample_keyed(
    source: &dyn NeighborSource,
    batches: &[(&[u64], u64)],
    labor_keys: &[LaborKey],
    excluded: &[&Excluded],
    fanouts: &ResolvedFanouts,
    chunks: usize,
) -> Result<Vec<SampledBatch>> {
    if labor_keys.len() != batches.len() {
        return Err(Error::internal("one LABOR key per batch"));
    }
    let n = source.num_nodes();
    let mut growing = batches
        .iter()
        .map(|&(seeds, _)| Growing::new(seeds, n))
        .collect::<Result<Vec<_>>>()?;
    let batch_seeds: Vec<u64> = batches.iter().map(|&(_, seed)| seed).collect();
    // LABOR's buffers, reused across the batches and hops one worker
    // draws (a parallel round keeps one per rayon job).
    let mut scratch = LaborScratch::default();
    for h in 0..fanouts.num_hops() {
        let requests = HopRequests::of(&growing)?;
        let drawn = requests.draw(source, fanouts, h, (&batch_seeds, excluded), chunks)?;
        let mut spans: Vec<Vec<Span>> = growing
            .iter()
            .map(|g| vec![Span::default(); g.ids.len()])
            .collect();
        for (c, part) in drawn.iter().enumerate() {
            for (r, &(b, i, start, len)) in part.spans.iter().enumerate() {
                spans[b as usize][i as usize] = Span {
                    chunk: c,
                    start,
                    len,
                    groups: part.group_spans.get(r).copied().unwrap_or_default(),
                };
            }
        }
        let sampler = fanouts.sampler();
        let hop_key = if sampler.layer_dependency {
            0
        } else {
            h as u64 + 1
        };
        let merge =
            |scratch: &mut LaborScratch,
             ((g, spans), key): ((&mut Growing, Vec<Span>), &LaborKey)| {
                let Some(iterations) = sampler.sampler.iterations() else {
                    return g.push_hop(false, |i| {
                        let s = spans[i];
                        (&drawn[s.chunk].flat[s.start..s.start + s.len], &[][..])
                    });
                };
                labor_of(&drawn, &spans, iterations, key, hop_key, scratch)?;
                g.push_hop(true, |i| scratch.draw.of(i))
            };
        if chunks > 1 {
            growing
                .par_iter_mut()
                .zip(spans)
                .zip(labor_keys)
                .map_init(LaborScratch::default, merge)
                .collect::<Result<()>>()?;
        } else {
            growing
                .iter_mut()
                .zip(spans)
                .zip(labor_keys)
                .try_for_each(|item| merge(&mut scratch, item))?;
        }
    }
    Ok(growing.into_iter().map(Growing::finish).collect())
}

/// A batch while it is sampled.
struct Growing {
    /// Local index of every node sampled so far.
    local: FxHashMap<u64, u32>,
    /// Every node sampled so far, seeds first.
    ids: Vec<u64>,
    num_seeds: usize,
    /// Hops sampled so far, seeds' hop first.
    hops: Vec<Hop>,
}

impl Growing {
    fn new(seeds: &[u64], n: u64) -> Result<Self> {
        let mut local: FxHashMap<u64, u32> = FxHashMap::default();
        let mut ids: Vec<u64> = Vec::with_capacity(seeds.len() * 4);
        for &s in seeds {
            if s >= n {
                return Err(Error::OutOfRange(format!(
                    "seed {s} is not below the node count {n}"
                )));
            }
            if local.insert(s, ids.len() as u32).is_none() {
                ids.push(s);
            } else {
                return Err(Error::invalid_argument(format!(
                    "seed {s} appears twice in the batch"
                )));
            }
        }
        Ok(Growing {
            local,
            num_seeds: ids.len(),
            ids,
            hops: Vec::new(),
        })
    }

    /// Adds a hop whose targets are every node so far; `drawn(i)` is
    /// target `i`'s draw and, when `weighted`, its edges' weights. New
    /// nodes are numbered in target order.
    fn push_hop<'d>(
        &mut self,
        weighted: bool,
        drawn: impl Fn(usize) -> (&'d [u64], &'d [f32]),
    ) -> Result<()> {
        let num_dst = self.ids.len();
        let mut hop = Hop {
            num_dst,
            ..Hop::default()
        };
        for i in 0..num_dst {
            let (ids, weights) = drawn(i);
            if weighted {
                hop.weights.extend_from_slice(weights);
            }
            for &u in ids {
                let next = self.ids.len() as u32;
                let l = *self.local.entry(u).or_insert(next);
                if l == next {
                    self.ids.push(u);
                }
                hop.src.push(l);
                hop.dst.push(i as u32);
            }
        }
        if self.ids.len() > u32::MAX as usize {
            return Err(Error::invalid_argument(
                "a batch sampled more than 2^32 nodes; lower the batch size or fanouts",
            ));
        }
        hop.num_src = self.ids.len();
        self.hops.push(hop);
        Ok(())
    }

    fn finish(mut self) -> SampledBatch {
        self.hops.reverse();
        SampledBatch {
            ids: self.ids,
            num_seeds: self.num_seeds,
            hops: self.hops,
            link: None,
        }
    }
}

/// Where a target's draw lies: `flat[start..start + len]` of a chunk
/// (with LABOR: its candidates, in `groups` of the chunk's groups).
#[derive(Debug, Clone, Copy, Default)]
struct Span {
    chunk: usize,
    start: usize,
    len: usize,
    groups: (usize, usize),
}

/// One batch's LABOR draw of a hop from its targets' candidate groups.
fn labor_of(
    drawn: &[ChunkDraws],
    spans: &[Span],
    iterations: usize,
    key: &LaborKey,
    hop_key: u64,
    scratch: &mut LaborScratch,
) -> Result<()> {
    let mut groups = Vec::new();
    for (i, s) in spans.iter().enumerate() {
        let part = &drawn[s.chunk];
        for &(start, len, k) in &part.groups[s.groups.0..s.groups.1] {
            groups.push(Group {
                target: i,
                candidates: &part.flat[start..start + len],
                k,
            });
        }
    }
    labor_draw(&groups, spans.len(), iterations, key, hop_key, scratch)
}

/// One hop's list requests of all batches in node order:
/// `requests[first[k]..first[k + 1]]` are node `nodes[k]`'s (batch,
/// target position) pairs.
struct HopRequests {
    /// (node, batch, target position), sorted.
    requests: Vec<(u64, u32, u32)>,
    /// Distinct nodes, ascending.
    nodes: Vec<u64>,
    /// `requests[first[k]..first[k + 1]]` ask for `nodes[k]`.
    first: Vec<usize>,
}

/// The draws of one chunk of a hop's requests (with LABOR: their
/// candidates).
#[derive(Default)]
struct ChunkDraws {
    /// Drawn ids, a run per request.
    flat: Vec<u64>,
    /// (batch, target position, start in `flat`, count).
    spans: Vec<(u32, u32, usize, usize)>,
    /// LABOR: (start in `flat`, count, fanout) of each candidate group.
    groups: Vec<(usize, usize, i64)>,
    /// LABOR: each span's run of `groups`.
    group_spans: Vec<(usize, usize)>,
}

impl HopRequests {
    fn of(growing: &[Growing]) -> Result<Self> {
        let total: usize = growing.iter().map(|g| g.ids.len()).sum();
        let mut requests = Vec::with_capacity(total);
        for (b, g) in growing.iter().enumerate() {
            let b = u32::try_from(b)
                .map_err(|_| Error::invalid_argument("more than 2^32 batches in lockstep"))?;
            // Below 2^32 targets: push_hop refuses more.
            requests.extend(g.ids.iter().enumerate().map(|(i, &v)| (v, b, i as u32)));
        }
        requests.sort_unstable();
        let (mut nodes, mut first) = (Vec::new(), Vec::new());
        for (k, r) in requests.iter().enumerate() {
            if nodes.last() != Some(&r.0) {
                nodes.push(r.0);
                first.push(k);
            }
        }
        first.push(requests.len());
        Ok(HopRequests {
            requests,
            nodes,
            first,
        })
    }

    /// Draws hop `h` of every request, in `chunks` runs of nodes.
    fn draw(
        &self,
        source: &dyn NeighborSource,
        fanouts: &ResolvedFanouts,
        h: usize,
        (batch_seeds, excluded): (&[u64], &[&Excluded]),
        chunks: usize,
    ) -> Result<Vec<ChunkDraws>> {
        let per = self.nodes.len().div_ceil(chunks.max(1)).max(1);
        let run = |c: usize| -> Result<ChunkDraws> {
            let lo = (c * per).min(self.nodes.len());
            let hi = (lo + per).min(self.nodes.len());
            let mut out = ChunkDraws::default();
            let (mut positions, mut scratch, mut kept) = (Vec::new(), Vec::new(), Vec::new());
            let labor = fanouts.sampler().sampler.is_labor();
            source.with_lists(&self.nodes[lo..hi], &mut |k, whole| {
                let wanted = &self.requests[self.first[lo + k]..self.first[lo + k + 1]];
                // LABOR: a node's candidate groups are recorded once for
                // every request of it whose list nothing excludes (the
                // round's batches share hubs: this bounds the copies).
                let mut shared = None;
                for &(v, b, i) in wanted {
                    let (list, filtered) = match excluded.get(b as usize) {
                        Some(x) if x.filter(v, whole, &mut kept) => (&kept[..], true),
                        _ => (whole, false),
                    };
                    if labor {
                        match shared {
                            Some(at) if !filtered => out.share(at, (b, i)),
                            _ => {
                                out.candidates(fanouts, h, v, list, (b, i));
                                if !filtered {
                                    shared = Some(out.spans.len() - 1);
                                }
                            }
                        }
                        continue;
                    }
                    let seed = batch_seeds[b as usize];
                    let mut rng = Wyrand(stream_seed(seed, h as u64, u64::from(i)));
                    fanouts.draw(h, v, list, &mut rng, &mut positions, &mut scratch);
                    let start = out.flat.len();
                    // Every drawn position is an edge: a multi-edge's
                    // copies count, as in the degrees and in layer-wise
                    // inference (format/csc.md, "Parallel edges").
                    out.flat.extend(positions.iter().map(|&p| list[p]));
                    out.spans.push((b, i, start, out.flat.len() - start));
                }
            })?;
            Ok(out)
        };
        if chunks > 1 {
            (0..chunks).into_par_iter().map(run).collect()
        } else {
            Ok(vec![run(0)?])
        }
    }
}

impl ChunkDraws {
    /// Records target `v`'s LABOR candidate groups out of its in-list
    /// `list` (each relation run its own group, a multi-edge's copies
    /// kept: they share one variate, so they are kept or dropped together) as
    /// request `(batch, target position)`.
    fn candidates(
        &mut self,
        fanouts: &ResolvedFanouts,
        h: usize,
        v: u64,
        list: &[u64],
        (b, i): (u32, u32),
    ) {
        let (start, first_group) = (self.flat.len(), self.groups.len());
        fanouts.groups(h, v, list, |run, k| {
            let g = self.flat.len();
            self.flat.extend_from_slice(&list[run]);
            self.groups.push((g, self.flat.len() - g, k));
        });
        self.spans.push((b, i, start, self.flat.len() - start));
        self.group_spans.push((first_group, self.groups.len()));
    }

    /// Records request `(batch, target position)` with the candidate
    /// groups of span `at` (the same node, nothing excluded).
    fn share(&mut self, at: usize, (b, i): (u32, u32)) {
        let (_, _, start, len) = self.spans[at];
        self.spans.push((b, i, start, len));
        self.group_spans.push(self.group_spans[at]);
    }
}

/// One epoch's batches: shuffled seeds cut into batches of `batch_size`.
pub struct EpochSampler<'a> {
    /// Where lists come from.
    pub source: &'a dyn NeighborSource,
    /// This epoch's seed order; in a link epoch, its order of positive
    /// edges (indices into [`LinkEpoch::positives`]).
    pub order: Vec<u64>,
    /// Seeds per batch.
    pub batch_size: usize,
    /// Per-hop fanouts, bound to the store.
    pub fanouts: ResolvedFanouts,
    /// Run seed.
    pub seed: u64,
    /// Epoch number.
    pub epoch: u64,
    /// Link batches (`order` cut into batches of positive edges, each
    /// with its negatives; [`crate::sample::link`]); None: node batches.
    pub link: Option<LinkEpoch>,
}

impl<'a> EpochSampler<'a> {
    /// The sampler of `epoch`'s link batches: `link`'s positives shuffled
    /// from the run seed, `batch_size` positives per batch.
    pub fn link(
        source: &'a dyn NeighborSource,
        link: LinkEpoch,
        batch_size: usize,
        fanouts: impl Into<ResolvedFanouts>,
        seed: u64,
        epoch: u64,
    ) -> Result<Self> {
        let order = link.order(seed, epoch);
        let mut sampler = Self::with_order(source, order, batch_size, fanouts, seed, epoch)?;
        sampler.link = Some(link);
        Ok(sampler)
    }

    /// The sampler of `epoch` over the training nodes `train`.
    pub fn new(
        source: &'a dyn NeighborSource,
        train: &[u64],
        batch_size: usize,
        fanouts: impl Into<ResolvedFanouts>,
        seed: u64,
        epoch: u64,
    ) -> Result<Self> {
        Self::with_order(
            source,
            epoch_order(train, seed, epoch),
            batch_size,
            fanouts,
            seed,
            epoch,
        )
    }

    /// A sampler over `order` as given (no shuffle): for evaluation and
    /// prediction.
    pub fn with_order(
        source: &'a dyn NeighborSource,
        order: Vec<u64>,
        batch_size: usize,
        fanouts: impl Into<ResolvedFanouts>,
        seed: u64,
        epoch: u64,
    ) -> Result<Self> {
        if batch_size == 0 {
            return Err(Error::invalid_argument("--batch-size must be at least 1"));
        }
        Ok(EpochSampler {
            source,
            order,
            batch_size,
            fanouts: fanouts.into(),
            seed,
            epoch,
            link: None,
        })
    }

    /// Batches in the epoch.
    pub fn num_batches(&self) -> u64 {
        self.order.len().div_ceil(self.batch_size) as u64
    }

    /// The seeds of batch `b` (a link epoch: its positive edges' indices).
    pub fn seeds(&self, b: u64) -> &[u64] {
        let lo = (b as usize * self.batch_size).min(self.order.len());
        let hi = (lo + self.batch_size).min(self.order.len());
        &self.order[lo..hi]
    }

    /// The candidates LABOR read for `batch`: every in-list entry of each
    /// hop's targets (it reads their lists whole); 0 under neighbor
    /// sampling. Reads those lists again: for the memory planner's probe.
    pub fn labor_candidates(&self, batch: &SampledBatch) -> Result<u64> {
        if !self.fanouts.sampler().sampler.is_labor() {
            return Ok(0);
        }
        let mut candidates = 0u64;
        for hop in &batch.hops {
            let targets = batch
                .ids
                .get(..hop.num_dst)
                .ok_or_else(|| Error::internal("a hop has more targets than its batch has ids"))?;
            self.source
                .with_lists(targets, &mut |_, list| candidates += list.len() as u64)?;
        }
        Ok(candidates)
    }

    /// Samples batch `b`.
    pub fn sample(&self, b: u64) -> Result<SampledBatch> {
        let mut one = self.sample_chunked(b..b + 1, 1)?;
        one.pop()
            .ok_or_else(|| Error::internal("sampling one batch returned none"))
    }

    fn sample_chunked(
        &self,
        batches: std::ops::Range<u64>,
        chunks: usize,
    ) -> Result<Vec<SampledBatch>> {
        let config = self.fanouts.sampler();
        let round: Vec<(&[u64], u64)> = batches
            .clone()
            .map(|b| (self.seeds(b), batch_seed(self.seed, self.epoch, b)))
            .collect();
        let keys: Vec<LaborKey> = batches
            .clone()
            .map(|b| config.batch_key(self.seed, self.epoch, b))
            .collect();
        let Some(link) = &self.link else {
            return sample_keyed(self.source, &round, &keys, &[], &self.fanouts, chunks);
        };
        let made = batches
            .clone()
            .map(|b| link.batch(self.seeds(b), self.seed, self.epoch, b))
            .collect::<Result<Vec<_>>>()?;
        let round: Vec<(&[u64], u64)> = made
            .iter()
            .zip(batches)
            .map(|(m, b)| (&m.seeds[..], batch_seed(self.seed, self.epoch, b)))
            .collect();
        let excluded: Vec<&Excluded> = made.iter().map(|m| &m.excluded).collect();
        let mut sampled =
            sample_keyed(self.source, &round, &keys, &excluded, &self.fanouts, chunks)?;
        for (s, m) in sampled.iter_mut().zip(made) {
            s.link = Some(m.labels);
        }
        Ok(sampled)
    }

    /// Samples `batches` in lockstep ([`sample_in_lockstep`]) on this
    /// thread alone: the same batches as [`sample`](Self::sample) one by
    /// one, with each hop's lists read once for all of them.
    pub fn sample_together(&self, batches: std::ops::Range<u64>) -> Result<Vec<SampledBatch>> {
        self.sample_chunked(batches, 1)
    }

    /// Samples `batches` in lockstep ([`sample_in_lockstep`]), drawing on
    /// the current rayon pool: the same batches as [`sample`](Self::sample)
    /// one by one, with each hop's lists read once, in node order.
    pub fn sample_round(&self, batches: std::ops::Range<u64>) -> Result<Vec<SampledBatch>> {
        self.sample_chunked(batches, rayon::current_num_threads().max(1))
    }
}

/// Encodes the hops for a runtime `adj` record: an
/// [`AdjPayload`](crate::format::runtime::AdjPayload) in bincode
/// (format/runtime.md).
pub fn encode_hops(hops: &[Hop]) -> Result<Vec<u8>> {
    encode_hops_with(hops, false)
}

/// [`encode_hops`], with each hop's weights after the hops when
/// `weighted` (a LABOR run's [`WeightedAdjPayload`], format/runtime.md).
pub fn encode_hops_with(hops: &[Hop], weighted: bool) -> Result<Vec<u8>> {
    let edges: usize = hops.iter().map(|h| h.src.len()).sum();
    let adj = AdjPayload {
        hops: hops
            .iter()
            .map(|h| HopPayload {
                num_dst: h.num_dst as u64,
                num_src: h.num_src as u64,
                src: Seq::borrowed(&h.src),
                dst: Seq::borrowed(&h.dst),
            })
            .collect(),
    };
    if !weighted {
        return encode_payload(&adj, 8 + hops.len() * 32 + edges * 8);
    }
    if let Some((h, hop)) = hops
        .iter()
        .enumerate()
        .find(|(_, h)| h.weights.len() != h.src.len())
    {
        return Err(Error::internal(format!(
            "hop {h} has {} weights for {} edges",
            hop.weights.len(),
            hop.src.len()
        )));
    }
    let payload = WeightedAdjPayload {
        adj,
        weights: hops.iter().map(|h| Seq::borrowed(&h.weights)).collect(),
    };
    encode_payload(&payload, 16 + hops.len() * 40 + edges * 12)
}

/// Decodes [`encode_hops`] output, checking every length and index.
pub fn decode_hops(p: &[u8]) -> Result<Vec<Hop>> {
    decode_hops_with(p, false)
}

/// Decodes [`encode_hops_with`] output (`weighted`: a LABOR run's, with
/// weights), checking every length and index.
pub fn decode_hops_with(p: &[u8], weighted: bool) -> Result<Vec<Hop>> {
    let bad = |what: String| Error::invalid_argument(format!("adj record: {what}"));
    let (adj, mut weights): (AdjPayload, Vec<Vec<f32>>) = if weighted {
        let w: WeightedAdjPayload = decode_payload(p).map_err(bad)?;
        if w.weights.len() != w.adj.hops.len() {
            return Err(bad(format!(
                "weights of {} hops for {} hops",
                w.weights.len(),
                w.adj.hops.len()
            )));
        }
        (w.adj, w.weights.into_iter().map(Seq::into_vec).collect())
    } else {
        (decode_payload(p).map_err(bad)?, Vec::new())
    };
    if adj.hops.len() > MAX_RUN_FANOUTS {
        return Err(bad(format!("implausible hop count {}", adj.hops.len())));
    }
    let mut hops = Vec::with_capacity(adj.hops.len());
    for (h, hop) in adj.hops.into_iter().enumerate() {
        let (num_dst, num_src) = (hop.num_dst, hop.num_src);
        if num_dst > num_src || num_src > u64::from(u32::MAX) {
            return Err(bad(format!(
                "hop {h}: {num_dst} targets, {num_src} sources"
            )));
        }
        if hop.src.len() != hop.dst.len() {
            return Err(bad(format!(
                "hop {h}: {} sources but {} targets",
                hop.src.len(),
                hop.dst.len()
            )));
        }
        if hop.src.iter().any(|&s| u64::from(s) >= num_src)
            || hop.dst.iter().any(|&d| u64::from(d) >= num_dst)
        {
            return Err(bad(format!("hop {h}: an edge index is out of range")));
        }
        let w = weights.get_mut(h).map(std::mem::take).unwrap_or_default();
        if weighted && w.len() != hop.src.len() {
            return Err(bad(format!(
                "hop {h}: {} weights for {} edges",
                w.len(),
                hop.src.len()
            )));
        }
        if w.iter().any(|x| !x.is_finite() || *x < 0.0) {
            return Err(bad(format!("hop {h}: a weight is negative or not finite")));
        }
        hops.push(Hop {
            num_dst: num_dst as usize,
            num_src: num_src as usize,
            src: hop.src.into_vec(),
            dst: hop.dst.into_vec(),
            weights: w,
        });
    }
    Ok(hops)
}
