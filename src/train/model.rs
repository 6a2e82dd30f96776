//! GNN models over sampled bipartite hops: a stack of layers ([`Gnn`]),
//! one per hop, each built by its architecture's file under
//! [`crate::train::conv`] (GraphSAGE, GCN, GAT, an MLP baseline, R-GCN,
//! R-SAGE, ...) from the knobs every model shares ([`GnnSpec`]) and the
//! architecture's own options ([`ModelSpec`]). The hops themselves are
//! [`crate::train::hop`]'s.

use tch::nn;
use tch::Tensor;

use crate::error::{Error, Result};
pub use crate::train::conv::{Conv, InitKind, LayerShape, ModelKind, ModelSpec, SumLayer};
pub use crate::train::hop::{Hop, HopTensors};

/// Everything that shapes a model.
#[derive(Debug, Clone)]
pub struct GnnSpec {
    /// Architecture, with its own options.
    pub model: ModelSpec,
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
    /// The architecture.
    pub fn kind(&self) -> ModelKind {
        self.model.kind()
    }

    /// A spec with the defaults of the other knobs.
    pub fn basic(kind: ModelKind, in_dim: i64, hidden: i64, classes: i64, layers: usize) -> Self {
        GnnSpec {
            model: ModelSpec::default_for(kind),
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

/// A stack of layers, one per hop.
pub struct Gnn {
    layers: Vec<Box<dyn Conv>>,
    dropout: f64,
    input_dropout: f64,
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

    /// Builds the model `spec` describes in `vs`: layer `i`'s parameters
    /// under `layer{i}`, each layer's input the previous one's output.
    pub fn from_spec(vs: &nn::Path, spec: &GnnSpec) -> Self {
        let n = spec.layers.max(1);
        let mut input = spec.in_dim;
        let layers = (0..n)
            .map(|index| {
                let last = index + 1 == n;
                let shape = LayerShape {
                    index,
                    input,
                    output: if last { spec.classes } else { spec.hidden },
                    last,
                };
                let conv = spec
                    .model
                    .layer(&(vs / format!("layer{index}")), shape, spec);
                input = conv.out_width();
                conv
            })
            .collect();
        Gnn {
            layers,
            dropout: spec.dropout,
            input_dropout: spec.input_dropout,
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
        let relu = i + 1 < self.layers.len();
        Some((self.layers.get(i)?.sum_layer()?, relu))
    }

    /// Output width of layer `i`: the classes for the last, else the
    /// hidden width (times the heads for GAT).
    pub fn out_width(&self, i: usize) -> Option<i64> {
        Some(self.layers.get(i)?.out_width())
    }

    /// Layer `i` alone: the rows of `hop`'s targets from `h` (the rows of
    /// its `num_src` sources, targets first), with the activation and
    /// dropout that follow every layer but the last. [`forward`](Self::forward)
    /// is these layers in turn; layer-wise inference runs each over the
    /// whole graph before the next.
    pub fn layer(&self, i: usize, h: &Tensor, hop: &HopTensors, train: bool) -> Result<Tensor> {
        let Some(conv) = self.layers.get(i) else {
            return Err(Error::internal(format!(
                "layer {i} of a {}-layer model",
                self.layers.len()
            )));
        };
        let mut h = conv.forward(h, hop, train)?;
        if i + 1 < self.layers.len() {
            h = conv.activate(h).dropout(self.dropout, train);
        }
        Ok(h)
    }

    /// Logits of the seeds. `x` holds the rows of every sampled node
    /// (`hops[0].num_src` rows); `hops` are ordered from the input layer
    /// (outermost hop) to the seeds (`hops.last().num_dst` seeds).
    pub fn forward(&self, x: &Tensor, hops: &[HopTensors], train: bool) -> Result<Tensor> {
        if hops.len() != self.layers.len() {
            return Err(Error::internal(format!(
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
    use tch::{Device, Kind};

    fn star() -> Hop {
        // Targets 0, 1; sources 0..4; edges 2->0, 3->0, 1->1.
        Hop::new(2, 4, vec![2, 3, 1], vec![0, 0, 1])
    }

    /// Sets every value of the parameter `name` of `vs` to `value`.
    fn set(vs: &nn::VarStore, name: &str, value: f64) {
        let mut t = vs.variables()[name].shallow_clone();
        tch::no_grad(|| {
            let _ = t.fill_(value);
        });
    }

    /// A one-layer model of width 1 whose root weight is 1 and root bias 0.
    fn one_weight_model(vs: &nn::VarStore, kind: ModelKind) -> Gnn {
        let model = Gnn::new(&vs.root(), kind, 1, 4, 1, 1, 0.0);
        set(vs, "layer0.root.weight", 1.0);
        set(vs, "layer0.root.bias", 0.0);
        model
    }

    #[test]
    fn sage_mean_matches_hand_computation() {
        let vs = nn::VarStore::new(Device::Cpu);
        let model = one_weight_model(&vs, ModelKind::Sage);
        // Root weight 1, neighbour weight 10, bias 0.
        set(&vs, "layer0.neigh.weight", 10.0);
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
        let sage = one_weight_model(&vs, ModelKind::Sage);
        set(&vs, "layer0.neigh.weight", 10.0);
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
        // The sampler builds the hops: a bad one is a broken invariant.
        let err = HopTensors::new(&h, Device::Cpu).err().unwrap();
        assert!(matches!(err, Error::Internal(_)), "{err:?}");
        let vs = nn::VarStore::new(Device::Cpu);
        let model = Gnn::new(&vs.root(), ModelKind::Sage, 1, 4, 2, 2, 0.5);
        let x = Tensor::zeros([4, 1], (Kind::Float, Device::Cpu));
        assert!(model
            .forward(&x, &[HopTensors::new(&star(), Device::Cpu).unwrap()], false)
            .is_err());
    }
}
