//! An MLP on the seeds' own features: the baseline that ignores the graph
//! (a root weight per layer, no neighbourhood term).

use tch::nn::{self, Module};
use tch::Tensor;

use crate::error::Result;
use crate::train::conv::{linear, Architecture, Conv, InitKind, LayerShape, NoOptions, SumLayer};
use crate::train::hop::HopTensors;
use crate::train::model::GnnSpec;

/// The architecture.
pub struct Mlp;

impl Architecture for Mlp {
    type Options = NoOptions;
    const NAME: &'static str = "mlp";
    const ABOUT: &'static str = "an MLP on each node's own features (ignores the graph)";
    const INIT: InitKind = InitKind::Kaiming;

    fn layer(p: &nn::Path, shape: LayerShape, spec: &GnnSpec, _: &NoOptions) -> Box<dyn Conv> {
        let root = linear(p / "root", shape.input, shape.output, true, spec.init);
        Box::new(MlpLayer { root })
    }
}

/// One linear layer on the targets' rows.
struct MlpLayer {
    root: nn::Linear,
}

impl Conv for MlpLayer {
    fn forward(&self, h: &Tensor, hop: &HopTensors, _train: bool) -> Result<Tensor> {
        Ok(self.root.forward(&h.narrow(0, 0, hop.num_dst)))
    }

    fn out_width(&self) -> i64 {
        self.root.ws.size()[0]
    }

    fn sum_layer(&self) -> Option<SumLayer> {
        Some(SumLayer::Mean {
            root: self.root.ws.shallow_clone(),
            bias: self.root.bs.as_ref().map(Tensor::shallow_clone),
            neigh: None,
        })
    }
}
