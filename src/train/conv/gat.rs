//! GAT (Veličković et al.): multi-head attention over each target's
//! in-edges and a self-loop, LeakyReLU(0.2) scores, heads concatenated in
//! the hidden layers and averaged in the last, ELU between layers. Its
//! heads and attention dropout are the shared knobs `heads`, `out_heads`
//! and `attn_dropout` of [`GnnSpec`] (recorded at the checkpoint
//! document's top level since its first version).

use tch::nn;
use tch::{Kind, Tensor};

use crate::error::Result;
use crate::train::conv::{glorot, Architecture, Conv, InitKind, LayerShape, NoOptions};
use crate::train::hop::HopTensors;
use crate::train::model::GnnSpec;

/// The architecture.
pub struct Gat;

impl Architecture for Gat {
    type Options = NoOptions;
    const NAME: &'static str = "gat";
    const ABOUT: &'static str = "GAT (Veličković et al.), multi-head attention (--heads, --out-heads)";
    const INIT: InitKind = InitKind::Glorot;

    fn layer(p: &nn::Path, shape: LayerShape, spec: &GnnSpec, _: &NoOptions) -> Box<dyn Conv> {
        let LayerShape {
            input,
            output,
            last,
            ..
        } = shape;
        let h = if last {
            spec.out_heads.max(1)
        } else {
            spec.heads.max(1)
        };
        let (weight_init, att_init) = match spec.init {
            InitKind::Glorot => (glorot(input, h * output), glorot(h, output)),
            InitKind::Kaiming => (nn::init::DEFAULT_KAIMING_UNIFORM, glorot(h, output)),
        };
        Box::new(GatConv {
            heads: h,
            out: output,
            last,
            attn_dropout: spec.attn_dropout,
            weight: p.var("weight", &[h * output, input], weight_init),
            att_src: p.var("att_src", &[h, output], att_init),
            att_dst: p.var("att_dst", &[h, output], att_init),
            bias: p.var(
                "bias",
                &[if last { output } else { h * output }],
                nn::Init::Const(0.0),
            ),
        })
    }
}

/// One GAT layer.
struct GatConv {
    heads: i64,
    out: i64,
    last: bool,
    attn_dropout: f64,
    weight: Tensor,
    att_src: Tensor,
    att_dst: Tensor,
    bias: Tensor,
}

impl Conv for GatConv {
    fn forward(&self, h: &Tensor, hop: &HopTensors, train: bool) -> Result<Tensor> {
        let rows = h.size()[0];
        let wh = h
            .matmul(&self.weight.tr())
            .view([rows, self.heads, self.out]);
        let a_src = (&wh * self.att_src.unsqueeze(0)).sum_dim_intlist(-1, false, Kind::Float);
        let a_dst = (wh.narrow(0, 0, hop.num_dst) * self.att_dst.unsqueeze(0)).sum_dim_intlist(
            -1,
            false,
            Kind::Float,
        );
        let e = a_src.index_select(0, &hop.loop_src) + a_dst.index_select(0, &hop.loop_dst);
        // LeakyReLU with slope 0.2.
        let e = e.maximum(&(&e * 0.2));
        // Softmax over each target's in-edges (self-loop included); the
        // per-target max only stabilises the exponentials.
        let index = hop.loop_dst.unsqueeze(1).expand([-1, self.heads], false);
        let max = Tensor::full(
            [hop.num_dst, self.heads],
            f64::NEG_INFINITY,
            (Kind::Float, h.device()),
        )
        .internal_scatter_reduce(0, &index, &e.detach(), "amax", true);
        let ex = (e - max.index_select(0, &hop.loop_dst)).exp();
        let den = Tensor::zeros([hop.num_dst, self.heads], (Kind::Float, h.device())).index_add(
            0,
            &hop.loop_dst,
            &ex,
        );
        let mut alpha = ex / den.index_select(0, &hop.loop_dst);
        if train && self.attn_dropout > 0.0 {
            alpha = alpha.dropout(self.attn_dropout, true);
        }
        let msg = wh.index_select(0, &hop.loop_src) * alpha.unsqueeze(-1);
        let out = Tensor::zeros(
            [hop.num_dst, self.heads, self.out],
            (Kind::Float, h.device()),
        )
        .index_add(0, &hop.loop_dst, &msg);
        let out = if self.last {
            out.mean_dim(1, false, Kind::Float)
        } else {
            out.view([hop.num_dst, self.heads * self.out])
        };
        Ok(out + &self.bias)
    }

    fn out_width(&self) -> i64 {
        if self.last {
            self.out
        } else {
            self.heads * self.out
        }
    }

    fn activate(&self, h: Tensor) -> Tensor {
        h.elu()
    }
}
