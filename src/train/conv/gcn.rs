//! GCN (Kipf & Welling): `sum_u x_u W^T / sqrt(d̂_u d̂_v) + x_v W^T / d̂_v +
//! b`, symmetric normalisation with self-loops (`d̂` from the graph's
//! degrees, see [`crate::train::hop`]).

use tch::nn;
use tch::Tensor;

use crate::error::Result;
use crate::train::conv::{linear, Architecture, Conv, InitKind, LayerShape, NoOptions, SumLayer};
use crate::train::hop::HopTensors;
use crate::train::model::GnnSpec;

/// The architecture.
pub struct Gcn;

impl Architecture for Gcn {
    type Options = NoOptions;
    const NAME: &'static str = "gcn";
    const ABOUT: &'static str = "GCN (Kipf & Welling), symmetric normalisation with self-loops";
    const INIT: InitKind = InitKind::Glorot;

    fn layer(p: &nn::Path, shape: LayerShape, spec: &GnnSpec, _: &NoOptions) -> Box<dyn Conv> {
        // Named `root` as every checkpoint since the first has it.
        let root = linear(p / "root", shape.input, shape.output, true, spec.init);
        Box::new(GcnConv { root })
    }
}

/// One GCN layer.
struct GcnConv {
    root: nn::Linear,
}

impl Conv for GcnConv {
    fn forward(&self, h: &Tensor, hop: &HopTensors, _train: bool) -> Result<Tensor> {
        let projected = h.matmul(&self.root.ws.tr());
        let agg = hop.aggregate(&projected, Some(&hop.gcn_norm));
        let own = projected.narrow(0, 0, hop.num_dst) * hop.gcn_self.unsqueeze(1);
        let out = agg + own;
        Ok(match &self.root.bs {
            Some(b) => out + b,
            None => out,
        })
    }

    fn out_width(&self) -> i64 {
        self.root.ws.size()[0]
    }

    fn sum_layer(&self) -> Option<SumLayer> {
        Some(SumLayer::Gcn {
            weight: self.root.ws.shallow_clone(),
            bias: self.root.bs.as_ref().map(Tensor::shallow_clone),
        })
    }
}
