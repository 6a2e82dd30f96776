//! Where a link batch's training negatives come from (`--negatives`).
//!
//! `uniform` draws each negative destination uniformly out of the
//! negative range (PyG's and DGL's link samplers): on a graph larger
//! than memory it is a random row no cache holds, and so is its sampled
//! neighbourhood. `batch` draws it from the batch's own positive
//! endpoints (in-batch negatives), each endpoint as often as it appears
//! among them, so a node is drawn in proportion to its degree in the
//! batch (MariusGNN's `degree_fraction` share): those nodes are the
//! batch's seeds anyway, so the negatives add no seed, no feature row and
//! no sampled neighbourhood. `mixed:F` draws each negative from the batch
//! with probability F and uniformly otherwise.
//!
//! The draws are the batch's own ([`super::link::LinkEpoch::batch`]):
//! the inspector plans the batch's seeds, negatives included, so the
//! feature cache's misses stay the Belady optimum whatever the source.
//! Evaluation (held-out edges, `predict --task link`) never uses these:
//! it ranks against uniform or the store's given negatives.

use crate::error::{Error, Result};
use crate::rng::Wyrand;

/// Parts of [`NegSource::Mixed`]'s fraction are counted in (one in a
/// million: `mixed:0.333333`).
const PARTS: u32 = 1_000_000;

/// Where a link batch's training negatives are drawn from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum NegSource {
    /// Uniformly out of the negative range (every node, or the target
    /// relation's destination type).
    #[default]
    Uniform,
    /// From the batch's positive endpoints in the negative range,
    /// degree-weighted.
    Batch,
    /// Each negative from the batch with probability `batch_parts /
    /// 1,000,000`, else uniformly.
    Mixed {
        /// The batch share in millionths.
        batch_parts: u32,
    },
}

impl NegSource {
    /// Parses `uniform`, `batch` or `mixed:F` (F in [0, 1], the share
    /// drawn from the batch).
    pub fn parse(s: &str) -> Result<NegSource> {
        let bad = |why: &str| Error::invalid_argument(format!("--negatives {s:?}: {why}"));
        match s {
            "uniform" => return Ok(NegSource::Uniform),
            "batch" => return Ok(NegSource::Batch),
            _ => {}
        }
        let Some(f) = s.strip_prefix("mixed:") else {
            return Err(bad(
                "expected uniform, batch or mixed:F (F in [0, 1], the share drawn from the batch's own endpoints)",
            ));
        };
        let f: f64 = f
            .parse()
            .map_err(|_| bad("mixed:F takes a number F in [0, 1]"))?;
        if !(0.0..=1.0).contains(&f) {
            return Err(bad(
                "mixed:F takes F in [0, 1] (the share of negatives drawn from the batch)",
            ));
        }
        Ok(NegSource::Mixed {
            batch_parts: (f * f64::from(PARTS)).round() as u32,
        })
    }

    /// The text [`parse`](Self::parse) takes.
    pub fn name(self) -> String {
        match self {
            NegSource::Uniform => "uniform".into(),
            NegSource::Batch => "batch".into(),
            NegSource::Mixed { batch_parts } => {
                format!("mixed:{}", f64::from(batch_parts) / f64::from(PARTS))
            }
        }
    }

    /// Draws one negative destination: out of `pool` (the batch's
    /// endpoints in `range`, with repeats) or uniformly out of `range`.
    /// `uniform` draws exactly as the link sampler always has (one
    /// `below` per negative), so its batches are unchanged; an empty pool
    /// falls back to a uniform draw.
    pub fn draw(self, rng: &mut Wyrand, pool: &[u64], range: &std::ops::Range<u64>) -> u64 {
        let from_batch = match self {
            NegSource::Uniform => false,
            NegSource::Batch => true,
            NegSource::Mixed { batch_parts } => {
                rng.below(u64::from(PARTS)) < u64::from(batch_parts)
            }
        };
        if from_batch && !pool.is_empty() {
            pool[rng.below(pool.len() as u64) as usize]
        } else {
            range.start + rng.below(range.end - range.start)
        }
    }

    /// Whether a draw ever looks at the batch's endpoints.
    pub fn uses_batch(self) -> bool {
        !matches!(
            self,
            NegSource::Uniform | NegSource::Mixed { batch_parts: 0 }
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_its_names_and_refuses_a_share_outside_zero_to_one() {
        for s in [
            "uniform",
            "batch",
            "mixed:0.5",
            "mixed:0",
            "mixed:1",
            "mixed:0.25",
        ] {
            assert_eq!(NegSource::parse(s).unwrap().name(), s);
        }
        assert_eq!(
            NegSource::parse("mixed:0.5").unwrap(),
            NegSource::Mixed {
                batch_parts: 500_000
            }
        );
        for bad in [
            "mixed:1.5",
            "mixed:-0.1",
            "mixed:x",
            "mixed:NaN",
            "resident",
            "",
        ] {
            let e = NegSource::parse(bad).unwrap_err().to_string();
            assert!(e.contains("--negatives"), "{bad}: {e}");
        }
        let e = NegSource::parse("mixed:2").unwrap_err().to_string();
        assert!(e.contains("[0, 1]"), "{e}");
    }

    #[test]
    fn batch_draws_come_from_the_pool_in_proportion_to_their_repeats() {
        let pool = [7, 9, 9, 9];
        let mut rng = Wyrand(3);
        let draws: Vec<u64> = (0..4000)
            .map(|_| NegSource::Batch.draw(&mut rng, &pool, &(0..100)))
            .collect();
        assert!(draws.iter().all(|v| *v == 7 || *v == 9));
        let nines = draws.iter().filter(|&&v| v == 9).count();
        // 3 in 4 expected; 3,000 ± 5 standard deviations (27 each).
        assert!((2860..3140).contains(&nines), "{nines}");
        // An empty pool: uniform.
        assert!(NegSource::Batch.draw(&mut rng, &[], &(40..50)) >= 40);
    }

    #[test]
    fn mixed_draws_its_share_from_the_batch() {
        let pool = [1_000_000];
        let mut rng = Wyrand(11);
        let mixed = NegSource::parse("mixed:0.25").unwrap();
        let from_pool = (0..8000)
            .filter(|_| mixed.draw(&mut rng, &pool, &(0..1000)) == 1_000_000)
            .count();
        // 2,000 expected; ± 5 standard deviations (39 each).
        assert!((1800..2200).contains(&from_pool), "{from_pool}");
        assert!(!NegSource::parse("mixed:0").unwrap().uses_batch());
        assert!(mixed.uses_batch() && NegSource::Batch.uses_batch());
        assert!(!NegSource::Uniform.uses_batch());
    }

    #[test]
    fn uniform_draws_as_the_link_sampler_always_has() {
        let (mut a, mut b) = (Wyrand(5), Wyrand(5));
        for _ in 0..100 {
            assert_eq!(
                NegSource::Uniform.draw(&mut a, &[1, 2], &(10..20)),
                10 + b.below(10)
            );
        }
    }
}
