//! GNN models over sampled bipartite hops: GraphSAGE (mean aggregation with
//! a root weight, as PyG's `SAGEConv`), GCN (symmetric normalisation with
//! self-loops on each sampled hop) and an MLP baseline that ignores the
//! graph. Aggregation uses `index_add`, never a per-edge Rust loop.

use tch::nn::{self, Module};
use tch::{Device, Kind, Tensor};

use crate::error::{Error, Result};

/// One sampled hop as the model consumes it: a bipartite graph from
/// `num_src` source rows to `num_dst` target rows; targets are the first
/// `num_dst` sources (the sampler's prefix property).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hop {
    /// Target (output) rows.
    pub num_dst: usize,
    /// Source (input) rows.
    pub num_src: usize,
    /// Local source index of each edge.
    pub src: Vec<i64>,
    /// Local target index of each edge.
    pub dst: Vec<i64>,
}

/// A hop's edges on the compute device, with its normalisations.
pub struct HopTensors {
    num_dst: i64,
    src: Tensor,
    dst: Tensor,
    /// 1 / max(in-degree, 1) per target (SAGE mean).
    inv_deg: Tensor,
    /// 1 / sqrt((deg_dst + 1) (deg_src + 1)) per edge (GCN).
    gcn_norm: Tensor,
    /// 1 / (deg_dst + 1) per target (GCN self-loop weight).
    gcn_self: Tensor,
}

impl HopTensors {
    /// Moves a hop to `device` and precomputes its normalisations.
    pub fn new(hop: &Hop, device: Device) -> Result<Self> {
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
        let src = Tensor::from_slice(&hop.src).to_device(device);
        let dst = Tensor::from_slice(&hop.dst).to_device(device);
        let ones = Tensor::ones([hop.src.len() as i64], (Kind::Float, device));
        let deg_dst =
            Tensor::zeros([hop.num_dst as i64], (Kind::Float, device)).index_add(0, &dst, &ones);
        let deg_src =
            Tensor::zeros([hop.num_src as i64], (Kind::Float, device)).index_add(0, &src, &ones);
        let inv_deg = deg_dst.clamp_min(1.0).reciprocal();
        let gcn_norm =
            ((deg_dst.index_select(0, &dst) + 1.0) * (deg_src.index_select(0, &src) + 1.0)).rsqrt();
        let gcn_self = (deg_dst + 1.0).reciprocal();
        Ok(HopTensors {
            num_dst: hop.num_dst as i64,
            src,
            dst,
            inv_deg,
            gcn_norm,
            gcn_self,
        })
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

/// Which architecture.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModelKind {
    /// GraphSAGE, mean aggregation + root weight.
    Sage,
    /// GCN with symmetric normalisation.
    Gcn,
    /// MLP on the seeds' own features.
    Mlp,
}

impl ModelKind {
    /// Parses `sage`, `gcn` or `mlp`.
    pub fn parse(s: &str) -> Result<Self> {
        match s {
            "sage" => Ok(ModelKind::Sage),
            "gcn" => Ok(ModelKind::Gcn),
            "mlp" => Ok(ModelKind::Mlp),
            _ => Err(Error::invalid_argument(format!(
                "unknown model {s:?}; use sage, gcn or mlp"
            ))),
        }
    }

    /// Lower-case name.
    pub fn name(self) -> &'static str {
        match self {
            ModelKind::Sage => "sage",
            ModelKind::Gcn => "gcn",
            ModelKind::Mlp => "mlp",
        }
    }
}

struct Layer {
    root: nn::Linear,
    neigh: Option<nn::Linear>,
}

/// A stack of layers, one per hop.
pub struct Gnn {
    kind: ModelKind,
    layers: Vec<Layer>,
    dropout: f64,
}

impl Gnn {
    /// Builds a model in `vs`: `layers` layers from `in_dim` through
    /// `hidden` to `classes`.
    pub fn new(
        vs: &nn::Path,
        kind: ModelKind,
        in_dim: i64,
        hidden: i64,
        classes: i64,
        layers: usize,
        dropout: f64,
    ) -> Self {
        let layers = (0..layers.max(1))
            .map(|i| {
                let input = if i == 0 { in_dim } else { hidden };
                let output = if i + 1 == layers.max(1) {
                    classes
                } else {
                    hidden
                };
                let p = vs / format!("layer{i}");
                let root = nn::linear(&p / "root", input, output, Default::default());
                let neigh = (kind == ModelKind::Sage).then(|| {
                    nn::linear(
                        &p / "neigh",
                        input,
                        output,
                        nn::LinearConfig {
                            bias: false,
                            ..Default::default()
                        },
                    )
                });
                Layer { root, neigh }
            })
            .collect();
        Gnn {
            kind,
            layers,
            dropout,
        }
    }

    /// Number of layers (= hops consumed).
    pub fn num_layers(&self) -> usize {
        self.layers.len()
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
        for (i, (layer, hop)) in self.layers.iter().zip(hops).enumerate() {
            let targets = h.narrow(0, 0, hop.num_dst);
            h = match self.kind {
                ModelKind::Mlp => layer.root.forward(&targets),
                ModelKind::Sage => {
                    let mean = hop.aggregate(&h, None) * hop.inv_deg.unsqueeze(1);
                    let neigh = layer.neigh.as_ref().map(|n| n.forward(&mean));
                    layer.root.forward(&targets)
                        + neigh.unwrap_or_else(|| Tensor::zeros_like(&targets))
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
            };
            if i + 1 < self.layers.len() {
                h = h.relu().dropout(self.dropout, train);
            }
        }
        Ok(h)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn star() -> Hop {
        // Targets 0, 1; sources 0..4; edges 2->0, 3->0, 1->1.
        Hop {
            num_dst: 2,
            num_src: 4,
            src: vec![2, 3, 1],
            dst: vec![0, 0, 1],
        }
    }

    #[test]
    fn sage_mean_matches_hand_computation() {
        let vs = nn::VarStore::new(Device::Cpu);
        let mut model = Gnn::new(&vs.root(), ModelKind::Sage, 1, 4, 1, 1, 0.0);
        // Root weight 1, neighbour weight 10, bias 0.
        tch::no_grad(|| {
            model.layers[0]
                .root
                .ws
                .copy_(&Tensor::from_slice(&[1f32]).view([1, 1]));
            let _ = model.layers[0].root.bs.as_mut().unwrap().zero_();
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
        let mut model = Gnn::new(&vs.root(), ModelKind::Gcn, 1, 4, 1, 1, 0.0);
        tch::no_grad(|| {
            model.layers[0]
                .root
                .ws
                .copy_(&Tensor::from_slice(&[1f32]).view([1, 1]));
            let _ = model.layers[0].root.bs.as_mut().unwrap().zero_();
        });
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
