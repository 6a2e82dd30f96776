//! R-SAGE: one GraphSAGE layer per relation (root and neighbour weights),
//! summed over the relations into each target's type (what PyG's
//! `to_hetero` makes of `SAGEConv`).

use tch::nn::{self, Module};
use tch::{Kind, Tensor};

use crate::error::{Error, Result};
use crate::train::conv::{linear, Architecture, Conv, InitKind, LayerShape, NoOptions};
use crate::train::hop::HopTensors;
use crate::train::model::GnnSpec;

/// The architecture.
pub struct Rsage;

impl Architecture for Rsage {
    type Options = NoOptions;
    const NAME: &'static str = "rsage";
    const ABOUT: &'static str = "R-SAGE, a GraphSAGE layer per relation of a typed store";
    const INIT: InitKind = InitKind::Kaiming;

    fn layer(p: &nn::Path, shape: LayerShape, spec: &GnnSpec, _: &NoOptions) -> Box<dyn Conv> {
        let LayerShape { input, output, .. } = shape;
        let relations = spec.relation_dst.len().max(1);
        // Every neighbour weight, then every root weight: the order the
        // seed draws them in since R-SAGE's first version.
        let neigh = (0..relations)
            .map(|r| linear(p / format!("rel{r}"), input, output, false, spec.init))
            .collect();
        let root = (0..relations)
            .map(|r| linear(p / format!("root{r}"), input, output, true, spec.init))
            .collect();
        Box::new(RsageConv {
            output,
            relation_dst: spec.relation_dst.clone(),
            neigh,
            root,
        })
    }
}

/// One R-SAGE layer.
struct RsageConv {
    output: i64,
    /// The destination type of each relation.
    relation_dst: Vec<i64>,
    neigh: Vec<nn::Linear>,
    root: Vec<nn::Linear>,
}

impl Conv for RsageConv {
    fn forward(&self, h: &Tensor, hop: &HopTensors, _train: bool) -> Result<Tensor> {
        let targets = h.narrow(0, 0, hop.num_dst);
        // Relation r reaches only targets of its destination type.
        let mut out: Option<Tensor> = None;
        for (r, (w, root)) in self.neigh.iter().zip(&self.root).enumerate() {
            let dst_type = self.relation_dst.get(r).copied().unwrap_or(0) as f64;
            let mut part = w.forward(&hop.aggregate_relation(h, r)) + root.forward(&targets);
            // An untyped hop's targets are all type 0, every relation's.
            if let Some(types) = &hop.target_types {
                part *= types.eq(dst_type).to_kind(Kind::Float).unsqueeze(1);
            }
            out = Some(match out {
                Some(o) => o + part,
                None => part,
            });
        }
        out.ok_or_else(|| Error::internal("an R-SAGE layer without relations"))
    }

    fn out_width(&self) -> i64 {
        self.output
    }
}
