//! A sampled hop as the model consumes it ([`Hop`]) and on the compute
//! device with its normalisations ([`HopTensors`]), shared by every
//! architecture of [`crate::train::conv`]. Aggregation uses `index_add`,
//! never a per-edge Rust loop.
//!
//! **GCN's normalisation** is `1/sqrt(d̂_i d̂_j)` with `d̂ = in-degree + 1`
//! taken from the *graph* (the store's CSC `indptr`, so the in-degree of a
//! directed graph; multi-edges count), not from the sampled block, when the
//! batch carries those degrees (the training loop always passes them). With
//! full fanouts a GCN then equals full-batch `D^-1/2 (A+I) D^-1/2 X W`.
//! A batch without degrees (hand-built in tests) falls back to the block's.

use tch::{Device, Kind, Tensor};

use crate::error::{Error, Result};
use crate::sample::typed::TypeIndex;

/// One sampled hop as the model consumes it: a bipartite graph from
/// `num_src` source rows to `num_dst` target rows; targets are the first
/// `num_dst` sources (the sampler's prefix property).
#[derive(Debug, Clone, PartialEq)]
pub struct Hop {
    /// Target (output) rows.
    pub num_dst: usize,
    /// Source (input) rows.
    pub num_src: usize,
    /// Local source index of each edge.
    pub src: Vec<i64>,
    /// Local target index of each edge.
    pub dst: Vec<i64>,
    /// Relation of each edge in a typed store (format/schema.md; see
    /// [`Hop::annotate`]); empty: every edge is relation 0.
    pub rel: Vec<i64>,
    /// Node type of each target in a typed store; empty: type 0.
    pub target_types: Vec<i64>,
    /// Each edge's importance weight, each target's summing to 1 (a LABOR
    /// batch, `sample::labor`); empty: every edge weighs the same. SAGE's
    /// mean becomes the weighted sum; GCN's edge normalisation is scaled
    /// by the weight times the target's sampled in-degree (1 for
    /// uniform weights).
    pub weights: Vec<f32>,
}

impl Hop {
    /// A hop of an untyped graph.
    pub fn new(num_dst: usize, num_src: usize, src: Vec<i64>, dst: Vec<i64>) -> Self {
        Hop {
            num_dst,
            num_src,
            src,
            dst,
            rel: Vec::new(),
            target_types: Vec::new(),
            weights: Vec::new(),
        }
    }

    /// Sets each edge's relation and each target's type from the global
    /// ids of the hop's local rows (`ids[i]` for local index `i`) when the
    /// store is typed (through [`TypeIndex`], as the loaders' typed
    /// batches).
    pub fn annotate(
        &mut self,
        ids: &[u64],
        schema: Option<&crate::format::schema::Schema>,
    ) -> Result<()> {
        let Some(schema) = schema else {
            return Ok(());
        };
        let index = TypeIndex::new(schema);
        let rows = self.num_src.max(self.num_dst).min(ids.len());
        let types = index.node_types(&ids[..rows])?;
        self.rel = self
            .src
            .iter()
            .zip(&self.dst)
            .map(|(&s, &d)| {
                let local = |i: i64| usize::try_from(i).unwrap_or(usize::MAX);
                index
                    .edge_relation(&types, local(s), local(d))
                    .map(|r| r as i64)
            })
            .collect::<Result<_>>()?;
        self.target_types = (0..self.num_dst)
            .map(|i| {
                types
                    .get(i)
                    .map(|&t| i64::from(t))
                    .ok_or_else(|| Error::internal("hop: a local index has no global id"))
            })
            .collect::<Result<_>>()?;
        Ok(())
    }
}

/// The edges of one relation in a hop: local endpoints and the mean's
/// `1 / max(in-degree over the relation, 1)` per target.
struct RelationEdges {
    src: Tensor,
    dst: Tensor,
    inv_deg: Tensor,
}

/// A hop's edges on the compute device, with its normalisations.
pub struct HopTensors {
    pub(crate) num_dst: i64,
    src: Tensor,
    dst: Tensor,
    /// 1 / max(in-degree, 1) per target (SAGE mean).
    inv_deg: Tensor,
    /// Each edge's importance weight (None: unweighted), SAGE's mean.
    mean_weight: Option<Tensor>,
    /// 1 / sqrt(d̂_dst d̂_src) per edge (GCN).
    pub(crate) gcn_norm: Tensor,
    /// 1 / d̂_dst per target (GCN self-loop weight).
    pub(crate) gcn_self: Tensor,
    /// Edges plus one self-loop per target (GAT).
    pub(crate) loop_src: Tensor,
    pub(crate) loop_dst: Tensor,
    /// Each relation's edges (R-GCN, R-SAGE) of a typed hop; relation `r`
    /// at index `r`. Empty for an untyped hop, whose edges are all
    /// relation 0 (the hop's own edges and `inv_deg`).
    relations: Vec<RelationEdges>,
    /// Each target's node type, as `f32` on the device (R-SAGE); None for
    /// an untyped hop (every target type 0).
    pub(crate) target_types: Option<Tensor>,
}

impl HopTensors {
    /// Moves a hop to `device` and precomputes its normalisations from the
    /// block's own degrees.
    pub fn new(hop: &Hop, device: Device) -> Result<Self> {
        Self::with_degrees(hop, None, device)
    }

    /// As [`new`](Self::new), with GCN's `d̂` (graph in-degree + 1) of each
    /// local node (`degrees[i]` for local index `i`, at least `num_src`
    /// values) when given.
    pub fn with_degrees(hop: &Hop, degrees: Option<&[f32]>, device: Device) -> Result<Self> {
        if hop.src.len() != hop.dst.len() || hop.num_dst > hop.num_src {
            return Err(Error::internal(
                "hop: src/dst lengths differ or targets exceed sources",
            ));
        }
        if hop.src.iter().any(|&s| s < 0 || s as usize >= hop.num_src)
            || hop.dst.iter().any(|&d| d < 0 || d as usize >= hop.num_dst)
        {
            return Err(Error::internal("hop: an edge index is out of range"));
        }
        if !hop.weights.is_empty()
            && (hop.weights.len() != hop.src.len()
                || hop.weights.iter().any(|w| !w.is_finite() || *w < 0.0))
        {
            return Err(Error::internal(
                "hop: weights are not one finite, non-negative value per edge",
            ));
        }
        if degrees.is_some_and(|d| d.len() < hop.num_src) {
            return Err(Error::internal("hop: fewer degrees than source rows"));
        }
        let src = Tensor::from_slice(&hop.src).to_device(device);
        let dst = Tensor::from_slice(&hop.dst).to_device(device);
        let ones = Tensor::ones([hop.src.len() as i64], (Kind::Float, device));
        let deg_dst =
            Tensor::zeros([hop.num_dst as i64], (Kind::Float, device)).index_add(0, &dst, &ones);
        let inv_deg = deg_dst.clamp_min(1.0).reciprocal();
        let (gcn_norm, gcn_self) = match degrees {
            Some(d) => {
                let d = Tensor::from_slice(&d[..hop.num_src]).to_device(device);
                (
                    (d.index_select(0, &dst) * d.index_select(0, &src)).rsqrt(),
                    d.narrow(0, 0, hop.num_dst as i64).reciprocal(),
                )
            }
            None => {
                let deg_src = Tensor::zeros([hop.num_src as i64], (Kind::Float, device))
                    .index_add(0, &src, &ones);
                (
                    ((deg_dst.index_select(0, &dst) + 1.0) * (deg_src.index_select(0, &src) + 1.0))
                        .rsqrt(),
                    (&deg_dst + 1.0).reciprocal(),
                )
            }
        };
        let mean_weight =
            (!hop.weights.is_empty()).then(|| Tensor::from_slice(&hop.weights).to_device(device));
        // Weighted: the edge's share w instead of the uniform 1 / deg.
        let gcn_norm = match &mean_weight {
            Some(w) => gcn_norm * w * deg_dst.index_select(0, &dst),
            None => gcn_norm,
        };
        let loops = Tensor::arange(hop.num_dst as i64, (Kind::Int64, device));
        let loop_src = Tensor::cat(&[&src, &loops], 0);
        let loop_dst = Tensor::cat(&[&dst, &loops], 0);
        let relations = relation_edges(hop, device)?;
        let target_types = (!hop.target_types.is_empty()).then(|| {
            let types: Vec<f32> = hop.target_types.iter().map(|&t| t as f32).collect();
            Tensor::from_slice(&types).to_device(device)
        });
        Ok(HopTensors {
            relations,
            target_types,
            num_dst: hop.num_dst as i64,
            src,
            dst,
            inv_deg,
            mean_weight,
            gcn_norm,
            gcn_self,
            loop_src,
            loop_dst,
        })
    }

    /// Mean over the in-edges of relation `r` of `x[src]` per target (zero
    /// for a target without such edges).
    pub(crate) fn aggregate_relation(&self, x: &Tensor, r: usize) -> Tensor {
        if self.relations.is_empty() && r == 0 {
            return self.mean(x);
        }
        let zeros = Tensor::zeros([self.num_dst, x.size()[1]], (x.kind(), x.device()));
        match self.relations.get(r) {
            None => zeros,
            Some(e) => {
                let msg = x.index_select(0, &e.src);
                zeros.index_add(0, &e.dst, &msg) * e.inv_deg.unsqueeze(1)
            }
        }
    }

    /// The mean of `x[src]` over each target's in-edges, weighted by the
    /// edges' importance weights when the hop has them.
    pub(crate) fn mean(&self, x: &Tensor) -> Tensor {
        match &self.mean_weight {
            Some(w) => self.aggregate(x, Some(w)),
            None => self.aggregate(x, None) * self.inv_deg.unsqueeze(1),
        }
    }

    /// Sum over in-edges of `x[src] * weight[edge]` per target.
    pub(crate) fn aggregate(&self, x: &Tensor, weight: Option<&Tensor>) -> Tensor {
        let mut msg = x.index_select(0, &self.src);
        if let Some(w) = weight {
            msg *= w.unsqueeze(1);
        }
        Tensor::zeros([self.num_dst, x.size()[1]], (x.kind(), x.device()))
            .index_add(0, &self.dst, &msg)
    }
}

/// Splits a typed hop's edges by relation, with each relation's
/// per-target mean normalisation (nothing for an untyped hop, whose edges
/// are all relation 0).
fn relation_edges(hop: &Hop, device: Device) -> Result<Vec<RelationEdges>> {
    if hop.rel.is_empty() {
        return Ok(Vec::new());
    }
    if hop.rel.len() != hop.src.len() {
        return Err(Error::internal("hop: one relation per edge expected"));
    }
    if hop.rel.iter().any(|&r| r < 0) {
        return Err(Error::internal("hop: a negative relation"));
    }
    let count = hop.rel.iter().max().map_or(1, |&m| m as usize + 1);
    let mut parts = vec![(Vec::new(), Vec::new()); count];
    for ((&s, &d), &r) in hop.src.iter().zip(&hop.dst).zip(&hop.rel) {
        if let Some((src, dst)) = parts.get_mut(r as usize) {
            src.push(s);
            dst.push(d);
        }
    }
    Ok(parts
        .into_iter()
        .map(|(src, dst)| {
            let mut deg = vec![0f32; hop.num_dst];
            for &d in &dst {
                if let Some(x) = deg.get_mut(d as usize) {
                    *x += 1.0;
                }
            }
            let inv: Vec<f32> = deg.iter().map(|&d| 1.0 / d.max(1.0)).collect();
            RelationEdges {
                src: Tensor::from_slice(&src).to_device(device),
                dst: Tensor::from_slice(&dst).to_device(device),
                inv_deg: Tensor::from_slice(&inv).to_device(device),
            }
        })
        .collect())
}
