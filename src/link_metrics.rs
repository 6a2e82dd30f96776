//! Link-prediction metrics, computed without tch (the trainer, `ginex
//! predict --task link` and the popularity baseline share them):
//!
//! * **ROC-AUC** and **average precision** over pooled positive and
//!   negative scores (the GAE protocol; scikit-learn's `roc_auc_score` and
//!   `average_precision_score`). Tied scores count half in the AUC (the
//!   Mann–Whitney statistic with mid-ranks) and form one threshold in the
//!   AP, so neither depends on the order of tied scores.
//! * **MRR** and **Hits@K** of each positive against its own K negatives
//!   (the OGB protocol, `ogbl-citation2`'s evaluator): the rank of a
//!   positive is 1 + the mean of its optimistic rank (negatives scored
//!   strictly above it) and its pessimistic rank (negatives scored at
//!   least as high), so a tie with every negative is not rewarded.
//!
//! A NaN score is refused (a diverged model, not a ranking).

#![deny(clippy::unwrap_used, clippy::indexing_slicing)]

use serde::Serialize;

use crate::error::{Error, Result};

/// The Hits@K cut-offs every ranking evaluation reports.
pub const HITS_AT: [usize; 3] = [1, 10, 50];

fn check_finite(what: &str, scores: &[f32]) -> Result<()> {
    match scores.iter().position(|s| s.is_nan()) {
        Some(i) => Err(Error::invalid_argument(format!(
            "{what} score {i} is NaN: the model diverged (try a lower --lr)"
        ))),
        None => Ok(()),
    }
}

/// Area under the ROC curve of `pos` against `neg`: the probability that a
/// random positive scores above a random negative, ties counting half.
/// `None` when either side is empty.
pub fn roc_auc(pos: &[f32], neg: &[f32]) -> Result<Option<f64>> {
    check_finite("a positive", pos)?;
    check_finite("a negative", neg)?;
    if pos.is_empty() || neg.is_empty() {
        return Ok(None);
    }
    // Mann–Whitney: the positives' rank sum in the pooled ascending order,
    // each group of tied scores given the mean of its ranks.
    let mut all = pooled(pos, neg);
    all.sort_unstable_by(|a, b| a.0.total_cmp(&b.0));
    let mut rank_sum = 0f64;
    for (first, group) in tie_groups(&all) {
        let positives = group.iter().filter(|x| x.1).count() as f64;
        // Ranks first+1 ..= first+len; their mean.
        let mid = first as f64 + (group.len() as f64 + 1.0) / 2.0;
        rank_sum += positives * mid;
    }
    let (p, n) = (pos.len() as f64, neg.len() as f64);
    Ok(Some((rank_sum - p * (p + 1.0) / 2.0) / (p * n)))
}

/// Every score of `pos` (true) and `neg` (false), unsorted.
fn pooled(pos: &[f32], neg: &[f32]) -> Vec<(f32, bool)> {
    pos.iter()
        .map(|&s| (s, true))
        .chain(neg.iter().map(|&s| (s, false)))
        .collect()
}

/// Average precision of `pos` against `neg` (scikit-learn's definition):
/// the sum over descending score thresholds of the recall gained at each
/// times the precision there; tied scores form one threshold. `None` when
/// there is no positive.
pub fn average_precision(pos: &[f32], neg: &[f32]) -> Result<Option<f64>> {
    check_finite("a positive", pos)?;
    check_finite("a negative", neg)?;
    if pos.is_empty() {
        return Ok(None);
    }
    let mut all = pooled(pos, neg);
    // Descending.
    all.sort_unstable_by(|a, b| b.0.total_cmp(&a.0));
    let total = pos.len() as f64;
    let (mut true_pos, mut seen, mut ap) = (0f64, 0f64, 0f64);
    for (_, group) in tie_groups(&all) {
        let gained = group.iter().filter(|x| x.1).count() as f64;
        true_pos += gained;
        seen += group.len() as f64;
        ap += gained / total * (true_pos / seen);
    }
    Ok(Some(ap))
}

/// Runs of equal scores in `sorted`, with the index of each run's first
/// element.
fn tie_groups(sorted: &[(f32, bool)]) -> impl Iterator<Item = (usize, &[(f32, bool)])> {
    let mut at = 0;
    std::iter::from_fn(move || {
        let rest = sorted.get(at..)?;
        let first = rest.first()?.0;
        let len = rest.iter().take_while(|x| x.0 == first).count();
        let group = (at, rest.get(..len)?);
        at += len;
        Some(group)
    })
}

/// MRR and Hits@K of positives each ranked against their own negatives.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RankMetrics {
    /// Positives ranked.
    pub positives: u64,
    /// Negatives per positive.
    pub negatives: usize,
    /// Mean reciprocal rank.
    pub mrr: f64,
    /// `(K, the fraction of positives ranked K or better)`, for each K of
    /// [`HITS_AT`].
    pub hits: Vec<(usize, f64)>,
}

impl RankMetrics {
    /// Hits@`k`, when it was computed.
    pub fn hits_at(&self, k: usize) -> Option<f64> {
        self.hits.iter().find(|h| h.0 == k).map(|h| h.1)
    }
}

/// The OGB rank of a positive scored `pos` among `neg`: 1 + the mean of
/// the negatives strictly above it and those at least as high.
pub fn rank(pos: f32, neg: &[f32]) -> f64 {
    let above = neg.iter().filter(|&&n| n > pos).count() as f64;
    let at_least = neg.iter().filter(|&&n| n >= pos).count() as f64;
    1.0 + 0.5 * (above + at_least)
}

/// MRR and Hits@K ([`HITS_AT`]) of each positive `pos[i]` against its `k`
/// negatives `neg[i*k .. (i+1)*k]`. `None` when there is no positive.
pub fn rank_metrics(pos: &[f32], neg: &[f32], k: usize) -> Result<Option<RankMetrics>> {
    check_finite("a positive", pos)?;
    check_finite("a negative", neg)?;
    if k == 0 || neg.len() != pos.len() * k {
        return Err(Error::invalid_argument(format!(
            "ranking needs K > 0 negatives per positive: {} negatives for {} positives, K = {k}",
            neg.len(),
            pos.len()
        )));
    }
    if pos.is_empty() {
        return Ok(None);
    }
    let mut reciprocal = 0f64;
    let mut hits = vec![0u64; HITS_AT.len()];
    for (&p, negs) in pos.iter().zip(neg.chunks_exact(k)) {
        let r = rank(p, negs);
        reciprocal += 1.0 / r;
        for (h, &cut) in hits.iter_mut().zip(&HITS_AT) {
            *h += u64::from(r <= cut as f64);
        }
    }
    let n = pos.len() as f64;
    Ok(Some(RankMetrics {
        positives: pos.len() as u64,
        negatives: k,
        mrr: reciprocal / n,
        hits: HITS_AT
            .iter()
            .zip(hits)
            .map(|(&cut, h)| (cut, h as f64 / n))
            .collect(),
    }))
}

/// Every metric of one held-out split: AUC and AP over the pooled scores,
/// and the ranking metrics when each positive has its own K negatives.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LinkMetrics {
    /// [`roc_auc`].
    pub auc: Option<f64>,
    /// [`average_precision`].
    pub ap: Option<f64>,
    /// [`rank_metrics`] (also for K = 1, where MRR is 1 or 1/2).
    pub ranking: Option<RankMetrics>,
}

impl LinkMetrics {
    /// All metrics of positives `pos` against `k` negatives each (`neg`,
    /// row-major).
    pub fn compute(pos: &[f32], neg: &[f32], k: usize) -> Result<LinkMetrics> {
        Ok(LinkMetrics {
            auc: roc_auc(pos, neg)?,
            ap: average_precision(pos, neg)?,
            ranking: rank_metrics(pos, neg, k)?,
        })
    }

    /// The validation score a run selects its best epoch by: MRR when the
    /// split ranks against several negatives, else the AUC.
    pub fn selection(&self) -> Option<f64> {
        match &self.ranking {
            Some(r) if r.negatives > 1 => Some(r.mrr),
            _ => self.auc,
        }
    }

    /// One line: `AUC a, AP b, MRR c, Hits@1 …`.
    pub fn describe(&self) -> String {
        let f = |x: Option<f64>| x.map_or("-".to_string(), |v| format!("{v:.4}"));
        let mut s = format!("AUC {}, AP {}", f(self.auc), f(self.ap));
        if let Some(r) = &self.ranking {
            s += &format!(", MRR {:.4}", r.mrr);
            for (k, h) in &r.hits {
                s += &format!(", Hits@{k} {h:.4}");
            }
            s += &format!(" ({} positives x {} negatives)", r.positives, r.negatives);
        }
        s
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Every (positive, negative) pair: 1 when the positive is above, 1/2
    /// on a tie.
    fn brute_auc(pos: &[f32], neg: &[f32]) -> f64 {
        let mut s = 0.0;
        for &p in pos {
            for &n in neg {
                s += if p > n {
                    1.0
                } else if p == n {
                    0.5
                } else {
                    0.0
                };
            }
        }
        s / (pos.len() * neg.len()) as f64
    }

    /// For each distinct threshold t, descending: precision and recall of
    /// "score >= t".
    fn brute_ap(pos: &[f32], neg: &[f32]) -> f64 {
        let mut thresholds: Vec<f32> = pos.iter().chain(neg).copied().collect();
        thresholds.sort_by(|a, b| b.total_cmp(a));
        thresholds.dedup();
        let (mut ap, mut last_recall) = (0.0, 0.0);
        for t in thresholds {
            let tp = pos.iter().filter(|&&p| p >= t).count() as f64;
            let fp = neg.iter().filter(|&&n| n >= t).count() as f64;
            let recall = tp / pos.len() as f64;
            ap += (recall - last_recall) * tp / (tp + fp);
            last_recall = recall;
        }
        ap
    }

    /// The rank of every tie order, averaged: a positive tied with m
    /// negatives takes each of the m + 1 places equally often.
    fn brute_rank(p: f32, neg: &[f32]) -> f64 {
        let above = neg.iter().filter(|&&n| n > p).count();
        let tied = neg.iter().filter(|&&n| n == p).count();
        (0..=tied).map(|t| (above + t + 1) as f64).sum::<f64>() / (tied + 1) as f64
    }

    /// Scores from a handful of values, so ties are common.
    fn scores(len: std::ops::Range<usize>) -> impl Strategy<Value = Vec<f32>> {
        prop::collection::vec((-4i32..4).prop_map(|v| v as f32 * 0.5), len)
    }

    proptest! {
        #[test]
        fn auc_matches_every_pair(pos in scores(1..40), neg in scores(1..40)) {
            let got = roc_auc(&pos, &neg).unwrap().unwrap();
            prop_assert!((got - brute_auc(&pos, &neg)).abs() < 1e-12);
        }

        #[test]
        fn ap_matches_the_threshold_sweep(pos in scores(1..40), neg in scores(0..40)) {
            let got = average_precision(&pos, &neg).unwrap().unwrap();
            prop_assert!((got - brute_ap(&pos, &neg)).abs() < 1e-12, "{got} vs {}", brute_ap(&pos, &neg));
        }

        #[test]
        fn ranks_match_the_mean_over_tie_orders(
            k in 1usize..8,
            rows in prop::collection::vec((scores(1..2), scores(8..9)), 1..20),
        ) {
            let pos: Vec<f32> = rows.iter().map(|r| r.0[0]).collect();
            let neg: Vec<f32> = rows.iter().flat_map(|r| r.1[..k].to_vec()).collect();
            let m = rank_metrics(&pos, &neg, k).unwrap().unwrap();
            let ranks: Vec<f64> = rows.iter().map(|r| brute_rank(r.0[0], &r.1[..k])).collect();
            let mrr = ranks.iter().map(|r| 1.0 / r).sum::<f64>() / ranks.len() as f64;
            prop_assert!((m.mrr - mrr).abs() < 1e-12);
            for (cut, h) in &m.hits {
                let want = ranks.iter().filter(|&&r| r <= *cut as f64).count() as f64 / ranks.len() as f64;
                prop_assert!((h - want).abs() < 1e-12);
            }
        }

        #[test]
        fn metrics_do_not_depend_on_order(mut pos in scores(1..30), mut neg in scores(1..30)) {
            let (auc, ap) = (roc_auc(&pos, &neg).unwrap(), average_precision(&pos, &neg).unwrap());
            pos.reverse();
            neg.reverse();
            prop_assert_eq!(roc_auc(&pos, &neg).unwrap(), auc);
            prop_assert_eq!(average_precision(&pos, &neg).unwrap(), ap);
        }
    }

    #[test]
    fn known_values() {
        // Perfect separation, then perfectly wrong, then all tied.
        assert_eq!(roc_auc(&[2.0, 3.0], &[0.0, 1.0]).unwrap(), Some(1.0));
        assert_eq!(roc_auc(&[0.0], &[1.0, 2.0]).unwrap(), Some(0.0));
        assert_eq!(roc_auc(&[1.0; 3], &[1.0; 5]).unwrap(), Some(0.5));
        assert_eq!(average_precision(&[2.0, 3.0], &[0.0]).unwrap(), Some(1.0));
        // All tied: precision = the positives' share at the one threshold.
        assert_eq!(average_precision(&[1.0], &[1.0; 3]).unwrap(), Some(0.25));
        // sklearn: average_precision_score([1,0,1,0], [0.9,0.8,0.7,0.1]) = 0.8333…
        let ap = average_precision(&[0.9, 0.7], &[0.8, 0.1])
            .unwrap()
            .unwrap();
        assert!((ap - (0.5 + 0.5 * 2.0 / 3.0)).abs() < 1e-12);
        // OGB: a positive tied with all of its 3 negatives ranks 2.5, not 1.
        assert_eq!(rank(1.0, &[1.0; 3]), 2.5);
        assert_eq!(rank(5.0, &[1.0, 2.0, 9.0]), 2.0);
        let m = rank_metrics(&[5.0, 0.0], &[1.0, 2.0, 9.0, 1.0, 2.0, 3.0], 3)
            .unwrap()
            .unwrap();
        assert_eq!(m.mrr, (0.5 + 0.25) / 2.0);
        assert_eq!(m.hits_at(1), Some(0.0));
        assert_eq!(m.hits_at(10), Some(1.0));
    }

    #[test]
    fn empty_sides_bad_shapes_and_nan_are_handled() {
        assert_eq!(roc_auc(&[], &[1.0]).unwrap(), None);
        assert_eq!(roc_auc(&[1.0], &[]).unwrap(), None);
        assert_eq!(average_precision(&[], &[1.0]).unwrap(), None);
        assert_eq!(rank_metrics(&[], &[], 3).unwrap(), None);
        let err = rank_metrics(&[1.0, 2.0], &[1.0; 5], 3).unwrap_err();
        assert!(
            err.to_string().contains("5 negatives for 2 positives"),
            "{err}"
        );
        assert!(rank_metrics(&[1.0], &[], 0).is_err());
        let err = roc_auc(&[1.0, f32::NAN], &[0.0]).unwrap_err();
        assert!(err.to_string().contains("score 1 is NaN"), "{err}");
    }

    #[test]
    fn selection_is_mrr_with_several_negatives_else_auc() {
        let one = LinkMetrics::compute(&[1.0, 0.0], &[0.5, 0.5], 1).unwrap();
        assert_eq!(one.selection(), one.auc);
        let many = LinkMetrics::compute(&[1.0], &[0.5, 2.0], 2).unwrap();
        assert_eq!(many.selection(), Some(0.5));
        assert!(
            many.describe().contains("MRR 0.5000"),
            "{}",
            many.describe()
        );
    }
}
