//! `ginex derive-features`: features for a featureless node type of a
//! typed store (see `ginex::internals::import::derive`).

use std::io::Write;
use std::path::PathBuf;

use clap::Args;

use ginex::internals::error::{Error, Result};
use ginex::internals::import::derive::{derive_features, DeriveOptions, Reduce};
use ginex::internals::size::parse_bytes;

/// Give a featureless node type of a typed store features: the mean of its
/// neighbours' features over one relation (the OGB-LSC MAG240M baseline's
/// preprocessing). Writes a new store (same topology, labels, splits)
/// with the type's rows added; a node with no such neighbour gets zeros.
/// Out of core: the rows are accumulated a range of nodes at a time within
/// --memory, one streaming pass over the topology per range.
///
/// Example (MAG): authors from the papers they write, then institutions
/// from their authors:
///   ginex derive-features mag --type author --from paper --via writes --out mag-a
///   ginex derive-features mag-a --type institution --from author --via affiliated_with --out mag-ai
/// or zero rows for a small type the model embeds (`ginex train --embed`):
///   ginex derive-features mag-a --type field --reduce zero --out mag-az
#[derive(Debug, Args)]
pub struct DeriveArgs {
    /// The typed store to read.
    pub store: PathBuf,
    /// The featureless node type to give features.
    #[arg(long = "type")]
    pub target: String,
    /// The node type whose features are averaged (it must have features;
    /// `--reduce mean`).
    #[arg(long, required_if_eq("reduce", "mean"))]
    pub from: Option<String>,
    /// The relation joining the two types, in either direction (its name,
    /// e.g. `writes` of `author:writes:paper`; `--reduce mean`).
    #[arg(long, required_if_eq("reduce", "mean"))]
    pub via: Option<String>,
    /// `mean`: the mean of the neighbours' features; `zero`: zero rows,
    /// for a small type that `ginex train --embed TYPE` gives a learnable
    /// embedding (added to these rows).
    #[arg(long, default_value = "mean")]
    pub reduce: String,
    /// The new store (must not exist).
    #[arg(long)]
    pub out: PathBuf,
    /// Memory budget (e.g. 512MiB, 4GiB): the f32 sums of the derived rows
    /// take at most half of it, more rows mean more passes.
    #[arg(long, default_value = "2GiB")]
    pub memory: String,
}

/// Runs the derivation and prints a report.
pub fn run(args: &DeriveArgs, out: &mut dyn Write) -> Result<()> {
    let reduce = Reduce::parse(&args.reduce)?;
    let report = derive_features(&DeriveOptions {
        store: args.store.clone(),
        out: args.out.clone(),
        target: args.target.clone(),
        from: args.from.clone().unwrap_or_default(),
        via: args.via.clone().unwrap_or_default(),
        reduce,
        memory: parse_bytes(&args.memory)?,
    })?;
    let w = |e: std::io::Error| Error::io("write", "stdout", e);
    writeln!(out, "derived {}", report.path.display()).map_err(w)?;
    match reduce {
        Reduce::Mean => writeln!(
            out,
            "  {} {} rows from {} via {} ({} without a neighbour: zero rows), {} pass(es) over the topology",
            report.rows,
            args.target,
            args.from.as_deref().unwrap_or_default(),
            args.via.as_deref().unwrap_or_default(),
            report.isolated,
            report.passes
        ),
        Reduce::Zero => writeln!(out, "  {} {} rows of zeros", report.rows, args.target),
    }
    .map_err(w)?;
    for (phase, took) in &report.phases {
        writeln!(out, "  {phase:<28} {:>8.2} s", took.as_secs_f64()).map_err(w)?;
    }
    Ok(())
}
