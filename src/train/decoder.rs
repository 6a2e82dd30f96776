//! Link-prediction decoders: the score (a logit) of a node pair from the
//! two nodes' embeddings, which any encoder of [`crate::train::model`]
//! produces (its last layer's outputs). `dot` is the GAE decoder (Kipf &
//! Welling, 2016): `z_u · z_v`. `mlp` is the OGB baselines' link
//! predictor: the Hadamard product `z_u ⊙ z_v` through a two-layer MLP
//! (ReLU and dropout between). Training applies binary cross-entropy with
//! logits to the positives (label 1) and the negatives (label 0).

use tch::nn::{self, Module};
use tch::{Kind, Tensor};

use crate::error::{Error, Result};
use crate::train::model::InitKind;

/// Which decoder scores a pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DecoderKind {
    /// Inner product of the two embeddings (no parameters).
    Dot,
    /// Hadamard product, then Linear → ReLU → dropout → Linear to one logit.
    Mlp,
}

impl DecoderKind {
    /// Every decoder.
    pub const ALL: [DecoderKind; 2] = [DecoderKind::Dot, DecoderKind::Mlp];

    /// Parses `dot` or `mlp`.
    pub fn parse(s: &str) -> Result<Self> {
        Error::parse_name(s, "decoder", &DecoderKind::ALL, DecoderKind::name)
    }

    /// Lower-case name.
    pub fn name(self) -> &'static str {
        match self {
            DecoderKind::Dot => "dot",
            DecoderKind::Mlp => "mlp",
        }
    }
}

/// What a model is trained for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Task {
    /// Node classification: the last layer's outputs are class logits.
    #[default]
    Node,
    /// Link prediction: the last layer's outputs are node embeddings,
    /// scored in pairs by this decoder.
    Link(DecoderKind),
}

impl Task {
    /// `node` or `link`.
    pub fn name(self) -> &'static str {
        match self {
            Task::Node => "node",
            Task::Link(_) => "link",
        }
    }

    /// The decoder of a link task.
    pub fn decoder(self) -> Option<DecoderKind> {
        match self {
            Task::Node => None,
            Task::Link(d) => Some(d),
        }
    }

    /// The task named `task` (`node` or `link`) with `decoder` (only for
    /// `link`; `dot` when not given).
    pub fn parse(task: &str, decoder: Option<&str>) -> Result<Self> {
        match (task, decoder) {
            ("node", None) => Ok(Task::Node),
            ("node", Some(d)) => Err(Error::invalid_argument(format!(
                "--decoder {d} is for --task link (node classification has no decoder)"
            ))),
            ("link", d) => Ok(Task::Link(DecoderKind::parse(d.unwrap_or("dot"))?)),
            (t, _) => Err(Error::invalid_argument(format!(
                "unknown task {t:?}; use node or link"
            ))),
        }
    }
}

/// A decoder's parameters (none for `dot`).
pub struct Decoder {
    kind: DecoderKind,
    mlp: Option<(nn::Linear, nn::Linear)>,
    dropout: f64,
}

impl Decoder {
    /// A decoder of `width`-wide embeddings in `vs` (the MLP's hidden
    /// width is `width` too).
    pub fn new(vs: &nn::Path, kind: DecoderKind, width: i64, dropout: f64, init: InitKind) -> Self {
        let mlp = (kind == DecoderKind::Mlp).then(|| {
            let config = |fan_in: i64, fan_out: i64| match init {
                InitKind::Kaiming => nn::LinearConfig::default(),
                InitKind::Glorot => {
                    let a = (6.0 / (fan_in + fan_out) as f64).sqrt();
                    nn::LinearConfig {
                        ws_init: nn::Init::Uniform { lo: -a, up: a },
                        bs_init: Some(nn::Init::Const(0.0)),
                        bias: true,
                    }
                }
            };
            (
                nn::linear(vs / "lin0", width, width, config(width, width)),
                nn::linear(vs / "lin1", width, 1, config(width, 1)),
            )
        });
        Decoder { kind, mlp, dropout }
    }

    /// The kind.
    pub fn kind(&self) -> DecoderKind {
        self.kind
    }

    /// The logit of each pair `(src[i], dst[i])` of embedding rows
    /// (`[pairs, width]` each): a `[pairs]` tensor.
    pub fn score(&self, src: &Tensor, dst: &Tensor, train: bool) -> Result<Tensor> {
        if src.size() != dst.size() || src.dim() != 2 {
            return Err(Error::internal(format!(
                "decoder: source rows {:?} and destination rows {:?} differ",
                src.size(),
                dst.size()
            )));
        }
        let product = src * dst;
        Ok(match &self.mlp {
            None => product.sum_dim_intlist(1, false, Kind::Float),
            Some((lin0, lin1)) => lin1
                .forward(&lin0.forward(&product).relu().dropout(self.dropout, train))
                .squeeze_dim(1),
        })
    }
}

/// Binary cross-entropy with logits, averaged over the pairs.
pub fn bce_loss(logits: &Tensor, labels: &Tensor) -> Tensor {
    logits.binary_cross_entropy_with_logits::<Tensor>(labels, None, None, tch::Reduction::Mean)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tch::Device;

    #[test]
    fn names_parse_and_tasks_refuse_mismatched_flags() {
        for d in DecoderKind::ALL {
            assert_eq!(DecoderKind::parse(d.name()).unwrap(), d);
        }
        assert!(DecoderKind::parse("cosine").is_err());
        assert_eq!(Task::parse("node", None).unwrap(), Task::Node);
        assert_eq!(
            Task::parse("link", None).unwrap(),
            Task::Link(DecoderKind::Dot)
        );
        assert_eq!(
            Task::parse("link", Some("mlp")).unwrap(),
            Task::Link(DecoderKind::Mlp)
        );
        let err = Task::parse("node", Some("dot")).unwrap_err().to_string();
        assert!(err.contains("--task link"), "{err}");
        assert!(Task::parse("graph", None).is_err());
    }

    #[test]
    fn dot_scores_are_inner_products() {
        let vs = nn::VarStore::new(Device::Cpu);
        let dec = Decoder::new(&vs.root(), DecoderKind::Dot, 2, 0.0, InitKind::Glorot);
        assert!(vs.variables().is_empty());
        let a = Tensor::from_slice(&[1f32, 2., 3., 4.]).view([2, 2]);
        let b = Tensor::from_slice(&[5f32, 6., -1., 0.5]).view([2, 2]);
        let got: Vec<f32> = Vec::try_from(dec.score(&a, &b, false).unwrap()).unwrap();
        assert_eq!(got, vec![17.0, -1.0]);
        assert!(dec.score(&a, &b.narrow(0, 0, 1), false).is_err());
    }

    #[test]
    fn mlp_scores_one_logit_per_pair_and_is_symmetric() {
        let vs = nn::VarStore::new(Device::Cpu);
        let dec = Decoder::new(&vs.root(), DecoderKind::Mlp, 4, 0.0, InitKind::Kaiming);
        assert_eq!(vs.variables().len(), 4);
        let a = Tensor::randn([5, 4], (Kind::Float, Device::Cpu));
        let b = Tensor::randn([5, 4], (Kind::Float, Device::Cpu));
        let ab = dec.score(&a, &b, false).unwrap();
        assert_eq!(ab.size(), vec![5]);
        // The Hadamard product is symmetric: so is the score.
        assert!(ab.allclose(&dec.score(&b, &a, false).unwrap(), 1e-6, 1e-6, false));
    }

    #[test]
    fn bce_matches_its_definition() {
        let logits = Tensor::from_slice(&[2f32, -1.0, 0.0]);
        let labels = Tensor::from_slice(&[1f32, 0.0, 1.0]);
        let got = bce_loss(&logits, &labels).double_value(&[]);
        let sig = |x: f64| 1.0 / (1.0 + (-x).exp());
        let want = -((sig(2.0)).ln() + (1.0 - sig(-1.0)).ln() + (0.5f64).ln()) / 3.0;
        assert!((got - want).abs() < 1e-6, "{got} vs {want}");
    }
}
