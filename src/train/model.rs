//! GNN models over sampled bipartite hops: GraphSAGE (mean aggregation with
//! a root weight, as PyG's `SAGEConv`), GCN (Kipf & Welling: symmetric
//! normalisation with self-loops), GAT (Veličković et al.: multi-head
//! attention) and an MLP baseline that ignores the graph. Aggregation uses
//! `index_add`, never a per-edge Rust loop.
//!
//! **GCN's normalisation** is `1/sqrt(d̂_i d̂_j)` with `d̂ = in-degree + 1`
//! taken from the *graph* (the store's CSC `indptr`, so the in-degree of a
//! directed graph; multi-edges count), not from the sampled block, when the
//! batch carries those degrees (the training loop always passes them). With
//! full fanouts a GCN then equals full-batch `D^-1/2 (A+I) D^-1/2 X W`.
//! A batch without degrees (hand-built in tests) falls back to the block's.

use tch::nn::{self, Module};
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
    num_dst: i64,
    src: Tensor,
    dst: Tensor,
    /// 1 / max(in-degree, 1) per target (SAGE mean).
    inv_deg: Tensor,
    /// Each edge's importance weight (None: unweighted), SAGE's mean.
    mean_weight: Option<Tensor>,
    /// 1 / sqrt(d̂_dst d̂_src) per edge (GCN).
    gcn_norm: Tensor,
    /// 1 / d̂_dst per target (GCN self-loop weight).
    gcn_self: Tensor,
    /// Edges plus one self-loop per target (GAT).
    loop_src: Tensor,
    loop_dst: Tensor,
    /// Each relation's edges (R-GCN, R-SAGE) of a typed hop; relation `r`
    /// at index `r`. Empty for an untyped hop, whose edges are all
    /// relation 0 (the hop's own edges and `inv_deg`).
    relations: Vec<RelationEdges>,
    /// Each target's node type, as `f32` on the device (R-SAGE); None for
    /// an untyped hop (every target type 0).
    target_types: Option<Tensor>,
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
            return Err(Error::invalid_argument(
                "hop: src/dst lengths differ or targets exceed sources",
            ));
        }
        if hop.src.iter().any(|&s| s < 0 || s as usize >= hop.num_src)
            || hop.dst.iter().any(|&d| d < 0 || d as usize >= hop.num_dst)
        {
            return Err(Error::invalid_argument(
                "hop: an edge index is out of range",
            ));
        }
        if !hop.weights.is_empty()
            && (hop.weights.len() != hop.src.len()
                || hop.weights.iter().any(|w| !w.is_finite() || *w < 0.0))
        {
            return Err(Error::invalid_argument(
                "hop: weights are not one finite, non-negative value per edge",
            ));
        }
        if degrees.is_some_and(|d| d.len() < hop.num_src) {
            return Err(Error::invalid_argument(
                "hop: fewer degrees than source rows",
            ));
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
    fn aggregate_relation(&self, x: &Tensor, r: usize) -> Tensor {
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
    fn mean(&self, x: &Tensor) -> Tensor {
        match &self.mean_weight {
            Some(w) => self.aggregate(x, Some(w)),
            None => self.aggregate(x, None) * self.inv_deg.unsqueeze(1),
        }
    }

    /// Sum over in-edges of `x[src] * weight[edge]` per target.
    fn aggregate(&self, x: &Tensor, weight: Option<&Tensor>) -> Tensor {
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
        return Err(Error::invalid_argument(
            "hop: one relation per edge expected",
        ));
    }
    if hop.rel.iter().any(|&r| r < 0) {
        return Err(Error::invalid_argument("hop: a negative relation"));
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

/// A layer whose neighbourhood term is a sum over in-edges of per-source
/// rows (weights `[out, in]`), so that it can be computed by streaming
/// the sources once per pass ([`Gnn::sum_layer`]).
pub enum SumLayer {
    /// SAGE (MLP without `neigh`): `x_v Wr^T + b + (sum_u x_u / max(deg_v, 1)) Wn^T`.
    Mean {
        root: Tensor,
        bias: Option<Tensor>,
        neigh: Option<Tensor>,
    },
    /// GCN: `sum_u x_u W^T / sqrt(d_u d_v) + x_v W^T / d_v + b` with
    /// `d = in-degree + 1`.
    Gcn {
        weight: Tensor,
        bias: Option<Tensor>,
    },
}

/// Which architecture.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModelKind {
    /// GraphSAGE, mean aggregation + root weight.
    Sage,
    /// GCN with symmetric normalisation.
    Gcn,
    /// GAT, multi-head attention.
    Gat,
    /// MLP on the seeds' own features.
    Mlp,
    /// R-GCN (Schlichtkrull et al.): a root weight plus one weight per
    /// relation over the mean of the target's in-neighbours by that
    /// relation. On an untyped store every edge is one relation.
    Rgcn,
    /// R-SAGE: one GraphSAGE layer per relation (root and neighbour
    /// weights), summed over the relations into each target's type (what
    /// PyG's `to_hetero` makes of `SAGEConv`).
    Rsage,
}

impl ModelKind {
    /// Every architecture.
    pub const ALL: [ModelKind; 6] = [
        ModelKind::Sage,
        ModelKind::Gcn,
        ModelKind::Gat,
        ModelKind::Mlp,
        ModelKind::Rgcn,
        ModelKind::Rsage,
    ];

    /// Parses `sage`, `gcn`, `gat`, `mlp`, `rgcn` or `rsage`.
    pub fn parse(s: &str) -> Result<Self> {
        Error::parse_name(s, "model", &ModelKind::ALL, ModelKind::name)
    }

    /// Lower-case name.
    pub fn name(self) -> &'static str {
        match self {
            ModelKind::Sage => "sage",
            ModelKind::Gcn => "gcn",
            ModelKind::Gat => "gat",
            ModelKind::Rgcn => "rgcn",
            ModelKind::Rsage => "rsage",
            ModelKind::Mlp => "mlp",
        }
    }
}

/// Weight initialisation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InitKind {
    /// Glorot (Xavier) uniform weights, zero biases (the GCN and GAT papers).
    Glorot,
    /// Kaiming uniform weights and biases (PyTorch's `nn.Linear` default).
    Kaiming,
}

impl InitKind {
    /// Parses `glorot` (or `xavier`) or `kaiming`.
    pub fn parse(s: &str) -> Result<Self> {
        match s {
            "glorot" | "xavier" => Ok(InitKind::Glorot),
            "kaiming" => Ok(InitKind::Kaiming),
            _ => Err(Error::invalid_argument(format!(
                "unknown init {s:?}; use glorot or kaiming"
            ))),
        }
    }

    /// Lower-case name.
    pub fn name(self) -> &'static str {
        match self {
            InitKind::Glorot => "glorot",
            InitKind::Kaiming => "kaiming",
        }
    }

    /// The papers' choice: Glorot for GCN and GAT, Kaiming otherwise.
    pub fn default_for(kind: ModelKind) -> Self {
        match kind {
            ModelKind::Gcn | ModelKind::Gat => InitKind::Glorot,
            ModelKind::Sage | ModelKind::Mlp | ModelKind::Rgcn | ModelKind::Rsage => {
                InitKind::Kaiming
            }
        }
    }
}

/// Everything that shapes a model.
#[derive(Debug, Clone)]
pub struct GnnSpec {
    /// Architecture.
    pub kind: ModelKind,
    /// Input feature width.
    pub in_dim: i64,
    /// Hidden width (per head for GAT).
    pub hidden: i64,
    /// Output classes.
    pub classes: i64,
    /// Layers (= hops).
    pub layers: usize,
    /// Dropout after each hidden layer's activation.
    pub dropout: f64,
    /// Dropout on the input features.
    pub input_dropout: f64,
    /// GAT: attention heads of the hidden layers (concatenated).
    pub heads: i64,
    /// GAT: attention heads of the last layer (averaged).
    pub out_heads: i64,
    /// GAT: dropout on the normalised attention coefficients.
    pub attn_dropout: f64,
    /// Weight initialisation.
    pub init: InitKind,
    /// R-GCN, R-SAGE: the destination node type of each relation of the
    /// store (its schema's order); empty: one relation into type 0.
    pub relation_dst: Vec<i64>,
    /// R-GCN: basis decomposition, each relation's weight a learned mix of
    /// this many shared bases (Schlichtkrull et al.); 0: a full weight per
    /// relation.
    pub num_bases: usize,
}

impl GnnSpec {
    /// A spec with the defaults of the other knobs.
    pub fn basic(kind: ModelKind, in_dim: i64, hidden: i64, classes: i64, layers: usize) -> Self {
        GnnSpec {
            kind,
            in_dim,
            hidden,
            classes,
            layers,
            dropout: 0.0,
            input_dropout: 0.0,
            heads: 1,
            out_heads: 1,
            attn_dropout: 0.0,
            init: InitKind::default_for(kind),
            relation_dst: Vec::new(),
            num_bases: 0,
        }
    }
}

struct GatParams {
    heads: i64,
    out: i64,
    weight: Tensor,
    att_src: Tensor,
    att_dst: Tensor,
    bias: Tensor,
}

struct Layer {
    root: nn::Linear,
    neigh: Option<nn::Linear>,
    gat: Option<GatParams>,
    /// R-GCN, R-SAGE: one neighbour weight per relation.
    rel_neigh: Vec<nn::Linear>,
    /// R-SAGE: one root weight per relation.
    rel_root: Vec<nn::Linear>,
    /// R-GCN with basis decomposition (instead of `rel_neigh`).
    rel_bases: Option<RelationBases>,
}

/// Relation weights as mixes of shared bases: `W_r = sum_b coeff[r, b]
/// bases[b]`.
struct RelationBases {
    /// `[B, out, in]`.
    bases: Tensor,
    /// `[R, B]`.
    coeff: Tensor,
}

impl RelationBases {
    fn new(p: &nn::Path, relations: i64, count: i64, input: i64, output: i64) -> Self {
        RelationBases {
            bases: p.var("bases", &[count, output, input], glorot(input, output)),
            coeff: p.var("coeff", &[relations, count], glorot(count, relations)),
        }
    }

    /// Relation `r`'s weight, `[out, in]`.
    fn weight(&self, r: i64) -> Tensor {
        let [count, output, input] = self.bases.size()[..] else {
            return Tensor::zeros([0], (Kind::Float, self.bases.device()));
        };
        self.coeff
            .get(r)
            .unsqueeze(0)
            .matmul(&self.bases.view([count, output * input]))
            .view([output, input])
    }
}

fn glorot(fan_in: i64, fan_out: i64) -> nn::Init {
    let a = (6.0 / (fan_in + fan_out) as f64).sqrt();
    nn::Init::Uniform { lo: -a, up: a }
}

fn linear(p: nn::Path, input: i64, output: i64, bias: bool, init: InitKind) -> nn::Linear {
    let config = match init {
        InitKind::Kaiming => nn::LinearConfig {
            bias,
            ..Default::default()
        },
        InitKind::Glorot => nn::LinearConfig {
            ws_init: glorot(input, output),
            bs_init: Some(nn::Init::Const(0.0)),
            bias,
        },
    };
    nn::linear(p, input, output, config)
}

/// A stack of layers, one per hop.
pub struct Gnn {
    kind: ModelKind,
    relation_dst: Vec<i64>,
    layers: Vec<Layer>,
    dropout: f64,
    input_dropout: f64,
    attn_dropout: f64,
}

impl Gnn {
    /// Builds a model in `vs`: `layers` layers from `in_dim` through
    /// `hidden` to `classes`, other knobs at their defaults.
    pub fn new(
        vs: &nn::Path,
        kind: ModelKind,
        in_dim: i64,
        hidden: i64,
        classes: i64,
        layers: usize,
        dropout: f64,
    ) -> Self {
        let mut spec = GnnSpec::basic(kind, in_dim, hidden, classes, layers);
        spec.dropout = dropout;
        Self::from_spec(vs, &spec)
    }

    /// Builds the model `spec` describes in `vs`.
    pub fn from_spec(vs: &nn::Path, spec: &GnnSpec) -> Self {
        let n = spec.layers.max(1);
        let heads = spec.heads.max(1);
        let mut input = spec.in_dim;
        let layers = (0..n)
            .map(|i| {
                let last = i + 1 == n;
                let output = if last { spec.classes } else { spec.hidden };
                let p = vs / format!("layer{i}");
                if spec.kind == ModelKind::Gat {
                    let h = if last { spec.out_heads.max(1) } else { heads };
                    let (weight_init, att_init) = match spec.init {
                        InitKind::Glorot => (glorot(input, h * output), glorot(h, output)),
                        InitKind::Kaiming => (nn::init::DEFAULT_KAIMING_UNIFORM, glorot(h, output)),
                    };
                    let gat = GatParams {
                        heads: h,
                        out: output,
                        weight: p.var("weight", &[h * output, input], weight_init),
                        att_src: p.var("att_src", &[h, output], att_init),
                        att_dst: p.var("att_dst", &[h, output], att_init),
                        bias: p.var(
                            "bias",
                            &[if last { output } else { h * output }],
                            nn::Init::Const(0.0),
                        ),
                    };
                    input = if last { output } else { h * output };
                    // An unused placeholder keeps the struct simple.
                    Layer {
                        root: nn::Linear {
                            ws: Tensor::zeros([0], (Kind::Float, p.device())),
                            bs: None,
                        },
                        neigh: None,
                        gat: Some(gat),
                        rel_neigh: Vec::new(),
                        rel_root: Vec::new(),
                        rel_bases: None,
                    }
                } else {
                    // R-SAGE has a root weight per relation instead: an
                    // unregistered placeholder keeps the struct simple.
                    let root = if spec.kind == ModelKind::Rsage {
                        nn::Linear {
                            ws: Tensor::zeros([0], (Kind::Float, p.device())),
                            bs: None,
                        }
                    } else {
                        linear(&p / "root", input, output, true, spec.init)
                    };
                    let neigh = (spec.kind == ModelKind::Sage)
                        .then(|| linear(&p / "neigh", input, output, false, spec.init));
                    let relations = spec.relation_dst.len().max(1);
                    let relational = matches!(spec.kind, ModelKind::Rgcn | ModelKind::Rsage);
                    let bases = spec.num_bases as i64;
                    let rel_bases = (spec.kind == ModelKind::Rgcn && bases > 0)
                        .then(|| RelationBases::new(&p, relations as i64, bases, input, output));
                    let rel_neigh = (0..relations)
                        .filter(|_| relational && rel_bases.is_none())
                        .map(|r| linear(&p / format!("rel{r}"), input, output, false, spec.init))
                        .collect();
                    let rel_root = (0..relations)
                        .filter(|_| spec.kind == ModelKind::Rsage)
                        .map(|r| linear(&p / format!("root{r}"), input, output, true, spec.init))
                        .collect();
                    input = output;
                    Layer {
                        root,
                        neigh,
                        gat: None,
                        rel_neigh,
                        rel_root,
                        rel_bases,
                    }
                }
            })
            .collect();
        Gnn {
            kind: spec.kind,
            relation_dst: spec.relation_dst.clone(),
            layers,
            dropout: spec.dropout,
            input_dropout: spec.input_dropout,
            attn_dropout: spec.attn_dropout,
        }
    }

    /// Number of layers (= hops consumed).
    pub fn num_layers(&self) -> usize {
        self.layers.len()
    }

    /// Layer `i` as a sum over in-edges of per-source rows, for streaming
    /// inference ([`crate::train::layerwise_stream`]); None for layers that
    /// are not (GAT's softmax, the relational models' per-relation means).
    /// The flag says whether ReLU follows (every layer but the last).
    pub fn sum_layer(&self, i: usize) -> Option<(SumLayer, bool)> {
        let layer = self.layers.get(i)?;
        let relu = i + 1 < self.layers.len();
        let bias = layer.root.bs.as_ref().map(Tensor::shallow_clone);
        let sum = match self.kind {
            ModelKind::Sage | ModelKind::Mlp => SumLayer::Mean {
                root: layer.root.ws.shallow_clone(),
                bias,
                neigh: layer.neigh.as_ref().map(|n| n.ws.shallow_clone()),
            },
            ModelKind::Gcn => SumLayer::Gcn {
                weight: layer.root.ws.shallow_clone(),
                bias,
            },
            ModelKind::Gat | ModelKind::Rgcn | ModelKind::Rsage => return None,
        };
        Some((sum, relu))
    }

    /// Output width of layer `i`: the classes for the last, else the
    /// hidden width (times the heads for GAT).
    pub fn out_width(&self, i: usize) -> Option<i64> {
        let layer = self.layers.get(i)?;
        Some(match &layer.gat {
            Some(g) if i + 1 == self.layers.len() => g.out,
            Some(g) => g.heads * g.out,
            // R-SAGE's root is a placeholder; its relation weights say.
            None => layer
                .rel_neigh
                .first()
                .map_or(layer.root.ws.size()[0], |w| w.ws.size()[0]),
        })
    }

    /// Layer `i` alone: the rows of `hop`'s targets from `h` (the rows of
    /// its `num_src` sources, targets first), with the activation and
    /// dropout that follow every layer but the last. [`forward`](Self::forward)
    /// is these layers in turn; layer-wise inference runs each over the
    /// whole graph before the next.
    pub fn layer(&self, i: usize, h: &Tensor, hop: &HopTensors, train: bool) -> Result<Tensor> {
        let Some(layer) = self.layers.get(i) else {
            return Err(Error::invalid_argument(format!(
                "layer {i} of a {}-layer model",
                self.layers.len()
            )));
        };
        let last = i + 1 == self.layers.len();
        let targets = h.narrow(0, 0, hop.num_dst);
        let mut h = match self.kind {
            ModelKind::Mlp => layer.root.forward(&targets),
            ModelKind::Rgcn => {
                let mut out = layer.root.forward(&targets);
                for (r, w) in layer.rel_neigh.iter().enumerate() {
                    out += w.forward(&hop.aggregate_relation(h, r));
                }
                if let Some(b) = &layer.rel_bases {
                    for r in 0..self.relation_dst.len().max(1) {
                        let w = b.weight(r as i64);
                        out += hop.aggregate_relation(h, r).matmul(&w.tr());
                    }
                }
                out
            }
            ModelKind::Rsage => {
                // Relation r reaches only targets of its destination type.
                let mut out: Option<Tensor> = None;
                for (r, (w, root)) in layer.rel_neigh.iter().zip(&layer.rel_root).enumerate() {
                    let dst_type = self.relation_dst.get(r).copied().unwrap_or(0) as f64;
                    let mut part =
                        w.forward(&hop.aggregate_relation(h, r)) + root.forward(&targets);
                    // An untyped hop's targets are all type 0, every relation's.
                    if let Some(types) = &hop.target_types {
                        part *= types.eq(dst_type).to_kind(Kind::Float).unsqueeze(1);
                    }
                    out = Some(match out {
                        Some(o) => o + part,
                        None => part,
                    });
                }
                out.ok_or_else(|| Error::internal("an R-SAGE layer without relations"))?
            }
            ModelKind::Sage => {
                let mean = hop.mean(h);
                let neigh = layer.neigh.as_ref().map(|n| n.forward(&mean));
                layer.root.forward(&targets) + neigh.unwrap_or_else(|| Tensor::zeros_like(&targets))
            }
            ModelKind::Gcn => {
                let hw = layer.root.ws.shallow_clone();
                let projected = h.matmul(&hw.tr());
                let agg = hop.aggregate(&projected, Some(&hop.gcn_norm));
                let own = projected.narrow(0, 0, hop.num_dst) * hop.gcn_self.unsqueeze(1);
                let bias = layer.root.bs.as_ref().map(|b| b.shallow_clone());
                let out = agg + own;
                match bias {
                    Some(b) => out + b,
                    None => out,
                }
            }
            ModelKind::Gat => match &layer.gat {
                Some(g) => self.gat_layer(g, h, hop, train, last),
                None => return Err(Error::invalid_argument("GAT layer without parameters")),
            },
        };
        if !last {
            h = if self.kind == ModelKind::Gat {
                h.elu()
            } else {
                h.relu()
            };
            h = h.dropout(self.dropout, train);
        }
        Ok(h)
    }

    fn gat_layer(
        &self,
        g: &GatParams,
        h: &Tensor,
        hop: &HopTensors,
        train: bool,
        last: bool,
    ) -> Tensor {
        let rows = h.size()[0];
        let wh = h.matmul(&g.weight.tr()).view([rows, g.heads, g.out]);
        let a_src = (&wh * g.att_src.unsqueeze(0)).sum_dim_intlist(-1, false, Kind::Float);
        let a_dst = (wh.narrow(0, 0, hop.num_dst) * g.att_dst.unsqueeze(0)).sum_dim_intlist(
            -1,
            false,
            Kind::Float,
        );
        let e = a_src.index_select(0, &hop.loop_src) + a_dst.index_select(0, &hop.loop_dst);
        // LeakyReLU with slope 0.2.
        let e = e.maximum(&(&e * 0.2));
        // Softmax over each target's in-edges (self-loop included); the
        // per-target max only stabilises the exponentials.
        let index = hop.loop_dst.unsqueeze(1).expand([-1, g.heads], false);
        let max = Tensor::full(
            [hop.num_dst, g.heads],
            f64::NEG_INFINITY,
            (Kind::Float, h.device()),
        )
        .internal_scatter_reduce(0, &index, &e.detach(), "amax", true);
        let ex = (e - max.index_select(0, &hop.loop_dst)).exp();
        let den = Tensor::zeros([hop.num_dst, g.heads], (Kind::Float, h.device())).index_add(
            0,
            &hop.loop_dst,
            &ex,
        );
        let mut alpha = ex / den.index_select(0, &hop.loop_dst);
        if train && self.attn_dropout > 0.0 {
            alpha = alpha.dropout(self.attn_dropout, true);
        }
        let msg = wh.index_select(0, &hop.loop_src) * alpha.unsqueeze(-1);
        let out = Tensor::zeros([hop.num_dst, g.heads, g.out], (Kind::Float, h.device()))
            .index_add(0, &hop.loop_dst, &msg);
        let out = if last {
            out.mean_dim(1, false, Kind::Float)
        } else {
            out.view([hop.num_dst, g.heads * g.out])
        };
        out + &g.bias
    }

    /// Logits of the seeds. `x` holds the rows of every sampled node
    /// (`hops[0].num_src` rows); `hops` are ordered from the input layer
    /// (outermost hop) to the seeds (`hops.last().num_dst` seeds).
    pub fn forward(&self, x: &Tensor, hops: &[HopTensors], train: bool) -> Result<Tensor> {
        if hops.len() != self.layers.len() {
            return Err(Error::invalid_argument(format!(
                "model has {} layers but the batch has {} hops",
                self.layers.len(),
                hops.len()
            )));
        }
        let mut h = x.shallow_clone();
        if train && self.input_dropout > 0.0 {
            h = h.dropout(self.input_dropout, true);
        }
        for (i, hop) in hops.iter().enumerate() {
            h = self.layer(i, &h, hop, train)?;
        }
        Ok(h)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn star() -> Hop {
        // Targets 0, 1; sources 0..4; edges 2->0, 3->0, 1->1.
        Hop::new(2, 4, vec![2, 3, 1], vec![0, 0, 1])
    }

    /// A one-layer model of width 1 whose root weight is 1 and root bias 0.
    fn one_weight_model(vs: &nn::VarStore, kind: ModelKind) -> Gnn {
        let mut model = Gnn::new(&vs.root(), kind, 1, 4, 1, 1, 0.0);
        tch::no_grad(|| {
            model.layers[0]
                .root
                .ws
                .copy_(&Tensor::from_slice(&[1f32]).view([1, 1]));
            let _ = model.layers[0].root.bs.as_mut().unwrap().zero_();
        });
        model
    }

    #[test]
    fn sage_mean_matches_hand_computation() {
        let vs = nn::VarStore::new(Device::Cpu);
        let mut model = one_weight_model(&vs, ModelKind::Sage);
        // Root weight 1, neighbour weight 10, bias 0.
        tch::no_grad(|| {
            model.layers[0]
                .neigh
                .as_mut()
                .unwrap()
                .ws
                .copy_(&Tensor::from_slice(&[10f32]).view([1, 1]));
        });
        let x = Tensor::from_slice(&[1f32, 2., 3., 5.]).view([4, 1]);
        let hop = HopTensors::new(&star(), Device::Cpu).unwrap();
        let out = model.forward(&x, &[hop], false).unwrap();
        let got: Vec<f32> = Vec::try_from(out.view([-1])).unwrap();
        // node 0: 1 + 10 * mean(3, 5) = 41; node 1: 2 + 10 * 2 = 22.
        assert_eq!(got, vec![41.0, 22.0]);
    }

    #[test]
    fn gcn_normalisation_matches_hand_computation() {
        let vs = nn::VarStore::new(Device::Cpu);
        let model = one_weight_model(&vs, ModelKind::Gcn);
        let x = Tensor::from_slice(&[1f32, 2., 3., 5.]).view([4, 1]);
        let hop = HopTensors::new(&star(), Device::Cpu).unwrap();
        let out = model.forward(&x, &[hop], false).unwrap();
        let got: Vec<f32> = Vec::try_from(out.view([-1])).unwrap();
        // deg_dst(0) = 2, deg_src(2) = deg_src(3) = 1: 3/sqrt(3*2) + 5/sqrt(3*2) + 1/3.
        let n0 = 3.0 / 6f32.sqrt() + 5.0 / 6f32.sqrt() + 1.0 / 3.0;
        // deg_dst(1) = 1, deg_src(1) = 1: 2/sqrt(2*2) + 2/2.
        let n1 = 2.0 / 2.0 + 2.0 / 2.0;
        assert!(
            (got[0] - n0).abs() < 1e-5 && (got[1] - n1).abs() < 1e-5,
            "{got:?}"
        );
    }

    /// LABOR weights: SAGE's mean is the weighted sum, GCN's edge norm is
    /// scaled by weight × sampled in-degree (uniform weights change
    /// nothing).
    #[test]
    fn importance_weights_weigh_the_aggregation() {
        let mut hop = star();
        hop.weights = vec![0.25, 0.75, 1.0];
        let x = Tensor::from_slice(&[1f32, 2., 3., 5.]).view([4, 1]);
        let vs = nn::VarStore::new(Device::Cpu);
        let mut sage = one_weight_model(&vs, ModelKind::Sage);
        tch::no_grad(|| {
            sage.layers[0]
                .neigh
                .as_mut()
                .unwrap()
                .ws
                .copy_(&Tensor::from_slice(&[10f32]).view([1, 1]));
        });
        let t = HopTensors::new(&hop, Device::Cpu).unwrap();
        let got: Vec<f32> =
            Vec::try_from(sage.forward(&x, &[t], false).unwrap().view([-1])).unwrap();
        // node 0: 1 + 10 * (0.25 * 3 + 0.75 * 5) = 46.
        assert_eq!(got, vec![46.0, 22.0]);
        let vs = nn::VarStore::new(Device::Cpu);
        let gcn = one_weight_model(&vs, ModelKind::Gcn);
        let t = HopTensors::new(&hop, Device::Cpu).unwrap();
        let got: Vec<f32> =
            Vec::try_from(gcn.forward(&x, &[t], false).unwrap().view([-1])).unwrap();
        let n0 = (3.0 * 0.5 + 5.0 * 1.5) / 6f32.sqrt() + 1.0 / 3.0;
        assert!(
            (got[0] - n0).abs() < 1e-5 && (got[1] - 2.0).abs() < 1e-5,
            "{got:?}"
        );
        hop.weights = vec![0.5, 0.5];
        assert!(HopTensors::new(&hop, Device::Cpu).is_err());
    }

    #[test]
    fn bad_hops_are_rejected() {
        let mut h = star();
        h.src[0] = 9;
        assert!(HopTensors::new(&h, Device::Cpu).is_err());
        let vs = nn::VarStore::new(Device::Cpu);
        let model = Gnn::new(&vs.root(), ModelKind::Sage, 1, 4, 2, 2, 0.5);
        let x = Tensor::zeros([4, 1], (Kind::Float, Device::Cpu));
        assert!(model
            .forward(&x, &[HopTensors::new(&star(), Device::Cpu).unwrap()], false)
            .is_err());
    }
}
