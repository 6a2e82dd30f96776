//! A store's edge splits (format/edge-splits.md) in an export: the files
//! `ginex-import` reads back (`edge_splits/`, both exports; DGL's chunked
//! format has no place for link-prediction splits, so they sit beside it
//! and DGL ignores them) and GraphBolt's `link_prediction` task
//! (`seeds`, `labels`, `indexes`).

use std::path::Path;

use crate::error::{Error, Result};
use crate::export::sink::{flush_full, ExportDir};
use crate::export::source::Source;
use crate::format::edge_splits::{EdgeSplit, EdgeSplits, Negatives};
use crate::format::schema::Schema;

/// The directory of the re-import files.
pub const DIR: &str = "edge_splits";

/// What [`write_reimport_files`] wrote: the re-import flags.
#[derive(Debug, Clone)]
pub struct LinkFiles {
    flags: Vec<(&'static str, String)>,
    undirected: bool,
    /// The relation the splits are of (a typed store's), by name.
    relation: Option<String>,
}

impl LinkFiles {
    /// The `ginex-import` flags that read the files back from the export
    /// at `out`: the split edges, their negatives, `--held-out-excluded`
    /// (the exported graph no longer holds them) and, for an undirected
    /// store, `--undirected-splits` (its graph is exported with both
    /// directions, so the re-import does not mirror it again).
    pub fn reimport_flags(&self, out: &Path) -> String {
        let mut s = String::new();
        for (flag, rel) in &self.flags {
            s.push_str(&format!(" {flag} {}", out.join(rel).display()));
        }
        s.push_str(" --held-out-excluded");
        if self.undirected {
            s.push_str(" --undirected-splits");
        }
        if let Some(r) = &self.relation {
            s.push_str(&format!(" --target-relation {r}"));
        }
        s
    }
}

/// Writes `values` as an int64 `.npy` of `shape`.
fn write_i64(dir: &mut ExportDir, rel: &str, shape: &[u64], values: &[u64]) -> Result<()> {
    dir.write_npy(rel, "<i8", shape, |npy| {
        let mut buf = Vec::with_capacity(1 << 16);
        for &v in values {
            let v = i64::try_from(v).map_err(|_| {
                Error::invalid_argument(format!("{rel}: id {v} does not fit int64"))
            })?;
            buf.extend_from_slice(&v.to_le_bytes());
            flush_full(&mut buf, |b| npy.write(b))?;
        }
        npy.write(&buf)
    })
}

/// The (P, 2) rows of a split's positive edges.
fn pairs(s: &EdgeSplit) -> Vec<u64> {
    s.src
        .iter()
        .zip(&s.dst)
        .flat_map(|(&a, &b)| [a, b])
        .collect()
}

/// Writes the re-import files of `splits` under `edge_splits/`:
/// `{train,valid,test}_edges.npy` (P, 2) and `{valid,test}_negatives.npy`,
/// (P, K) destinations when every negative's source is its positive's,
/// else (P, K, 2) pairs. The splits of one relation of a typed store
/// (`schema`) are written in type-local ids, as the relation's edge files
/// are, and re-imported with `--target-relation`.
pub fn write_reimport_files(
    dir: &mut ExportDir,
    splits: &EdgeSplits,
    schema: Option<&Schema>,
) -> Result<LinkFiles> {
    let (splits, relation) = match (splits.relation, schema) {
        (Some(r), Some(schema)) => {
            let rel = schema.relations.get(r as usize).ok_or_else(|| {
                Error::internal(format!("edge splits of relation {r}, not in the schema"))
            })?;
            let offset = |t: u32| schema.node_types.get(t as usize).map_or(0, |t| t.offset);
            let (so, d_o) = (offset(rel.src), offset(rel.dst));
            let local = |v: &[u64], o: u64| v.iter().map(|x| x - o).collect::<Vec<u64>>();
            let one = |s: &EdgeSplit| EdgeSplit {
                src: local(&s.src, so),
                dst: local(&s.dst, d_o),
                negatives: s.negatives.as_ref().map(|n| Negatives {
                    k: n.k,
                    src: local(&n.src, so),
                    dst: local(&n.dst, d_o),
                }),
            };
            let typed = EdgeSplits {
                undirected: splits.undirected,
                train: splits.train.as_ref().map(one),
                valid: one(&splits.valid),
                test: one(&splits.test),
                relation: splits.relation,
            };
            (std::borrow::Cow::Owned(typed), Some(schema.canonical(rel)))
        }
        _ => (std::borrow::Cow::Borrowed(splits), None),
    };
    let splits = splits.as_ref();
    dir.mkdir(DIR)?;
    let mut flags = Vec::new();
    for (name, split) in splits.parts() {
        let Some(s) = split else { continue };
        let rel = format!("{DIR}/{name}_edges.npy");
        write_i64(dir, &rel, &[s.len() as u64, 2], &pairs(s))?;
        flags.push((
            match name {
                "train" => "--train-edges",
                "valid" => "--valid-edges",
                _ => "--test-edges",
            },
            rel,
        ));
        let Some(neg) = &s.negatives else { continue };
        let rel = format!("{DIR}/{name}_negatives.npy");
        let same_src = neg
            .src
            .chunks(neg.k.max(1))
            .zip(&s.src)
            .all(|(row, p)| row.iter().all(|x| x == p));
        if same_src {
            write_i64(dir, &rel, &[s.len() as u64, neg.k as u64], &neg.dst)?;
        } else {
            let both: Vec<u64> = neg
                .src
                .iter()
                .zip(&neg.dst)
                .flat_map(|(&a, &b)| [a, b])
                .collect();
            write_i64(dir, &rel, &[s.len() as u64, neg.k as u64, 2], &both)?;
        }
        flags.push((
            if name == "valid" {
                "--valid-negatives"
            } else {
                "--test-negatives"
            },
            rel,
        ));
    }
    Ok(LinkFiles {
        flags,
        undirected: splits.undirected,
        relation,
    })
}

/// Writes GraphBolt's link-prediction item sets under `set/` and returns
/// the `link_prediction` task's YAML (a `tasks:` list entry): the train
/// set's `seeds` (the listed training edges, or every edge of the graph,
/// each undirected pair once), and the validation and test sets' `seeds`
/// (positives, then their negatives), `labels` (1 and 0) and `indexes`
/// (the positive each row belongs to).
pub fn write_graphbolt_task(
    dir: &mut ExportDir,
    src: &Source,
    splits: &EdgeSplits,
) -> Result<String> {
    let data = |name: &str, rel: &str| {
        format!("          - name: {name}\n            format: numpy\n            path: {rel}\n")
    };
    let mut yaml = String::from("  - name: link_prediction\n    num_classes: 2\n");
    // Training seeds.
    let rel = "set/link_train_seeds.npy";
    match &splits.train {
        Some(t) => write_i64(dir, rel, &[t.len() as u64, 2], &pairs(t))?,
        None => {
            let undirected = splits.undirected;
            let keep = |d: u64, s: u64| !undirected || s <= d;
            let mut count = 0u64;
            src.in_lists(&mut |d, srcs| {
                count += srcs.iter().filter(|&&s| keep(d, s)).count() as u64;
                Ok(())
            })?;
            let mut npy = dir.npy(rel, "<i8", &[count, 2])?;
            let mut buf = Vec::with_capacity(1 << 16);
            src.in_lists(&mut |d, srcs| {
                for &s in srcs.iter().filter(|&&s| keep(d, s)) {
                    buf.extend_from_slice(&(s as i64).to_le_bytes());
                    buf.extend_from_slice(&(d as i64).to_le_bytes());
                    flush_full(&mut buf, |b| npy.write(b))?;
                }
                Ok(())
            })?;
            npy.write(&buf)?;
            let bytes = npy.finish()?;
            dir.add(bytes);
        }
    }
    yaml.push_str(&format!(
        "    train_set:\n      - type: null\n        data:\n{}",
        data("seeds", rel)
    ));
    for (name, key, s) in [
        ("valid", "validation_set", &splits.valid),
        ("test", "test_set", &splits.test),
    ] {
        let k = s.k();
        let rows = s.len() as u64 * (1 + k as u64);
        let mut seeds = pairs(s);
        let mut labels = vec![1u64; s.len()];
        let mut indexes: Vec<u64> = (0..s.len() as u64).collect();
        if let Some(neg) = &s.negatives {
            seeds.extend(neg.src.iter().zip(&neg.dst).flat_map(|(&a, &b)| [a, b]));
            labels.extend(std::iter::repeat_n(0, neg.src.len()));
            indexes.extend((0..neg.src.len()).map(|j| (j / k.max(1)) as u64));
        }
        let (rs, rl, ri) = (
            format!("set/link_{name}_seeds.npy"),
            format!("set/link_{name}_labels.npy"),
            format!("set/link_{name}_indexes.npy"),
        );
        write_i64(dir, &rs, &[rows, 2], &seeds)?;
        write_i64(dir, &rl, &[rows], &labels)?;
        write_i64(dir, &ri, &[rows], &indexes)?;
        yaml.push_str(&format!(
            "    {key}:\n      - type: null\n        data:\n{}{}{}",
            data("seeds", &rs),
            data("labels", &rl),
            data("indexes", &ri)
        ));
    }
    Ok(yaml)
}
