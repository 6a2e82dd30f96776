//! GraphSAGE (Hamilton et al.), mean aggregation with a root weight, as
//! PyG's `SAGEConv`: `x_v Wr^T + b + mean_u(x_u) Wn^T` (the mean weighted
//! by a LABOR batch's importance weights).

use tch::nn::{self, Module};
use tch::Tensor;

use crate::error::Result;
use crate::train::conv::{linear, Architecture, Conv, InitKind, LayerShape, NoOptions, SumLayer};
use crate::train::hop::HopTensors;
use crate::train::model::GnnSpec;

/// The architecture.
pub struct Sage;

impl Architecture for Sage {
    type Options = NoOptions;
    const NAME: &'static str = "sage";
    const ABOUT: &'static str = "GraphSAGE, mean aggregation + root weight (the default)";
    const INIT: InitKind = InitKind::Kaiming;

    fn layer(p: &nn::Path, shape: LayerShape, spec: &GnnSpec, _: &NoOptions) -> Box<dyn Conv> {
        let root = linear(p / "root", shape.input, shape.output, true, spec.init);
        let neigh = linear(p / "neigh", shape.input, shape.output, false, spec.init);
        Box::new(SageConv { root, neigh })
    }
}

/// One GraphSAGE layer.
struct SageConv {
    root: nn::Linear,
    neigh: nn::Linear,
}

impl Conv for SageConv {
    fn forward(&self, h: &Tensor, hop: &HopTensors, _train: bool) -> Result<Tensor> {
        let targets = h.narrow(0, 0, hop.num_dst);
        Ok(self.root.forward(&targets) + self.neigh.forward(&hop.mean(h)))
    }

    fn out_width(&self) -> i64 {
        self.root.ws.size()[0]
    }

    fn sum_layer(&self) -> Option<SumLayer> {
        Some(SumLayer::Mean {
            root: self.root.ws.shallow_clone(),
            bias: self.root.bs.as_ref().map(Tensor::shallow_clone),
            neigh: Some(self.neigh.ws.shallow_clone()),
        })
    }
}
