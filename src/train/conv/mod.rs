//! The model architectures: one file each, declared once in the table of
//! [`architectures!`] below. A file defines a unit type implementing
//! [`Architecture`] (its name, its `--help` line, its paper's
//! initialisation, its own options and how it builds a layer) and the
//! layer it builds, a [`Conv`]. The table derives from those rows
//! [`ModelKind`] (names, parsing, `--help`), [`ModelSpec`] (an
//! architecture with its options, parsed from `--model NAME:KEY=VALUE,...`
//! and recorded in the checkpoint document's `options`) and the dispatch
//! that builds a model's layers ([`crate::train::model::Gnn`]).
//!
//! A new architecture is one new file here and one line in the table.

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{Map, Value};
use tch::nn;
use tch::Tensor;

use crate::error::{Error, Result};
use crate::train::hop::HopTensors;
use crate::train::model::GnnSpec;

/// Declares the architectures: each row `/// DOC file::Type` names the
/// file (a module of this folder) and the [`Architecture`] it defines,
/// which is also the [`ModelKind`] and [`ModelSpec`] variant.
macro_rules! architectures {
    ($($(#[$doc:meta])* $file:ident :: $Kind:ident,)*) => {
        $(pub mod $file;)*

        /// Which architecture (a row of this module's table).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum ModelKind {
            $($(#[$doc])* $Kind,)*
        }

        impl ModelKind {
            /// Every architecture, in the table's order.
            pub const ALL: &'static [ModelKind] = &[$(ModelKind::$Kind,)*];

            /// Lower-case name (`--model NAME`, the document's `model`).
            pub fn name(self) -> &'static str {
                match self {
                    $(ModelKind::$Kind => <$file::$Kind as Architecture>::NAME,)*
                }
            }

            /// One line for `--help`.
            pub fn about(self) -> &'static str {
                match self {
                    $(ModelKind::$Kind => <$file::$Kind as Architecture>::ABOUT,)*
                }
            }

            /// The initialisation of the architecture's paper.
            pub fn default_init(self) -> InitKind {
                match self {
                    $(ModelKind::$Kind => <$file::$Kind as Architecture>::INIT,)*
                }
            }
        }

        /// An architecture with its own options.
        #[derive(Debug, Clone, PartialEq)]
        pub enum ModelSpec {
            $($(#[$doc])* $Kind(<$file::$Kind as Architecture>::Options),)*
        }

        impl ModelSpec {
            /// The architecture.
            pub fn kind(&self) -> ModelKind {
                match self {
                    $(ModelSpec::$Kind(_) => ModelKind::$Kind,)*
                }
            }

            /// `kind` with its options read from `options` (absent keys
            /// at their defaults; an unknown key or a value of the wrong
            /// type is refused).
            pub fn with_options(kind: ModelKind, options: &Map<String, Value>) -> Result<Self> {
                match kind {
                    $(ModelKind::$Kind => options_of::<$file::$Kind>(options).map(ModelSpec::$Kind),)*
                }
            }

            /// The options, as the checkpoint document records them (every
            /// key, defaults included; empty for an architecture without
            /// options).
            pub fn options(&self) -> Map<String, Value> {
                match self {
                    $(ModelSpec::$Kind(o) => record(o),)*
                }
            }

            /// Layer `shape.index` of the model `spec` describes, its
            /// parameters under `p`.
            pub(crate) fn layer(&self, p: &nn::Path, shape: LayerShape, spec: &GnnSpec) -> Box<dyn Conv> {
                match self {
                    $(ModelSpec::$Kind(o) => <$file::$Kind as Architecture>::layer(p, shape, spec, o),)*
                }
            }
        }
    };
}

architectures! {
    /// GraphSAGE, mean aggregation + root weight.
    sage::Sage,
    /// GCN with symmetric normalisation.
    gcn::Gcn,
    /// GAT, multi-head attention.
    gat::Gat,
    /// MLP on the seeds' own features.
    mlp::Mlp,
    /// R-GCN (Schlichtkrull et al.): a root weight plus one weight per
    /// relation over the mean of the target's in-neighbours by that
    /// relation. On an untyped store every edge is one relation.
    rgcn::Rgcn,
    /// R-SAGE: one GraphSAGE layer per relation (root and neighbour
    /// weights), summed over the relations into each target's type (what
    /// PyG's `to_hetero` makes of `SAGEConv`).
    rsage::Rsage,
    /// GIN (Xu et al.): sum aggregation + a 2-layer MLP, `eps` fixed or learned.
    gin::Gin,
}

/// What an architecture declares: the row behind its [`ModelKind`] and
/// [`ModelSpec`] variants.
pub trait Architecture {
    /// Its own options (beyond the knobs every model shares, [`GnnSpec`]),
    /// recorded in the checkpoint document's `options`: a serde struct
    /// with `#[serde(default, deny_unknown_fields)]` ([`NoOptions`] when
    /// none).
    type Options: Clone + std::fmt::Debug + PartialEq + Default + Serialize + DeserializeOwned;
    /// Lower-case name.
    const NAME: &'static str;
    /// One line for `--help`.
    const ABOUT: &'static str;
    /// The initialisation of its paper.
    const INIT: InitKind;
    /// Layer `shape.index` of `spec`, its parameters under `p` (created
    /// in a fixed order: a seed gives the same weights every time).
    fn layer(
        p: &nn::Path,
        shape: LayerShape,
        spec: &GnnSpec,
        options: &Self::Options,
    ) -> Box<dyn Conv>;
}

/// The options of an architecture that has none.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NoOptions {}

/// Where a layer sits in its model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LayerShape {
    /// Its index (0: the input layer).
    pub index: usize,
    /// Input width.
    pub input: i64,
    /// Output width asked for (the classes for the last layer, else the
    /// hidden width; GAT's hidden layers return `heads` times it).
    pub output: i64,
    /// Whether it is the last layer.
    pub last: bool,
}

/// One layer of a model: a hop's targets from its sources.
pub trait Conv: Send {
    /// The targets' rows from `h` (the rows of `hop`'s sources, targets
    /// first), before the activation; `train` turns dropout on.
    fn forward(&self, h: &Tensor, hop: &HopTensors, train: bool) -> Result<Tensor>;

    /// Output width.
    fn out_width(&self) -> i64;

    /// The activation between layers (ReLU unless the paper says).
    fn activate(&self, h: Tensor) -> Tensor {
        h.relu()
    }

    /// The layer as a sum over in-edges of per-source rows, for streaming
    /// inference ([`crate::train::layerwise_stream`]); None when it is not.
    fn sum_layer(&self) -> Option<SumLayer> {
        None
    }
}

/// A layer whose neighbourhood term is a sum over in-edges of per-source
/// rows (weights `[out, in]`), so that it can be computed by streaming
/// the sources once per pass ([`crate::train::model::Gnn::sum_layer`]).
pub enum SumLayer {
    /// SAGE (MLP without `neigh`): `x_v Wr^T + b + (sum_u x_u / max(deg_v, 1)) Wn^T`.
    Mean {
        /// `Wr`.
        root: Tensor,
        /// `b`.
        bias: Option<Tensor>,
        /// `Wn` (None: the MLP).
        neigh: Option<Tensor>,
    },
    /// GCN: `sum_u x_u W^T / sqrt(d_u d_v) + x_v W^T / d_v + b` with
    /// `d = in-degree + 1`.
    Gcn {
        /// `W`.
        weight: Tensor,
        /// `b`.
        bias: Option<Tensor>,
    },
}

impl ModelKind {
    /// Parses a name of the table.
    pub fn parse(s: &str) -> Result<Self> {
        Error::parse_name(s, "model", ModelKind::ALL, ModelKind::name)
    }

    /// The architectures as `--help` lists them, one `name: about` line
    /// each.
    pub fn help() -> String {
        ModelKind::ALL
            .iter()
            .map(|k| format!("{}: {}", k.name(), k.about()))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

impl ModelSpec {
    /// `kind` with its default options.
    pub fn default_for(kind: ModelKind) -> Self {
        // Empty options are every architecture's defaults.
        Self::with_options(kind, &Map::new())
            .unwrap_or_else(|_| unreachable!("the defaults of {kind:?} do not read back"))
    }

    /// Parses `NAME` or `NAME:KEY=VALUE,...` (`--model`): a value is JSON
    /// when it reads as JSON (a number, `true`, `false`), else a string.
    pub fn parse(s: &str) -> Result<Self> {
        let (name, rest) = s.split_once(':').unwrap_or((s, ""));
        let kind = ModelKind::parse(name)?;
        let mut options = Map::new();
        for item in rest.split(',').filter(|i| !i.is_empty()) {
            let (key, value) = item.split_once('=').ok_or_else(|| {
                Error::invalid_argument(format!(
                    "--model {s}: {item:?} is not KEY=VALUE (e.g. --model gin:train_eps=true)"
                ))
            })?;
            let value = serde_json::from_str(value).unwrap_or_else(|_| Value::from(value));
            options.insert(key.to_string(), value);
        }
        Self::with_options(kind, &options).map_err(|e| match e {
            Error::InvalidArgument(why) => Error::invalid_argument(format!("--model {s}: {why}")),
            other => other,
        })
    }
}

/// `A`'s options from `options`.
fn options_of<A: Architecture>(options: &Map<String, Value>) -> Result<A::Options> {
    serde_json::from_value(Value::Object(options.clone()))
        .map_err(|e| Error::invalid_argument(format!("options of model {}: {e}", A::NAME)))
}

/// `options` as a JSON object (empty for [`NoOptions`]).
fn record<T: Serialize>(options: &T) -> Map<String, Value> {
    match serde_json::to_value(options) {
        Ok(Value::Object(m)) => m,
        _ => Map::new(),
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

    /// The papers' choice ([`Architecture::INIT`]).
    pub fn default_for(kind: ModelKind) -> Self {
        kind.default_init()
    }
}

/// Glorot (Xavier) uniform for a `[fan_out, fan_in]` weight.
pub(crate) fn glorot(fan_in: i64, fan_out: i64) -> nn::Init {
    let a = (6.0 / (fan_in + fan_out) as f64).sqrt();
    nn::Init::Uniform { lo: -a, up: a }
}

/// A linear map `input -> output` under `p` initialised by `init`.
pub(crate) fn linear(
    p: nn::Path,
    input: i64,
    output: i64,
    bias: bool,
    init: InitKind,
) -> nn::Linear {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_row_parses_by_its_name_and_names_are_distinct() {
        let mut names: Vec<&str> = ModelKind::ALL.iter().map(|k| k.name()).collect();
        for &k in ModelKind::ALL {
            assert_eq!(ModelKind::parse(k.name()).unwrap(), k);
            assert_eq!(ModelSpec::parse(k.name()).unwrap().kind(), k);
            assert!(ModelKind::help().contains(&format!("{}: ", k.name())));
        }
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), ModelKind::ALL.len());
        let err = ModelKind::parse("nope").unwrap_err();
        assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
    }

    #[test]
    fn options_an_architecture_does_not_have_are_refused() {
        let err = ModelSpec::parse("sage:eps=1").unwrap_err().to_string();
        assert!(
            err.contains("--model sage:eps=1") && err.contains("eps"),
            "{err}"
        );
        let err = ModelSpec::parse("sage:eps").unwrap_err().to_string();
        assert!(err.contains("KEY=VALUE"), "{err}");
        assert!(ModelSpec::default_for(ModelKind::Gcn).options().is_empty());
    }
}
