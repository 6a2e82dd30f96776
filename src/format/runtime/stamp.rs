//! The run stamp: the first record of every runtime file, naming the
//! store, the run and the parameters that shaped it (`format/runtime.md`,
//! "The run record").

use std::path::Path;

use bincode::de::read::Reader;
use bincode::de::Decoder;
use bincode::enc::Encoder;
use bincode::error::{DecodeError, EncodeError};
use bincode::{Decode, Encode};

use super::{decode_payload, encode_payload, Seq, MAX_RUN_FANOUTS};
use crate::error::{Error, Result};
use crate::format::version::{Version, V1_3, V1_4, V1_6, V1_8, V1_9};

/// What a runtime file belongs to: its store, its run (seed, epoch,
/// seed order) and the parameters that shaped it: the `run` payload
/// (fields in declaration order), the first record of every runtime file;
/// the executor and `ginex-dump --verify` refuse a file whose stamp is not
/// the expected one. Encoded field by field as bincode encodes them, its
/// fanouts as a [`Seq`]; `relation_fanouts`, when there are some, after
/// the last field (a v1.4 file; without them the payload and the file are
/// v1.3's, byte for byte).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunStamp {
    /// CRC-32 of the store manifest's payload (`sample::neighbor_cache::store_identity`).
    pub store_id: u32,
    /// The run seed.
    pub seed: u64,
    /// The epoch.
    pub epoch: u64,
    /// CRC-32 of the seed-node order when one was given (evaluation,
    /// prediction); 0 for the training split shuffled per epoch.
    pub seed_order: u32,
    /// Superbatch index.
    pub superbatch: u64,
    /// The superbatch's first batch within the epoch.
    pub first_batch: u64,
    /// Batches in the superbatch.
    pub num_batches: u64,
    /// Seeds per batch.
    pub batch_size: u64,
    /// Fanouts, one count per hop for all relations, as given (input
    /// layer last); empty when the run samples per relation.
    pub fanouts: Vec<i64>,
    /// Feature-cache capacity in rows.
    pub cache_rows: u64,
    /// k of the k-hop approximation (1 = exact).
    pub changeset_every: u64,
    /// Whether the superbatch's cache starts with the previous one's.
    pub carry_over: bool,
    /// Whether nodes with no use left in the superbatch are ranked by a
    /// reuse prior (out-degree) instead of dropped.
    pub reuse_prior: bool,
    /// Per-relation fanouts (v1.4), None for one count per hop.
    pub relation_fanouts: Option<RelationFanoutsStamp>,
    /// A link run's negatives and exclusion (v1.6), None for node batches.
    pub link: Option<LinkStamp>,
    /// The LABOR sampler the run samples with (v1.8), None for neighbor
    /// sampling.
    pub sampler: Option<SamplerStamp>,
}

/// What makes a run's batches link batches: the `link` of a v1.6 `run`
/// record (its samples file has a `link` record after each `adj`). Its
/// bincode encoding is K and `undirected`; a v1.9 record follows them
/// with the exclusion byte ([`RunStamp::version`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LinkStamp {
    /// Negatives per positive edge (K).
    pub neg: u64,
    /// Whether each positive's reverse edge is excluded too (undirected).
    pub undirected: bool,
    /// The batches keep their own edges in their neighbourhoods
    /// (`--exclude none`, v1.9); false: each batch leaves them out
    /// (`--exclude self`, every file before 1.9).
    pub own_edges_kept: bool,
}

impl Encode for LinkStamp {
    fn encode<E: Encoder>(&self, e: &mut E) -> std::result::Result<(), EncodeError> {
        self.neg.encode(e)?;
        self.undirected.encode(e)
    }
}

/// K and `undirected` (`own_edges_kept` false: the v1.6 and v1.8 link).
impl<C> Decode<C> for LinkStamp {
    fn decode<D: Decoder<Context = C>>(d: &mut D) -> std::result::Result<Self, DecodeError> {
        Ok(LinkStamp {
            neg: u64::decode(d)?,
            undirected: bool::decode(d)?,
            own_edges_kept: false,
        })
    }
}
bincode::impl_borrow_decode!(LinkStamp);

/// The codes of a `run` record's `sampler` field and the `--sampler`
/// names they stand for (format/runtime.md); `sample::labor::Sampler`
/// writes and reads them.
pub const SAMPLER_CODES: [(u8, &str); 4] = [
    (0, "neighbor"),
    (1, "labor-0"),
    (2, "labor-1"),
    (3, "labor-*"),
];

/// A LABOR run's sampler: the `sampler` of a v1.8 `run` record.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Encode, Decode)]
pub struct SamplerStamp {
    /// 1 = `labor-0`, 2 = `labor-1`, 3 = `labor-*`
    /// (`sample::labor::Sampler::code`).
    pub sampler: u8,
    /// `--layer-dependency`.
    pub layer_dependency: bool,
    /// `--batch-dependency` (at least 1).
    pub batch_dependency: u64,
}

impl SamplerStamp {
    /// As the flags take it: `labor-0, layer dependency, batch dependency 4`.
    pub fn describe(&self) -> String {
        let name = SAMPLER_CODES
            .iter()
            .find(|(code, _)| *code == self.sampler)
            .map_or_else(
                || format!("sampler {}", self.sampler),
                |(_, n)| n.to_string(),
            );
        let mut out = name;
        if self.layer_dependency {
            out.push_str(" with layer dependency");
        }
        if self.batch_dependency > 1 {
            out.push_str(&format!(", batch dependency {}", self.batch_dependency));
        }
        out
    }
}

/// The per-relation fanouts a run samples with, bound to its store's
/// schema: the `relation_fanouts` of a v1.4 `run` record.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RelationFanoutsStamp {
    /// Every relation of the store, as its canonical `src:name:dst`, in
    /// schema order (at most [`MAX_STAMP_RELATIONS`], names of at most
    /// 255 bytes).
    pub relations: Vec<String>,
    /// Per hop, seeds' hop first (at most [`MAX_RUN_FANOUTS`]): each
    /// relation's count (-1 = all, 0 = none), as many as `relations`.
    pub hops: Vec<Vec<i64>>,
}

/// Most relations a [`RelationFanoutsStamp`] lists (a schema's most).
pub const MAX_STAMP_RELATIONS: usize = crate::format::schema::MAX_TYPES;

impl Encode for RelationFanoutsStamp {
    fn encode<E: Encoder>(&self, e: &mut E) -> std::result::Result<(), EncodeError> {
        self.relations.encode(e)?;
        (self.hops.len() as u64).encode(e)?;
        self.hops
            .iter()
            .try_for_each(|h| Seq::borrowed(h).encode(e))
    }
}

impl<C> Decode<C> for RelationFanoutsStamp {
    fn decode<D: Decoder<Context = C>>(d: &mut D) -> std::result::Result<Self, DecodeError> {
        let count = u64::decode(d)?;
        if count > MAX_STAMP_RELATIONS as u64 {
            return Err(DecodeError::Other("more than 65536 relations"));
        }
        let mut relations = Vec::with_capacity(count as usize);
        for _ in 0..count {
            let len = u64::decode(d)?;
            if len == 0 || len > 255 {
                return Err(DecodeError::Other("a relation name of 0 or over 255 bytes"));
            }
            d.claim_container_read::<u8>(len as usize)?;
            let mut name = vec![0u8; len as usize];
            d.reader().read(&mut name)?;
            let name = String::from_utf8(name)
                .map_err(|_| DecodeError::Other("a relation name is not UTF-8"))?;
            relations.push(name);
        }
        let hops = u64::decode(d)?;
        if hops > MAX_RUN_FANOUTS as u64 {
            return Err(DecodeError::Other("more than 64 hops of relation fanouts"));
        }
        let hops = (0..hops)
            .map(|_| {
                let h = Seq::<i64>::decode(d)?.into_vec();
                if h.len() == relations.len() {
                    Ok(h)
                } else {
                    Err(DecodeError::Other(
                        "a hop of relation fanouts has not one count per relation",
                    ))
                }
            })
            .collect::<std::result::Result<_, _>>()?;
        Ok(RelationFanoutsStamp { relations, hops })
    }
}

impl RelationFanoutsStamp {
    /// As `--fanouts` takes them: `cites=10:5,writes=5:5` (each relation
    /// that draws at some hop, by its name when no other relation has it,
    /// else in full; `*=0:…` when none draws).
    pub fn describe(&self) -> String {
        let short = |full: &str| -> String {
            let name = full.split(':').nth(1).unwrap_or(full);
            let same = self
                .relations
                .iter()
                .filter(|r| r.split(':').nth(1) == Some(name))
                .count();
            if same == 1 { name } else { full }.to_string()
        };
        let counts = |r: usize| -> Vec<String> {
            self.hops
                .iter()
                .map(|h| h.get(r).copied().unwrap_or(0).to_string())
                .collect()
        };
        let parts: Vec<String> = (self.relations.iter().enumerate())
            .filter(|&(r, _)| self.hops.iter().any(|h| h.get(r).is_some_and(|&k| k != 0)))
            .map(|(r, name)| format!("{}={}", short(name), counts(r).join(":")))
            .collect();
        if parts.is_empty() {
            format!("*={}", vec!["0"; self.hops.len()].join(":"))
        } else {
            parts.join(",")
        }
    }
}

impl Encode for RunStamp {
    fn encode<E: Encoder>(&self, e: &mut E) -> std::result::Result<(), EncodeError> {
        self.store_id.encode(e)?;
        self.seed.encode(e)?;
        self.epoch.encode(e)?;
        self.seed_order.encode(e)?;
        self.superbatch.encode(e)?;
        self.first_batch.encode(e)?;
        self.num_batches.encode(e)?;
        self.batch_size.encode(e)?;
        Seq::borrowed(&self.fanouts).encode(e)?;
        self.cache_rows.encode(e)?;
        self.changeset_every.encode(e)?;
        self.carry_over.encode(e)?;
        self.reuse_prior.encode(e)?;
        if self.version() == V1_9 {
            // v1.9: relation fanouts, the link (with its exclusion byte)
            // and the sampler, each behind a presence byte.
            u8::from(self.relation_fanouts.is_some()).encode(e)?;
            if let Some(r) = &self.relation_fanouts {
                r.encode(e)?;
            }
            u8::from(self.link.is_some()).encode(e)?;
            if let Some(link) = &self.link {
                link.encode(e)?;
                u8::from(link.own_edges_kept).encode(e)?;
            }
            u8::from(self.sampler.is_some()).encode(e)?;
            if let Some(s) = &self.sampler {
                s.encode(e)?;
            }
            return Ok(());
        }
        match (&self.relation_fanouts, &self.link, &self.sampler) {
            (Some(r), None, None) => r.encode(e),
            (None, None, None) => Ok(()),
            // v1.6: relation fanouts behind a presence byte, then the link.
            (r, Some(link), None) => {
                u8::from(r.is_some()).encode(e)?;
                if let Some(r) = r {
                    r.encode(e)?;
                }
                link.encode(e)
            }
            // v1.8: relation fanouts and the link each behind a presence
            // byte, then the sampler.
            (r, link, Some(s)) => {
                u8::from(r.is_some()).encode(e)?;
                if let Some(r) = r {
                    r.encode(e)?;
                }
                u8::from(link.is_some()).encode(e)?;
                if let Some(link) = link {
                    link.encode(e)?;
                }
                s.encode(e)
            }
        }
    }
}

/// A v1.3 `run` payload: every field but `relation_fanouts`.
impl<C> Decode<C> for RunStamp {
    fn decode<D: Decoder<Context = C>>(d: &mut D) -> std::result::Result<Self, DecodeError> {
        // Struct-literal fields are evaluated in the order written: the
        // declaration order, as the encoder writes them.
        Ok(RunStamp {
            store_id: u32::decode(d)?,
            seed: u64::decode(d)?,
            epoch: u64::decode(d)?,
            seed_order: u32::decode(d)?,
            superbatch: u64::decode(d)?,
            first_batch: u64::decode(d)?,
            num_batches: u64::decode(d)?,
            batch_size: u64::decode(d)?,
            fanouts: Seq::<i64>::decode(d)?.into_vec(),
            cache_rows: u64::decode(d)?,
            changeset_every: u64::decode(d)?,
            carry_over: bool::decode(d)?,
            reuse_prior: bool::decode(d)?,
            relation_fanouts: None,
            link: None,
            sampler: None,
        })
    }
}
bincode::impl_borrow_decode!(RunStamp);

/// A v1.4 `run` payload: a v1.3 one, then `relation_fanouts`.
struct RunStampV14(RunStamp);

impl<C> Decode<C> for RunStampV14 {
    fn decode<D: Decoder<Context = C>>(d: &mut D) -> std::result::Result<Self, DecodeError> {
        let mut stamp = <RunStamp as Decode<C>>::decode(d)?;
        stamp.relation_fanouts = Some(RelationFanoutsStamp::decode(d)?);
        Ok(RunStampV14(stamp))
    }
}
bincode::impl_borrow_decode!(RunStampV14);

/// A v1.6 `run` payload: a v1.3 one, a presence byte (0 or 1) and then
/// `relation_fanouts` when it is 1, then `link`.
struct RunStampV16(RunStamp);

impl<C> Decode<C> for RunStampV16 {
    fn decode<D: Decoder<Context = C>>(d: &mut D) -> std::result::Result<Self, DecodeError> {
        let mut stamp = <RunStamp as Decode<C>>::decode(d)?;
        stamp.relation_fanouts = match u8::decode(d)? {
            0 => None,
            1 => Some(RelationFanoutsStamp::decode(d)?),
            _ => return Err(DecodeError::Other("a presence byte other than 0 or 1")),
        };
        stamp.link = Some(LinkStamp::decode(d)?);
        Ok(RunStampV16(stamp))
    }
}
bincode::impl_borrow_decode!(RunStampV16);

/// A v1.8 `run` payload: a v1.3 one, a presence byte and then
/// `relation_fanouts` when it is 1, a presence byte and then `link` when it
/// is 1, then `sampler`.
struct RunStampV18(RunStamp);

/// An optional part behind a presence byte (0 or 1).
fn present<D: Decoder>(d: &mut D) -> std::result::Result<bool, DecodeError> {
    match u8::decode(d)? {
        0 => Ok(false),
        1 => Ok(true),
        _ => Err(DecodeError::Other("a presence byte other than 0 or 1")),
    }
}

/// A LABOR sampler stamp, checked.
fn labor_sampler<D: Decoder>(d: &mut D) -> std::result::Result<SamplerStamp, DecodeError> {
    let sampler = SamplerStamp::decode(d)?;
    if !(1..=3).contains(&sampler.sampler) || sampler.batch_dependency == 0 {
        return Err(DecodeError::Other(
            "a sampler other than 1..=3 or a batch dependency of 0",
        ));
    }
    Ok(sampler)
}

impl<C> Decode<C> for RunStampV18 {
    fn decode<D: Decoder<Context = C>>(d: &mut D) -> std::result::Result<Self, DecodeError> {
        let mut stamp = <RunStamp as Decode<C>>::decode(d)?;
        if present(d)? {
            stamp.relation_fanouts = Some(RelationFanoutsStamp::decode(d)?);
        }
        if present(d)? {
            stamp.link = Some(LinkStamp::decode(d)?);
        }
        stamp.sampler = Some(labor_sampler(d)?);
        Ok(RunStampV18(stamp))
    }
}
bincode::impl_borrow_decode!(RunStampV18);

/// A v1.9 `run` payload: a v1.3 one, then relation fanouts, the link
/// (K, undirected, then its exclusion byte: 0 = its own edges left out,
/// 1 = kept) and the sampler, each behind a presence byte.
struct RunStampV19(RunStamp);

impl<C> Decode<C> for RunStampV19 {
    fn decode<D: Decoder<Context = C>>(d: &mut D) -> std::result::Result<Self, DecodeError> {
        let mut stamp = <RunStamp as Decode<C>>::decode(d)?;
        if present(d)? {
            stamp.relation_fanouts = Some(RelationFanoutsStamp::decode(d)?);
        }
        if present(d)? {
            let mut link = LinkStamp::decode(d)?;
            link.own_edges_kept = match u8::decode(d)? {
                0 => false,
                1 => true,
                _ => return Err(DecodeError::Other("a link exclusion other than 0 or 1")),
            };
            stamp.link = Some(link);
        }
        if present(d)? {
            stamp.sampler = Some(labor_sampler(d)?);
        }
        Ok(RunStampV19(stamp))
    }
}
bincode::impl_borrow_decode!(RunStampV19);

impl RunStamp {
    /// The version of a runtime file holding this stamp: 1.9 for link
    /// batches that keep their own edges (`--exclude none`), else 1.8 with
    /// a LABOR sampler, else 1.6 for link batches, else 1.4 with
    /// per-relation fanouts, else 1.3.
    pub fn version(&self) -> Version {
        if self.link.is_some_and(|l| l.own_edges_kept) {
            V1_9
        } else if self.sampler.is_some() {
            V1_8
        } else if self.link.is_some() {
            V1_6
        } else if self.relation_fanouts.is_some() {
            V1_4
        } else {
            V1_3
        }
    }

    /// The run record's payload.
    pub fn encode(&self) -> Result<Vec<u8>> {
        encode_payload(self, 96 + 8 * self.fanouts.len())
    }

    /// Decodes a run record's payload found at byte `base` of `path`, a
    /// runtime file of format `version` (1.4: with relation fanouts).
    pub fn decode(p: &[u8], path: &Path, base: u64, version: Version) -> Result<RunStamp> {
        let bad = |what: String| Error::corrupt(path, base, format!("run record: {what}"));
        let stamp: RunStamp = if version >= V1_9 {
            decode_payload::<RunStampV19>(p).map_err(bad)?.0
        } else if version >= V1_8 {
            decode_payload::<RunStampV18>(p).map_err(bad)?.0
        } else if version >= V1_6 {
            decode_payload::<RunStampV16>(p).map_err(bad)?.0
        } else if version >= V1_4 {
            decode_payload::<RunStampV14>(p).map_err(bad)?.0
        } else {
            decode_payload(p).map_err(bad)?
        };
        if stamp.fanouts.len() > MAX_RUN_FANOUTS {
            return Err(bad(format!(
                "{} fanouts (at most {MAX_RUN_FANOUTS})",
                stamp.fanouts.len()
            )));
        }
        Ok(stamp)
    }

    /// The fanouts as `--fanouts` takes them.
    pub fn describe_fanouts(&self) -> String {
        match &self.relation_fanouts {
            Some(r) => r.describe(),
            None => self
                .fanouts
                .iter()
                .map(i64::to_string)
                .collect::<Vec<_>>()
                .join(","),
        }
    }

    /// Every field as `(name, value)`, in record order, for messages and
    /// dumps.
    pub fn fields(&self) -> Vec<(&'static str, String)> {
        vec![
            ("store", format!("{:#010x}", self.store_id)),
            ("seed", self.seed.to_string()),
            ("epoch", self.epoch.to_string()),
            (
                "seed order",
                if self.seed_order == 0 {
                    "train split".to_string()
                } else {
                    format!("{:#010x}", self.seed_order)
                },
            ),
            ("superbatch", self.superbatch.to_string()),
            ("first batch", self.first_batch.to_string()),
            ("batches", self.num_batches.to_string()),
            ("batch size", self.batch_size.to_string()),
            ("fanouts", self.describe_fanouts()),
            ("cache rows", self.cache_rows.to_string()),
            ("k", self.changeset_every.to_string()),
            ("carry-over", self.carry_over.to_string()),
            ("reuse prior", self.reuse_prior.to_string()),
            (
                "task",
                match self.link {
                    None => "node".to_string(),
                    Some(l) => format!(
                        "link (neg {}{}{})",
                        l.neg,
                        if l.undirected { ", undirected" } else { "" },
                        if l.own_edges_kept {
                            ", exclude none"
                        } else {
                            ""
                        }
                    ),
                },
            ),
            (
                "sampler",
                self.sampler
                    .map_or_else(|| "neighbor".to_string(), |s| s.describe()),
            ),
        ]
    }

    /// One line: `store 0x1234abcd, seed 1, epoch 0, …`.
    pub fn describe(&self) -> String {
        self.fields()
            .into_iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The fields that differ from `expected`, each as `NAME: expected X,
    /// found Y`; empty when the stamps are equal.
    pub fn differences(&self, expected: &RunStamp) -> Vec<String> {
        self.differences_as(expected, "expected", "found")
    }

    /// As [`differences`](Self::differences), with `other`'s value labelled
    /// `other_label` and ours `own_label`.
    pub fn differences_as(
        &self,
        other: &RunStamp,
        other_label: &str,
        own_label: &str,
    ) -> Vec<String> {
        other
            .fields()
            .into_iter()
            .zip(self.fields())
            .filter(|(e, f)| e.1 != f.1)
            .map(|((name, e), (_, f))| format!("{name}: {other_label} {e}, {own_label} {f}"))
            .collect()
    }

    /// Refuses `path` unless its stamp (`self`) is `expected`, naming the
    /// file, each differing field with both values, and what to do.
    pub fn check(&self, expected: &RunStamp, path: &Path) -> Result<()> {
        if self == expected {
            return Ok(());
        }
        let mut diff = self.differences(expected);
        if diff.is_empty() {
            diff.push("relation fanouts differ".into());
        }
        let whose = if self.store_id != expected.store_id {
            "another store"
        } else {
            "another run or superbatch"
        };
        Err(Error::invalid_argument(format!(
            "{}: runtime file of {whose}, refused ({}); delete it and run the inspector again",
            path.display(),
            diff.join("; ")
        )))
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::format::runtime::tests::le;

    /// A v1.3 stamp (one list of fanouts for all relations).
    pub(in super::super) fn stamp() -> RunStamp {
        RunStamp {
            store_id: 0xdead_beef,
            seed: 7,
            epoch: 2,
            seed_order: 0,
            superbatch: 3,
            first_batch: 30,
            num_batches: 10,
            batch_size: 64,
            fanouts: vec![10, -1],
            cache_rows: 500,
            changeset_every: 1,
            carry_over: true,
            reuse_prior: true,
            relation_fanouts: None,
            link: None,
            sampler: None,
        }
    }

    #[test]
    fn run_stamp_round_trips_and_names_what_differs() {
        let s = stamp();
        let p = s.encode().unwrap();
        assert_eq!(RunStamp::decode(&p, Path::new("r"), 0, V1_3).unwrap(), s);
        for (carry_over, reuse_prior) in [(true, false), (false, true), (false, false)] {
            let t = RunStamp {
                carry_over,
                reuse_prior,
                ..s.clone()
            };
            let q = t.encode().unwrap();
            assert_eq!(RunStamp::decode(&q, Path::new("r"), 0, V1_3).unwrap(), t);
        }
        // A flag byte other than 0 or 1 is corruption.
        let mut unknown = p.clone();
        let last = unknown.len() - 1;
        unknown[last] = 2;
        let err = RunStamp::decode(&unknown, Path::new("r"), 64, V1_3)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("run record") && err.contains("invalid boolean 2"),
            "{err}"
        );
        for cut in 0..p.len() {
            assert!(RunStamp::decode(&p[..cut], Path::new("r"), 0, V1_3).is_err());
        }
        let mut longer = p.clone();
        longer.push(0);
        let err = RunStamp::decode(&longer, Path::new("r"), 0, V1_3)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("unexpected bytes after the last field"),
            "{err}"
        );
        let many = RunStamp {
            fanouts: vec![1; MAX_RUN_FANOUTS + 1],
            ..s.clone()
        };
        let err = RunStamp::decode(&many.encode().unwrap(), Path::new("r"), 0, V1_3)
            .unwrap_err()
            .to_string();
        assert!(err.contains("65 fanouts (at most 64)"), "{err}");
        let mut other = s.clone();
        other.seed = 8;
        other.store_id = 1;
        let err = other
            .check(&s, Path::new("sb-000003.samples"))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("sb-000003.samples")
                && err.contains("another store")
                && err.contains("seed: expected 7, found 8")
                && err.contains("store: expected 0xdeadbeef, found 0x00000001"),
            "{err}"
        );
        assert!(s.check(&s, Path::new("x")).is_ok());
    }

    /// A link run's stamp makes a v1.6 run record: the v1.3 fields, the
    /// presence byte of relation fanouts (and them), then the link (the
    /// bytes format/runtime.md spells out); each decodes only as 1.6.
    #[test]
    fn link_makes_a_v1_6_run_record() {
        let link = LinkStamp {
            neg: 5,
            undirected: true,
            own_edges_kept: false,
        };
        let s = RunStamp {
            link: Some(link),
            ..stamp()
        };
        assert_eq!(s.version(), V1_6);
        let mut want = stamp().encode().unwrap();
        assert_eq!(want.len(), 82 + 16);
        want.push(0);
        want.extend(le(&[5]));
        want.push(1);
        let p = s.encode().unwrap();
        assert_eq!(p, want);
        assert_eq!(RunStamp::decode(&p, Path::new("r"), 0, V1_6).unwrap(), s);
        assert!(RunStamp::decode(&p, Path::new("r"), 0, V1_4).is_err());
        assert!(RunStamp::decode(&stamp().encode().unwrap(), Path::new("r"), 0, V1_6).is_err());
        // With relation fanouts: presence byte 1, then the v1.4 block.
        let r = RunStamp {
            link: Some(link),
            ..relation_stamp()
        };
        let v14 = relation_stamp().encode().unwrap();
        let mut want = v14[..82].to_vec();
        want.push(1);
        want.extend(&v14[82..]);
        want.extend(le(&[5]));
        want.push(1);
        let p = r.encode().unwrap();
        assert_eq!(p, want);
        assert_eq!(RunStamp::decode(&p, Path::new("r"), 0, V1_6).unwrap(), r);
        let mut bad = p.clone();
        bad[82] = 2;
        assert!(RunStamp::decode(&bad, Path::new("r"), 0, V1_6).is_err());
        // A node run's file is refused by a link run, naming the task.
        let err = s
            .check(&stamp(), Path::new("sb-000003.samples"))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("task: expected node, found link (neg 5, undirected)"),
            "{err}"
        );
    }

    /// A link run that keeps its batches' own edges (`--exclude none`)
    /// makes a v1.9 run record: the v1.3 fields, then relation fanouts,
    /// the link with its exclusion byte and the sampler, each behind a
    /// presence byte (the bytes format/runtime.md spells out); only a 1.9
    /// reader takes it, and the check names the exclusion.
    #[test]
    fn a_link_run_keeping_its_own_edges_makes_a_v1_9_run_record() {
        let link = LinkStamp {
            neg: 5,
            undirected: true,
            own_edges_kept: true,
        };
        let s = RunStamp {
            link: Some(link),
            ..stamp()
        };
        assert_eq!(s.version(), V1_9);
        let mut want = stamp().encode().unwrap();
        want.extend([0, 1]);
        want.extend(le(&[5]));
        want.extend([1, 1, 0]);
        let p = s.encode().unwrap();
        assert_eq!(p, want);
        assert_eq!(RunStamp::decode(&p, Path::new("r"), 0, V1_9).unwrap(), s);
        assert!(RunStamp::decode(&p, Path::new("r"), 0, V1_8).is_err());
        assert!(RunStamp::decode(&p, Path::new("r"), 0, V1_6).is_err());
        let mut bad = p.clone();
        let at = p.len() - 2;
        bad[at] = 2;
        let err = RunStamp::decode(&bad, Path::new("r"), 0, V1_9)
            .unwrap_err()
            .to_string();
        assert!(err.contains("link exclusion"), "{err}");
        // With relation fanouts and a LABOR sampler too.
        let sampler = SamplerStamp {
            sampler: 1,
            layer_dependency: false,
            batch_dependency: 1,
        };
        let all = RunStamp {
            link: Some(link),
            sampler: Some(sampler),
            ..relation_stamp()
        };
        let q = all.encode().unwrap();
        assert_eq!(RunStamp::decode(&q, Path::new("r"), 0, V1_9).unwrap(), all);
        // Excluding its own edges keeps the v1.6 record, byte for byte.
        let own = RunStamp {
            link: Some(LinkStamp {
                own_edges_kept: false,
                ..link
            }),
            ..stamp()
        };
        assert_eq!(own.version(), V1_6);
        let err = s
            .check(&own, Path::new("sb-000003.samples"))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("task: expected link (neg 5, undirected), found link (neg 5, undirected, exclude none)"),
            "{err}"
        );
    }

    fn relation_stamp() -> RunStamp {
        RunStamp {
            fanouts: Vec::new(),
            relation_fanouts: Some(RelationFanoutsStamp {
                relations: vec!["paper:cites:paper".into(), "author:writes:paper".into()],
                hops: vec![vec![10, 0], vec![5, -1]],
            }),
            ..stamp()
        }
    }

    /// A LABOR run appends a presence byte (relation fanouts follow when
    /// 1), a presence byte (a link stamp follows when 1), then its sampler,
    /// to the v1.3 payload (the bytes format/runtime.md spells out), in a
    /// v1.8 file; a v1.8 reader gets it back, with or without relation
    /// fanouts and a link, and refuses a sampler code outside 1..=3.
    #[test]
    fn a_labor_sampler_makes_a_v1_8_run_record() {
        let sampler = SamplerStamp {
            sampler: 3,
            layer_dependency: true,
            batch_dependency: 4,
        };
        let s = RunStamp {
            sampler: Some(sampler),
            ..stamp()
        };
        assert_eq!(s.version(), V1_8);
        let p = s.encode().unwrap();
        let v13 = stamp().encode().unwrap();
        let mut want = v13.clone();
        want.push(0);
        want.push(0);
        want.push(3);
        want.push(1);
        want.extend(le(&[4]));
        assert_eq!(p, want);
        assert_eq!(p.len(), v13.len() + 12);
        assert_eq!(RunStamp::decode(&p, Path::new("r"), 0, V1_8).unwrap(), s);
        assert!(RunStamp::decode(&p, Path::new("r"), 0, V1_6).is_err());
        let both = RunStamp {
            sampler: Some(sampler),
            ..relation_stamp()
        };
        let q = both.encode().unwrap();
        assert_eq!(RunStamp::decode(&q, Path::new("r"), 0, V1_8).unwrap(), both);
        // A LABOR link run: the link behind its presence byte, then the
        // sampler.
        let linked = RunStamp {
            link: Some(LinkStamp {
                neg: 2,
                undirected: false,
                own_edges_kept: false,
            }),
            ..s.clone()
        };
        let l = linked.encode().unwrap();
        let mut want = v13.clone();
        want.extend([0, 1]);
        want.extend(le(&[2]));
        want.extend([0, 3, 1]);
        want.extend(le(&[4]));
        assert_eq!(l, want);
        assert_eq!(linked.version(), V1_8);
        assert_eq!(
            RunStamp::decode(&l, Path::new("r"), 0, V1_8).unwrap(),
            linked
        );
        let mut bad = p.clone();
        bad[v13.len() + 2] = 9;
        let err = RunStamp::decode(&bad, Path::new("r"), 0, V1_8)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("run record") && err.contains("sampler"),
            "{err}"
        );
        let mut bad = p.clone();
        bad[v13.len() + 1] = 2;
        assert!(RunStamp::decode(&bad, Path::new("r"), 0, V1_8).is_err());
        // A neighbor run's stamp differs from a LABOR run's, by name.
        let diff = s.differences(&stamp()).join("; ");
        assert!(
            diff.contains("sampler: expected neighbor, found labor-* with layer dependency, batch dependency 4"),
            "{diff}"
        );
    }

    /// Per-relation fanouts append their block to the v1.3 payload (the
    /// bytes format/runtime.md spells out) and make the file v1.4; one
    /// list for all keeps v1.3's bytes.
    #[test]
    fn relation_fanouts_make_a_v1_4_run_record() {
        assert_eq!(stamp().version(), V1_3);
        let s = relation_stamp();
        assert_eq!(s.version(), V1_4);
        let mut want = 0xdead_beef_u32.to_le_bytes().to_vec();
        want.extend(le(&[7, 2]));
        want.extend(0u32.to_le_bytes());
        want.extend(le(&[3, 30, 10, 64, 0, 500, 1]));
        want.extend([1, 1]);
        assert_eq!(want.len(), 82);
        want.extend(le(&[2, 17]));
        want.extend(b"paper:cites:paper");
        want.extend(le(&[19]));
        want.extend(b"author:writes:paper");
        want.extend(le(&[2, 2, 10, 0, 2, 5, (-1i64) as u64]));
        let p = s.encode().unwrap();
        assert_eq!(p, want);
        assert_eq!(RunStamp::decode(&p, Path::new("r"), 0, V1_4).unwrap(), s);
        assert_eq!(s.describe_fanouts(), "cites=10:5,writes=0:-1");
        let err = RunStamp::decode(&p, Path::new("r"), 0, V1_3)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("unexpected bytes after the last field"),
            "{err}"
        );
        let v13 = stamp().encode().unwrap();
        assert!(RunStamp::decode(&v13, Path::new("r"), 0, V1_4).is_err());
        // A run of other fanouts is refused, naming both.
        let err = s
            .check(&stamp(), Path::new("sb-000003.samples"))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("fanouts: expected 10,-1, found cites=10:5,writes=0:-1"),
            "{err}"
        );
        let mut other = relation_stamp();
        if let Some(r) = &mut other.relation_fanouts {
            r.hops[1][1] = 3;
        }
        let err = other.check(&s, Path::new("x")).unwrap_err().to_string();
        assert!(err.contains("found cites=10:5,writes=0:3"), "{err}");
        // Counts that do not match the relations, empty names and too
        // many hops are corruption.
        for (bad, what) in [
            (
                RelationFanoutsStamp {
                    relations: vec!["a:r:b".into()],
                    hops: vec![vec![1, 2]],
                },
                "not one count per relation",
            ),
            (
                RelationFanoutsStamp {
                    relations: vec![String::new()],
                    hops: vec![vec![1]],
                },
                "a relation name of 0 or over 255 bytes",
            ),
            (
                RelationFanoutsStamp {
                    relations: vec!["a:r:b".into()],
                    hops: vec![vec![1]; MAX_RUN_FANOUTS + 1],
                },
                "more than 64 hops",
            ),
        ] {
            let t = RunStamp {
                relation_fanouts: Some(bad),
                ..s.clone()
            };
            let err = RunStamp::decode(&t.encode().unwrap(), Path::new("r"), 0, V1_4)
                .unwrap_err()
                .to_string();
            assert!(err.contains(what), "{err}");
        }
    }
}
