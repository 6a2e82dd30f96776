//! Fanouts: how many in-neighbours each hop draws for every target.
//!
//! One type, [`Fanouts`], in two forms:
//!
//! * **One list for all** — `10,10,10`: hop `l` (seeds' hop first) draws
//!   up to `k_l` of a target's in-neighbours, whatever their relation
//!   (`-1` = all of them).
//! * **Per relation** (typed stores) — `cites=10:5,writes=10:5,*=2:0`:
//!   each entry names a relation (its name as the schema lists it,
//!   `cites`, or its canonical `paper:cites:paper`) and gives one count
//!   per hop, `:`-separated, seeds' hop first (`-1` = all, `0` = none);
//!   `*` gives every relation not named. A relation neither named nor
//!   covered by `*` is not sampled (0). Every entry gives the same number
//!   of hops. At hop `l` a target of type `t` draws, for each relation
//!   into `t` in schema order, up to that relation's `k` out of the run of
//!   its in-list the relation's source type owns, all from the target's
//!   one random stream.
//!
//! [`Fanouts::resolve`] binds fanouts to a store's schema (refusing names
//! the store does not have, or per-relation fanouts on an untyped store)
//! into the [`ResolvedFanouts`] the sampler draws with. A uniform list
//! resolves to exactly what the sampler did before per-relation fanouts
//! existed: same batches, same runtime files.

use std::fmt;
use std::ops::Range;

use crate::error::{Error, Result};
use crate::format::runtime::{RelationFanoutsStamp, MAX_RUN_FANOUTS};
use crate::format::schema::Schema;
use crate::rng::Wyrand;
use crate::sample::labor::SamplerConfig;

/// The key of the entry that covers every relation not named.
pub const OTHER_RELATIONS: &str = "*";

/// In-neighbours drawn per hop, for all relations at once or per relation
/// (see the module docs). Text form: [`Fanouts::parse`] and `Display`
/// (which round-trip).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fanouts {
    /// One count per hop, seeds' hop first (`-1` = all).
    Uniform(Vec<i64>),
    /// A count per relation per hop.
    PerRelation(RelationFanouts),
}

/// Per-relation fanouts as given: relation names, not yet bound to a
/// store.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RelationFanouts {
    /// Each named relation (`cites` or `paper:cites:paper`) with its count
    /// per hop, seeds' hop first.
    pub relations: Vec<(String, Vec<i64>)>,
    /// The count per hop of every relation not named (`*=`; zeros when
    /// not given).
    pub others: Vec<i64>,
}

impl Default for Fanouts {
    /// `10,10,10`, the default of every run.
    fn default() -> Self {
        Fanouts::Uniform(vec![10, 10, 10])
    }
}

impl From<Vec<i64>> for Fanouts {
    fn from(f: Vec<i64>) -> Self {
        Fanouts::Uniform(f)
    }
}

impl From<&[i64]> for Fanouts {
    fn from(f: &[i64]) -> Self {
        Fanouts::Uniform(f.to_vec())
    }
}

impl<const N: usize> From<[i64; N]> for Fanouts {
    fn from(f: [i64; N]) -> Self {
        Fanouts::Uniform(f.to_vec())
    }
}

impl std::str::FromStr for Fanouts {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        Fanouts::parse(s)
    }
}

fn bad(s: &str, why: impl fmt::Display) -> Error {
    Error::invalid_argument(format!("--fanouts {s:?}: {why}"))
}

impl Fanouts {
    /// Parses `10,10,10` (one count per hop for all relations, `-1` =
    /// all) or `cites=10:5,writes=5:5,*=2:0` (per relation, see the
    /// module docs).
    pub fn parse(s: &str) -> Result<Fanouts> {
        if s.contains('=') {
            return parse_per_relation(s);
        }
        let f: Vec<i64> = s
            .split(',')
            .map(|x| x.trim().parse::<i64>())
            .collect::<std::result::Result<_, _>>()
            .map_err(|_| {
                bad(
                    s,
                    "expected comma-separated integers such as 10,10,10 (-1 = all), \
                     or per-relation counts such as cites=10:5,writes=5:5",
                )
            })?;
        Fanouts::per_hop_counts(f)
    }

    /// One count per hop for all relations (`-1` = all), checked as
    /// [`parse`](Self::parse) checks the text: each positive or -1, at
    /// most [`MAX_RUN_FANOUTS`] hops (what a run's files record).
    pub fn per_hop_counts(counts: Vec<i64>) -> Result<Fanouts> {
        let text = || {
            let t: Vec<String> = counts.iter().map(i64::to_string).collect();
            t.join(",")
        };
        if counts.is_empty() || counts.iter().any(|&k| k == 0 || k < -1) {
            return Err(bad(&text(), "each fanout must be positive or -1"));
        }
        if counts.len() > MAX_RUN_FANOUTS {
            return Err(bad(
                &text(),
                format!(
                    "{} hops; at most {MAX_RUN_FANOUTS} are supported (MAX_RUN_FANOUTS)",
                    counts.len()
                ),
            ));
        }
        Ok(Fanouts::Uniform(counts))
    }

    /// [`Fanouts::parse`] for the option `flag` (`--eval-fanouts`): its
    /// errors name that option instead of `--fanouts`.
    pub fn parse_as(s: &str, flag: &str) -> Result<Fanouts> {
        Fanouts::parse(s).map_err(|e| match e {
            Error::InvalidArgument(m) => Error::InvalidArgument(
                m.strip_prefix("--fanouts ")
                    .map_or_else(|| m.clone(), |rest| format!("{flag} {rest}")),
            ),
            other => other,
        })
    }

    /// Per-relation fanouts from `(relation, counts per hop)` pairs, the
    /// relation `*` giving every relation not named.
    pub fn per_relation<N: Into<String>>(
        relations: impl IntoIterator<Item = (N, Vec<i64>)>,
    ) -> Result<Fanouts> {
        let p = RelationFanouts::gather(relations)
            .map_err(|e| Error::invalid_argument(format!("fanouts: {e}")))?;
        p.check_as(&Fanouts::PerRelation(p.clone()).to_string())?;
        Ok(Fanouts::PerRelation(p))
    }

    /// Per-relation fanouts from one `(relation, count)` list per hop,
    /// seeds' hop first (as DGL takes them); a relation a hop does not
    /// name gets that hop's `*` count, or 0.
    pub fn per_hop<N: Into<String>, H: IntoIterator<Item = (N, i64)>>(
        hops: impl IntoIterator<Item = H>,
    ) -> Result<Fanouts> {
        let hops: Vec<Vec<(String, i64)>> = hops
            .into_iter()
            .map(|h| h.into_iter().map(|(n, k)| (n.into(), k)).collect())
            .collect();
        let default_of = |h: &[(String, i64)]| {
            h.iter()
                .find(|(n, _)| n == OTHER_RELATIONS)
                .map_or(0, |(_, k)| *k)
        };
        let mut names: Vec<String> = Vec::new();
        for (h, hop) in hops.iter().enumerate() {
            for (i, (n, _)) in hop.iter().enumerate() {
                if hop.iter().take(i).any(|(m, _)| m == n) {
                    return Err(Error::invalid_argument(format!(
                        "fanouts: hop {} names `{n}` twice",
                        h + 1
                    )));
                }
                if n != OTHER_RELATIONS && !names.contains(n) {
                    names.push(n.clone());
                }
            }
        }
        let mut relations: Vec<(String, Vec<i64>)> = names
            .into_iter()
            .map(|n| {
                let counts = hops
                    .iter()
                    .map(|h| {
                        h.iter()
                            .find(|(m, _)| *m == n)
                            .map_or_else(|| default_of(h), |(_, k)| *k)
                    })
                    .collect();
                (n, counts)
            })
            .collect();
        relations.push((
            OTHER_RELATIONS.to_string(),
            hops.iter().map(|h| default_of(h)).collect(),
        ));
        Fanouts::per_relation(relations)
    }

    /// Hops sampled.
    pub fn num_hops(&self) -> usize {
        match self {
            Fanouts::Uniform(f) => f.len(),
            Fanouts::PerRelation(p) => p.others.len(),
        }
    }

    /// The counts of one list for all relations, else None.
    pub fn uniform(&self) -> Option<&[i64]> {
        match self {
            Fanouts::Uniform(f) => Some(f),
            Fanouts::PerRelation(_) => None,
        }
    }

    /// Checks the counts: at least one hop; one list for all takes
    /// positive counts or -1, per relation 0 too; every relation gives
    /// one count per hop, at most [`MAX_RUN_FANOUTS`] hops, no relation
    /// named twice.
    pub fn check(&self) -> Result<()> {
        match self {
            Fanouts::Uniform(f) => {
                if f.is_empty() {
                    return Err(Error::invalid_argument("fanouts: give at least one hop"));
                }
                if let Some(k) = f.iter().find(|&&k| k == 0 || k < -1) {
                    return Err(Error::invalid_argument(format!(
                        "fanout {k}: use a positive count or -1 (all neighbors)"
                    )));
                }
                Ok(())
            }
            Fanouts::PerRelation(p) => p.check_as(&self.to_string()),
        }
    }

    /// Binds the fanouts to a store's `schema` (None: an untyped store).
    /// One list for all needs no schema; per-relation fanouts need one
    /// that has every relation they name.
    pub fn resolve(&self, schema: Option<&Schema>) -> Result<ResolvedFanouts> {
        self.check()?;
        match self {
            Fanouts::Uniform(f) => Ok(ResolvedFanouts::from(f.clone())),
            Fanouts::PerRelation(p) => {
                let schema = schema.ok_or_else(|| {
                    Error::invalid_argument(format!(
                        "--fanouts {:?}: per-relation fanouts need a typed store (node types and \
                         relations); this store is untyped: give one count per hop, such as \
                         --fanouts 10,10",
                        self.to_string()
                    ))
                })?;
                p.resolve(schema, self)
            }
        }
    }
}

impl RelationFanouts {
    /// Splits `(name, counts)` entries into the named relations and `*`
    /// (zeros when absent, as many as the first entry's hops).
    fn gather<N: Into<String>>(
        entries: impl IntoIterator<Item = (N, Vec<i64>)>,
    ) -> std::result::Result<Self, &'static str> {
        let mut out = RelationFanouts::default();
        let mut others = None;
        for (name, counts) in entries {
            let name = name.into();
            if name == OTHER_RELATIONS {
                if others.replace(counts).is_some() {
                    return Err("`*` is given twice");
                }
            } else {
                out.relations.push((name, counts));
            }
        }
        let hops = out
            .relations
            .first()
            .map(|r| r.1.len())
            .or(others.as_ref().map(Vec::len))
            .unwrap_or(0);
        out.others = others.unwrap_or_else(|| vec![0; hops]);
        Ok(out)
    }

    /// [`Fanouts::check`], naming the fanouts as `text`.
    fn check_as(&self, text: &str) -> Result<()> {
        let hops = self.others.len();
        let text = text.to_string();
        if hops == 0 {
            return Err(bad(&text, "give at least one hop"));
        }
        if hops > MAX_RUN_FANOUTS {
            return Err(bad(
                &text,
                format!("{hops} hops (at most {MAX_RUN_FANOUTS})"),
            ));
        }
        let reference = self
            .relations
            .iter()
            .find(|r| r.1.len() == hops)
            .map_or(OTHER_RELATIONS, |r| r.0.as_str());
        for (i, (name, counts)) in self.relations.iter().enumerate() {
            if name.trim().is_empty() || name == OTHER_RELATIONS {
                return Err(bad(&text, format!("`{name}` is not a relation name")));
            }
            if self.relations.iter().take(i).any(|(n, _)| n == name) {
                return Err(bad(&text, format!("{name} is given twice")));
            }
            if counts.len() != hops {
                return Err(bad(
                    &text,
                    format!(
                        "{name} gives {} hops but {reference} gives {hops}; give every \
                         relation one count per hop, such as {name}={}",
                        counts.len(),
                        vec!["0"; hops].join(":")
                    ),
                ));
            }
        }
        let all = self.relations.iter().map(|r| &r.1).chain([&self.others]);
        if let Some(k) = all.flatten().find(|&&k| k < -1) {
            return Err(bad(
                &text,
                format!("count {k}: each count must be 0 or more, or -1 (all)"),
            ));
        }
        Ok(())
    }

    fn resolve(&self, schema: &Schema, whole: &Fanouts) -> Result<ResolvedFanouts> {
        let known = || {
            schema
                .relations
                .iter()
                .map(|r| schema.canonical(r))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let mut named: Vec<Option<usize>> = vec![None; schema.relations.len()];
        for (i, (name, _)) in self.relations.iter().enumerate() {
            let name = name.trim();
            let matches: Vec<usize> = (0..schema.relations.len())
                .filter(|&j| {
                    let r = &schema.relations[j];
                    r.name == name || schema.canonical(r) == name
                })
                .collect();
            let j = match matches.as_slice() {
                [j] => *j,
                [] => {
                    return Err(bad(
                        &whole.to_string(),
                        format!(
                            "the store has no relation `{name}`; its relations: {}",
                            if schema.relations.is_empty() {
                                "none".to_string()
                            } else {
                                known()
                            }
                        ),
                    ))
                }
                many => {
                    return Err(bad(
                        &whole.to_string(),
                        format!(
                            "`{name}` names {} relations ({}); name one in full, as src:name:dst",
                            many.len(),
                            many.iter()
                                .map(|&j| schema.canonical(&schema.relations[j]))
                                .collect::<Vec<_>>()
                                .join(", ")
                        ),
                    ))
                }
            };
            if let Some(before) = named[j].replace(i) {
                return Err(bad(
                    &whole.to_string(),
                    format!(
                        "`{}` and `{name}` both name {}",
                        self.relations[before].0,
                        schema.canonical(&schema.relations[j])
                    ),
                ));
            }
        }
        let hops = (0..self.others.len())
            .map(|h| {
                named
                    .iter()
                    .map(|n| n.map_or(self.others[h], |i| self.relations[i].1[h]))
                    .collect()
            })
            .collect();
        Ok(ResolvedFanouts(
            Resolved::PerRelation(PerRelation::new(schema, hops)),
            SamplerConfig::default(),
        ))
    }
}

fn parse_per_relation(s: &str) -> Result<Fanouts> {
    let mut entries = Vec::new();
    for entry in s.split(',') {
        let entry = entry.trim();
        let Some((name, counts)) = entry.rsplit_once('=') else {
            return Err(bad(
                s,
                format!(
                    "`{entry}` names no relation: per-relation fanouts are NAME=K:K:... entries \
                     (one count per hop; *=K:K:... for the relations not named)"
                ),
            ));
        };
        let counts: Vec<i64> = counts
            .split(':')
            .map(|k| k.trim().parse::<i64>())
            .collect::<std::result::Result<_, _>>()
            .map_err(|_| {
                bad(
                    s,
                    format!(
                        "`{entry}`: expected counts separated by `:` after `=`, one per hop \
                         (-1 = all, 0 = none), such as {}=10:5",
                        name.trim()
                    ),
                )
            })?;
        entries.push((name.trim().to_string(), counts));
    }
    let p = RelationFanouts::gather(entries).map_err(|e| bad(s, e))?;
    p.check_as(s)?;
    Ok(Fanouts::PerRelation(p))
}

fn join(counts: &[i64], sep: &str) -> String {
    counts
        .iter()
        .map(i64::to_string)
        .collect::<Vec<_>>()
        .join(sep)
}

impl fmt::Display for Fanouts {
    /// `10,10,10`, or `cites=10:5,writes=5:5,*=2:0` (`*` only when it
    /// draws; a per-relation form with no entry at all shows `*=0:…`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Fanouts::Uniform(k) => f.write_str(&join(k, ",")),
            Fanouts::PerRelation(p) => {
                let mut parts: Vec<String> = p
                    .relations
                    .iter()
                    .map(|(n, c)| format!("{n}={}", join(c, ":")))
                    .collect();
                if parts.is_empty() || p.others.iter().any(|&k| k != 0) {
                    parts.push(format!("{OTHER_RELATIONS}={}", join(&p.others, ":")));
                }
                f.write_str(&parts.join(","))
            }
        }
    }
}

impl serde::Serialize for Fanouts {
    /// One list for all as a list of integers (as before per-relation
    /// fanouts existed); per relation as its text form.
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        match self {
            Fanouts::Uniform(k) => k.serialize(s),
            Fanouts::PerRelation(_) => s.serialize_str(&self.to_string()),
        }
    }
}

impl<'de> serde::Deserialize<'de> for Fanouts {
    /// A list of integers or the text form.
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        #[derive(serde::Deserialize)]
        #[serde(untagged)]
        enum Either {
            List(Vec<i64>),
            Text(String),
        }
        match Either::deserialize(d)? {
            Either::List(k) => Ok(Fanouts::Uniform(k)),
            Either::Text(t) => Fanouts::parse(&t).map_err(serde::de::Error::custom),
        }
    }
}

/// Fanouts bound to a store: what the sampler draws with
/// ([`Fanouts::resolve`]; a plain `Vec<i64>` converts to one list for
/// all relations), with the sampler that draws them
/// ([`with_sampler`](ResolvedFanouts::with_sampler); neighbor sampling
/// unless told).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedFanouts(Resolved, SamplerConfig);

#[derive(Debug, Clone, PartialEq, Eq)]
enum Resolved {
    Uniform(Vec<i64>),
    PerRelation(PerRelation),
}

/// Per-relation counts over a schema's relations.
#[derive(Debug, Clone, PartialEq, Eq)]
struct PerRelation {
    /// Canonical names of the schema's relations, in schema order.
    relations: Vec<String>,
    /// `[hop][relation]`: the count (-1 all, 0 none).
    hops: Vec<Vec<i64>>,
    /// Node types in id order: where each ends, and the relations into
    /// it.
    types: Vec<(u64, Vec<RelationInto>)>,
}

/// A relation into a node type: its index in the schema, and its source
/// type's id range (the run of an in-list it owns).
type RelationInto = (usize, Range<u64>);

impl PerRelation {
    fn new(schema: &Schema, hops: Vec<Vec<i64>>) -> Self {
        let types = schema
            .node_types
            .iter()
            .enumerate()
            .map(|(t, ty)| {
                let inputs = schema
                    .relations
                    .iter()
                    .enumerate()
                    .filter(|(_, r)| r.dst as usize == t)
                    .filter_map(|(j, r)| Some((j, schema.node_types.get(r.src as usize)?.ids())))
                    .collect();
                (ty.offset + ty.count, inputs)
            })
            .collect();
        PerRelation {
            relations: schema
                .relations
                .iter()
                .map(|r| schema.canonical(r))
                .collect(),
            hops,
            types,
        }
    }
}

impl From<Vec<i64>> for ResolvedFanouts {
    fn from(f: Vec<i64>) -> Self {
        ResolvedFanouts(Resolved::Uniform(f), SamplerConfig::default())
    }
}

impl From<&[i64]> for ResolvedFanouts {
    fn from(f: &[i64]) -> Self {
        ResolvedFanouts(Resolved::Uniform(f.to_vec()), SamplerConfig::default())
    }
}

impl ResolvedFanouts {
    /// These fanouts drawn by `sampler` (checked: LABOR options only with
    /// a LABOR sampler).
    pub fn with_sampler(self, sampler: impl Into<SamplerConfig>) -> Result<Self> {
        let sampler = sampler.into();
        sampler.check()?;
        Ok(ResolvedFanouts(self.0, sampler))
    }

    /// The sampler that draws these fanouts.
    pub fn sampler(&self) -> SamplerConfig {
        self.1
    }

    /// What a LABOR runtime file's `run` record holds of the sampler
    /// (None: neighbor sampling).
    pub fn sampler_stamp(&self) -> Option<crate::format::runtime::SamplerStamp> {
        let s = self.1;
        (!s.is_neighbor()).then_some(crate::format::runtime::SamplerStamp {
            sampler: s.sampler.code(),
            layer_dependency: s.layer_dependency,
            batch_dependency: s.batch_dependency,
        })
    }

    /// Calls `group(run, k)` for each candidate group of target `v`'s
    /// in-list `list` at hop `hop` (LABOR): the whole list with the hop's
    /// count, or each relation run of a typed store's list with its
    /// relation's count (relations with count 0 left out).
    pub(crate) fn groups(
        &self,
        hop: usize,
        v: u64,
        list: &[u64],
        mut group: impl FnMut(Range<usize>, i64),
    ) {
        match &self.0 {
            Resolved::Uniform(f) => {
                let k = f.get(hop).copied().unwrap_or(0);
                if k != 0 {
                    group(0..list.len(), k);
                }
            }
            Resolved::PerRelation(p) => {
                let t = p.types.partition_point(|(end, _)| *end <= v);
                let (Some((_, inputs)), Some(counts)) = (p.types.get(t), p.hops.get(hop)) else {
                    return;
                };
                for (r, src) in inputs {
                    let k = counts.get(*r).copied().unwrap_or(0);
                    if k == 0 {
                        continue;
                    }
                    let lo = list.partition_point(|&u| u < src.start);
                    let hi = list.partition_point(|&u| u < src.end);
                    group(lo..hi, k);
                }
            }
        }
    }

    /// Hops sampled.
    pub fn num_hops(&self) -> usize {
        match &self.0 {
            Resolved::Uniform(f) => f.len(),
            Resolved::PerRelation(p) => p.hops.len(),
        }
    }

    /// The counts of one list for all relations, else None.
    pub fn uniform(&self) -> Option<&[i64]> {
        match &self.0 {
            Resolved::Uniform(f) => Some(f),
            Resolved::PerRelation(_) => None,
        }
    }

    /// What a runtime file's `run` record holds: the uniform counts (empty
    /// for per-relation fanouts) and the per-relation counts (None for one
    /// list for all).
    pub fn stamp(&self) -> (Vec<i64>, Option<RelationFanoutsStamp>) {
        match &self.0 {
            Resolved::Uniform(f) => (f.clone(), None),
            Resolved::PerRelation(p) => (
                Vec::new(),
                Some(RelationFanoutsStamp {
                    relations: p.relations.clone(),
                    hops: p.hops.clone(),
                }),
            ),
        }
    }

    /// Draws target `v`'s in-neighbours of hop `hop` out of its sorted
    /// in-list `list`: their positions in `list`, sorted, into `out`
    /// (`scratch` is working space).
    pub(crate) fn draw(
        &self,
        hop: usize,
        v: u64,
        list: &[u64],
        rng: &mut Wyrand,
        out: &mut Vec<usize>,
        scratch: &mut Vec<usize>,
    ) {
        match &self.0 {
            Resolved::Uniform(f) => {
                let k = f.get(hop).copied().unwrap_or(0);
                let want = if k < 0 { list.len() } else { k as usize };
                draw_positions(rng, list.len(), want, out);
            }
            Resolved::PerRelation(_) => {
                // Each relation's run of the list, with its own count.
                out.clear();
                self.groups(hop, v, list, |run, k| {
                    let want = if k < 0 { run.len() } else { k as usize };
                    draw_positions(rng, run.len(), want, scratch);
                    out.extend(scratch.iter().map(|&p| run.start + p));
                });
                out.sort_unstable();
            }
        }
    }
}

/// Draws `k` distinct positions out of `0..d` uniformly (Floyd's
/// algorithm), returned sorted.
pub(crate) fn draw_positions(rng: &mut Wyrand, d: usize, k: usize, out: &mut Vec<usize>) {
    out.clear();
    if k >= d {
        out.extend(0..d);
        return;
    }
    for j in d - k..d {
        let t = rng.below(j as u64 + 1) as usize;
        if out.contains(&t) {
            out.push(j);
        } else {
            out.push(t);
        }
    }
    out.sort_unstable();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::schema::test_schema;

    #[test]
    fn too_many_hops_and_the_option_name_are_said_when_parsed() {
        let many = vec!["1"; MAX_RUN_FANOUTS + 1].join(",");
        let err = Fanouts::parse(&many).unwrap_err().to_string();
        assert!(
            err.contains("65 hops; at most 64 are supported (MAX_RUN_FANOUTS)"),
            "{err}"
        );
        Fanouts::parse(&vec!["1"; MAX_RUN_FANOUTS].join(",")).unwrap();
        let err = Fanouts::parse_as("0", "--eval-fanouts")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("--eval-fanouts \"0\": each fanout must be positive or -1"),
            "{err}"
        );
        assert!(!err.contains("--fanouts"), "{err}");
    }

    fn schema() -> Schema {
        test_schema(
            &[
                ("paper", 0, 10, 4),
                ("author", 10, 10, 4),
                ("field", 20, 5, 4),
            ],
            &[
                (0, "cites", 0, 0),
                (1, "writes", 0, 0),
                (0, "written_by", 1, 0),
                (2, "to", 0, 0),
                (2, "to", 1, 0),
            ],
        )
    }

    #[test]
    fn both_forms_parse_and_display_round_trip() {
        let u = Fanouts::parse("10, 5,-1").unwrap();
        assert_eq!(u, Fanouts::Uniform(vec![10, 5, -1]));
        assert_eq!(u.to_string(), "10,5,-1");
        let p = Fanouts::parse("cites=10:5, writes = 5:0,*=2:1").unwrap();
        let Fanouts::PerRelation(r) = &p else {
            panic!("{p:?}")
        };
        assert_eq!(
            r.relations,
            [("cites".into(), vec![10, 5]), ("writes".into(), vec![5, 0])]
        );
        assert_eq!(r.others, [2, 1]);
        assert_eq!(p.num_hops(), 2);
        assert_eq!(p.to_string(), "cites=10:5,writes=5:0,*=2:1");
        assert_eq!(Fanouts::parse(&p.to_string()).unwrap(), p);
        let canonical = Fanouts::parse("paper:cites:paper=-1").unwrap();
        assert_eq!(canonical.to_string(), "paper:cites:paper=-1");
        let by_hop = Fanouts::per_hop([
            vec![("cites", 10), ("writes", 5)],
            vec![("cites", 5), ("*", 2)],
        ])
        .unwrap();
        assert_eq!(by_hop.to_string(), "cites=10:5,writes=5:2,*=0:2");
        let json = serde_json::to_string(&[u.clone(), p.clone()]).unwrap();
        assert_eq!(json, r#"[[10,5,-1],"cites=10:5,writes=5:0,*=2:1"]"#);
        let back: Vec<Fanouts> = serde_json::from_str(&json).unwrap();
        assert_eq!(back, [u, p]);
    }

    #[test]
    fn malformed_fanouts_are_refused_naming_the_flag() {
        for (text, want) in [
            ("", "expected comma-separated integers"),
            ("5,0", "each fanout must be positive or -1"),
            ("10:5", "expected comma-separated integers"),
            (
                "cites=10:5,writes=5",
                "writes gives 1 hops but cites gives 2",
            ),
            ("cites=10,cites=5", "cites is given twice"),
            ("cites=10,*=1,*=2", "`*` is given twice"),
            ("cites=x", "expected counts separated by `:`"),
            ("cites=10,5", "`5` names no relation"),
            ("cites=-2", "count -2: each count must be 0 or more, or -1"),
            ("=3", "`` is not a relation name"),
        ] {
            let err = Fanouts::parse(text).unwrap_err().to_string();
            assert!(
                err.contains(&format!("--fanouts {text:?}")) && err.contains(want),
                "{text}: {err}"
            );
        }
    }

    #[test]
    fn resolving_binds_names_to_the_schema() {
        let s = schema();
        let f = Fanouts::parse("cites=3:1,author:writes:paper=2:0,*=1:-1").unwrap();
        let r = f.resolve(Some(&s)).unwrap();
        let (uniform, stamp) = r.stamp();
        assert!(uniform.is_empty());
        let stamp = stamp.unwrap();
        assert_eq!(stamp.relations[3], "field:to:paper");
        assert_eq!(stamp.hops, [vec![3, 2, 1, 1, 1], vec![1, 0, -1, -1, -1]]);
        // One list for all needs no schema and stamps as before.
        let u = Fanouts::from(vec![4, 2]).resolve(None).unwrap();
        assert_eq!(u.stamp(), (vec![4, 2], None));
        assert_eq!(u, ResolvedFanouts::from(vec![4, 2]));
        for (text, schema, want) in [
            ("cites=1", None, "need a typed store"),
            (
                "citez=1",
                Some(&s),
                "no relation `citez`; its relations: paper:cites:paper, author:writes:paper",
            ),
            (
                "to=1",
                Some(&s),
                "`to` names 2 relations (field:to:paper, field:to:author)",
            ),
            (
                "cites=1,paper:cites:paper=2",
                Some(&s),
                "`cites` and `paper:cites:paper` both name paper:cites:paper",
            ),
        ] {
            let err = Fanouts::parse(text)
                .unwrap()
                .resolve(schema)
                .unwrap_err()
                .to_string();
            assert!(
                err.contains("--fanouts") && err.contains(want),
                "{text}: {err}"
            );
        }
    }

    #[test]
    fn per_relation_draws_stay_inside_each_relation_run() {
        let s = schema();
        // Paper 3's in-list: papers 0..4, authors 10..16, fields 20..22.
        let list: Vec<u64> = (0..4).chain(10..16).chain(20..22).collect();
        let f = Fanouts::parse("cites=2,writes=-1,*=1").unwrap();
        let r = f.resolve(Some(&s)).unwrap();
        let (mut out, mut scratch) = (Vec::new(), Vec::new());
        for seed in 0..50 {
            r.draw(0, 3, &list, &mut Wyrand(seed), &mut out, &mut scratch);
            let ids: Vec<u64> = out.iter().map(|&p| list[p]).collect();
            assert!(out.windows(2).all(|w| w[0] < w[1]), "{out:?}");
            assert_eq!(ids.iter().filter(|&&u| u < 10).count(), 2, "{ids:?}");
            assert_eq!(ids.iter().filter(|&&u| (10..20).contains(&u)).count(), 6);
            assert_eq!(ids.iter().filter(|&&u| u >= 20).count(), 1);
        }
        // An author hears only from papers (written_by) and fields (to).
        r.draw(0, 12, &list, &mut Wyrand(1), &mut out, &mut scratch);
        let ids: Vec<u64> = out.iter().map(|&p| list[p]).collect();
        assert_eq!(ids.iter().filter(|&&u| u < 10).count(), 1, "{ids:?}");
        assert_eq!(ids.iter().filter(|&&u| (10..20).contains(&u)).count(), 0);
    }
}
