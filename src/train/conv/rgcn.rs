//! R-GCN (Schlichtkrull et al.): a root weight plus one weight per
//! relation over the mean of the target's in-neighbours by that relation;
//! with `num_bases` (a shared knob of [`GnnSpec`], recorded at the
//! checkpoint document's top level) each relation's weight is a learned
//! mix of that many shared bases. On an untyped store every edge is one
//! relation.

use tch::nn::{self, Module};
use tch::{Kind, Tensor};

use crate::error::Result;
use crate::train::conv::{glorot, linear, Architecture, Conv, InitKind, LayerShape, NoOptions};
use crate::train::hop::HopTensors;
use crate::train::model::GnnSpec;

/// The architecture.
pub struct Rgcn;

impl Architecture for Rgcn {
    type Options = NoOptions;
    const NAME: &'static str = "rgcn";
    const ABOUT: &'static str =
        "R-GCN, a weight per relation of a typed store (--num-bases shares them)";
    const INIT: InitKind = InitKind::Kaiming;

    fn layer(p: &nn::Path, shape: LayerShape, spec: &GnnSpec, _: &NoOptions) -> Box<dyn Conv> {
        let LayerShape { input, output, .. } = shape;
        let root = linear(p / "root", input, output, true, spec.init);
        let relations = spec.relation_dst.len().max(1);
        let relation_weights = match spec.num_bases as i64 {
            0 => RelationWeights::Full(
                (0..relations)
                    .map(|r| linear(p / format!("rel{r}"), input, output, false, spec.init))
                    .collect(),
            ),
            bases => RelationWeights::Bases {
                bases: p.var("bases", &[bases, output, input], glorot(input, output)),
                coeff: p.var(
                    "coeff",
                    &[relations as i64, bases],
                    glorot(bases, relations as i64),
                ),
            },
        };
        Box::new(RgcnConv {
            root,
            relations,
            relation_weights,
        })
    }
}

/// Each relation's weight.
enum RelationWeights {
    /// A full weight per relation.
    Full(Vec<nn::Linear>),
    /// `W_r = sum_b coeff[r, b] bases[b]`: `bases` `[B, out, in]`,
    /// `coeff` `[R, B]`.
    Bases { bases: Tensor, coeff: Tensor },
}

impl RelationWeights {
    /// Relation `r`'s weight applied to `x`.
    fn apply(&self, r: usize, x: &Tensor) -> Tensor {
        match self {
            RelationWeights::Full(w) => match w.get(r) {
                Some(w) => w.forward(x),
                None => x.zeros_like(),
            },
            RelationWeights::Bases { bases, coeff } => {
                let [count, output, input] = bases.size()[..] else {
                    return Tensor::zeros([0], (Kind::Float, bases.device()));
                };
                let w = coeff
                    .get(r as i64)
                    .unsqueeze(0)
                    .matmul(&bases.view([count, output * input]))
                    .view([output, input]);
                x.matmul(&w.tr())
            }
        }
    }
}

/// One R-GCN layer.
struct RgcnConv {
    root: nn::Linear,
    relations: usize,
    relation_weights: RelationWeights,
}

impl Conv for RgcnConv {
    fn forward(&self, h: &Tensor, hop: &HopTensors, _train: bool) -> Result<Tensor> {
        let mut out = self.root.forward(&h.narrow(0, 0, hop.num_dst));
        for r in 0..self.relations {
            out += self
                .relation_weights
                .apply(r, &hop.aggregate_relation(h, r));
        }
        Ok(out)
    }

    fn out_width(&self) -> i64 {
        self.root.ws.size()[0]
    }
}
