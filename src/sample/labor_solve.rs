//! The keep probabilities of one LABOR hop of one batch
//! ([`crate::sample::labor`]): `c` per candidate group and, with the
//! fixed-point iterations (`labor-1`, `labor-*`), `π` per distinct
//! candidate.
//!
//! The iterations need every candidate's groups together. Instead of a
//! hash map from id to dense index, each (id, group) occurrence is packed
//! into a `u64` and the occurrences are radix-sorted by id once per hop:
//! the sorted run of a vertex lists its groups, and every pass of the
//! iterations reads the occurrences in order, writes the per-vertex
//! arrays in order and touches only the per-group arrays (a few thousand
//! entries, in cache) at random. The same order serves the draw.

use crate::error::{Error, Result};

/// `labor-*` stops once an update lowers the expected count of distinct
/// vertices by less than this, relatively (the rule of the paper's
/// reference implementation in DGL).
const CONVERGED: f64 = 1e-4;

/// Fixed-point iterations `labor-*` runs at most.
pub const MAX_LABOR_ITERATIONS: usize = 32;

/// One candidate group of a hop: a target's (relation run of its) in-list,
/// deduplicated, and the fanout `k` drawn from it (-1: all).
pub(crate) struct Group<'a> {
    /// The target's position in the batch.
    pub target: usize,
    /// Distinct candidate ids, ascending.
    pub candidates: &'a [u64],
    /// The fanout.
    pub k: i64,
}

impl Group<'_> {
    /// Whether the group keeps every candidate (`k < 0` or `k ≥ d`).
    pub(crate) fn keeps_all(&self) -> bool {
        self.k < 0 || self.k as usize >= self.candidates.len()
    }

    /// The `c` a group that keeps all its candidates lends `π` in the
    /// fixed-point update: `k / d ≥ 1` (1 for `k < 0`), as the paper's
    /// reference implementation (DGL) does: a vertex such a target keeps
    /// is in the batch anyway, so the sampling targets sharing it lean
    /// towards it.
    pub(crate) fn full_c(&self) -> f64 {
        if self.k < 0 || self.candidates.is_empty() {
            1.0
        } else {
            self.k as f64 / self.candidates.len() as f64
        }
    }
}

/// The solved keep probabilities of one hop (see the module docs).
#[derive(Debug, Default)]
pub(crate) struct Solved {
    /// Each group's `c`; infinite: the group keeps all its candidates.
    pub c: Vec<f64>,
    /// With iterations: the distinct candidates, ascending (else empty,
    /// and `π = 1`).
    pub ids: Vec<u64>,
    /// `π` of each of `ids`.
    pub pi: Vec<f64>,
    /// Every candidate occurrence as `(j << group_bits) | group`, `j` its
    /// index in `ids`; sorted by `j`, then group.
    pub pairs: Vec<u64>,
    /// Bits of a group number in `pairs`.
    pub group_bits: u32,
}

impl Solved {
    /// The probability that group `g` keeps its candidate `t`.
    #[cfg(test)]
    pub fn p(&self, g: usize, t: u64) -> f64 {
        let c = self.c[g];
        if !c.is_finite() {
            return 1.0;
        }
        match self.ids.binary_search(&t) {
            Ok(j) if !self.pi.is_empty() => (c * self.pi[j]).min(1.0),
            _ => c.min(1.0),
        }
    }

    /// (j, group) of each occurrence in `pairs`.
    pub fn occurrences(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
        let (bits, mask) = (self.group_bits, group_mask(self.group_bits));
        self.pairs
            .iter()
            .map(move |&k| ((k >> bits) as usize, (k & mask) as usize))
    }
}

fn group_mask(bits: u32) -> u64 {
    if bits == 0 {
        0
    } else {
        u64::MAX >> (64 - bits)
    }
}

/// Bits that hold every value below `n`.
fn bits_below(n: u64) -> u32 {
    if n <= 1 {
        0
    } else {
        64 - (n - 1).leading_zeros()
    }
}

/// The buffers of [`solve`], kept across the batches one worker draws.
#[derive(Debug, Default)]
pub(crate) struct SolveScratch {
    /// The result.
    pub solved: Solved,
    tmp: Vec<u64>,
    wide: Vec<(u64, u64)>,
    lend: Vec<f64>,
    sum: Vec<f64>,
    max: Vec<f64>,
    cursor: Vec<usize>,
    saturated: Vec<f64>,
    suffix: Vec<f64>,
}

/// Solves `c` and `π` for `groups` with up to `iterations` fixed-point
/// iterations into `scratch.solved` (module docs of
/// [`crate::sample::labor`]).
pub(crate) fn solve(
    groups: &[Group<'_>],
    iterations: usize,
    scratch: &mut SolveScratch,
) -> Result<()> {
    let s = &mut scratch.solved;
    s.ids.clear();
    s.pi.clear();
    s.pairs.clear();
    s.c.clear();
    // labor-0: π = 1, c = k / d; no index of the candidates.
    s.c.extend(groups.iter().map(|g| {
        if g.keeps_all() {
            f64::INFINITY
        } else {
            g.k as f64 / g.candidates.len() as f64
        }
    }));
    if iterations == 0 {
        return Ok(());
    }
    index(groups, scratch)?;
    let n = scratch.solved.ids.len();
    scratch.solved.pi.resize(n, 1.0);
    // No bound before the first update (the reference implementation
    // starts from max degree × targets): the first iteration always runs.
    let mut before = f64::INFINITY;
    for _ in 0..iterations {
        let expected = update_pi(groups, scratch);
        resolve_c(groups, scratch);
        if expected >= (1.0 - CONVERGED) * before {
            break;
        }
        before = expected;
    }
    Ok(())
}

/// One update `π_t ← π_t · max_{t→s} c_s` (a group that keeps all its
/// candidates lends them `k / d ≥ 1`), in one pass over the occurrences,
/// which also sums each group's `1/π` and takes its largest `π` for
/// [`resolve_c`]. Returns `Σ_t min(1, π_t)` = `Σ_t max_s min(1, c_s π_t)`
/// with the `c` before the re-solve: the expected distinct vertices the
/// update reaches.
fn update_pi(groups: &[Group<'_>], scratch: &mut SolveScratch) -> f64 {
    let SolveScratch {
        solved,
        lend,
        sum,
        max,
        ..
    } = scratch;
    lend.clear();
    lend.extend(
        groups
            .iter()
            .zip(&solved.c)
            .map(|(g, &c)| if c.is_finite() { c } else { g.full_c() }),
    );
    sum.clear();
    sum.resize(groups.len(), 0.0);
    max.clear();
    max.resize(groups.len(), 0.0);
    let (bits, mask) = (solved.group_bits, group_mask(solved.group_bits));
    let pairs = &solved.pairs;
    let mut expected = 0.0;
    let mut i = 0;
    while i < pairs.len() {
        // The run of vertex j: its groups.
        let j = pairs[i] >> bits;
        let mut end = i;
        let mut best = 0.0f64;
        while end < pairs.len() && pairs[end] >> bits == j {
            best = best.max(lend[(pairs[end] & mask) as usize]);
            end += 1;
        }
        let p = &mut solved.pi[j as usize];
        if best > 0.0 {
            *p *= best;
        }
        let p = *p;
        expected += p.min(1.0);
        for &k in &pairs[i..end] {
            let g = (k & mask) as usize;
            sum[g] += 1.0 / p;
            max[g] = max[g].max(p);
        }
        i = end;
    }
    expected
}

/// Fills `solved.ids` and `solved.pairs` from the groups' candidates.
fn index(groups: &[Group<'_>], scratch: &mut SolveScratch) -> Result<()> {
    let SolveScratch {
        solved, tmp, wide, ..
    } = scratch;
    let total: usize = groups.iter().map(|g| g.candidates.len()).sum();
    let group_bits = bits_below(groups.len() as u64);
    if bits_below(total as u64) + group_bits > 64 {
        return Err(Error::invalid_argument(
            "a LABOR hop has too many candidates to index; lower the batch size",
        ));
    }
    let max_id = groups
        .iter()
        .filter_map(|g| g.candidates.last())
        .max()
        .copied()
        .unwrap_or(0);
    let id_bits = bits_below(max_id.saturating_add(1)).max(1);
    let mask = group_mask(group_bits);
    solved.group_bits = group_bits;
    solved.pairs.reserve(total);
    if id_bits + group_bits <= 64 {
        for (g, group) in groups.iter().enumerate() {
            let g = g as u64;
            solved
                .pairs
                .extend(group.candidates.iter().map(|&t| (t << group_bits) | g));
        }
        radix_sort(&mut solved.pairs, tmp, group_bits, group_bits + id_bits);
        let mut last = None;
        for k in solved.pairs.iter_mut() {
            let t = *k >> group_bits;
            if last != Some(t) {
                solved.ids.push(t);
                last = Some(t);
            }
            *k = (((solved.ids.len() - 1) as u64) << group_bits) | (*k & mask);
        }
    } else {
        // Ids too wide to pack beside the group: a comparison sort (the
        // pairs are distinct, so the order is the same on every run).
        wide.clear();
        for (g, group) in groups.iter().enumerate() {
            wide.extend(group.candidates.iter().map(|&t| (t, g as u64)));
        }
        wide.sort_unstable();
        for &(t, g) in wide.iter() {
            if solved.ids.last() != Some(&t) {
                solved.ids.push(t);
            }
            solved
                .pairs
                .push((((solved.ids.len() - 1) as u64) << group_bits) | g);
        }
    }
    Ok(())
}

/// Sorts `keys` by their bits `lo..hi`, stably (LSD radix, digits of at
/// most 11 bits); `tmp` is scratch.
fn radix_sort(keys: &mut Vec<u64>, tmp: &mut Vec<u64>, lo: u32, hi: u32) {
    let width = hi.saturating_sub(lo);
    if width == 0 || keys.len() < 2 {
        return;
    }
    let passes = width.div_ceil(11);
    let digit = width.div_ceil(passes);
    let mut counts = vec![0usize; 1 << digit];
    tmp.clear();
    tmp.resize(keys.len(), 0);
    let mut shift = lo;
    while shift < hi {
        let bits = digit.min(hi - shift);
        let mask = (1u64 << bits) - 1;
        counts.iter_mut().for_each(|c| *c = 0);
        for &k in keys.iter() {
            counts[((k >> shift) & mask) as usize] += 1;
        }
        shift += bits;
        if counts.contains(&keys.len()) {
            continue; // one bucket: this digit is already in order
        }
        let mut at = 0;
        for c in counts.iter_mut() {
            let n = *c;
            *c = at;
            at += n;
        }
        for &k in keys.iter() {
            let b = ((k >> (shift - bits)) & mask) as usize;
            tmp[counts[b]] = k;
            counts[b] += 1;
        }
        std::mem::swap(keys, tmp);
    }
}

/// Re-solves each sampling group's `c` on the current `π`, from the sums
/// and maxima [`update_pi`] left.
fn resolve_c(groups: &[Group<'_>], scratch: &mut SolveScratch) {
    let SolveScratch {
        solved,
        sum,
        max,
        cursor,
        saturated,
        suffix,
        ..
    } = scratch;
    // Most groups saturate nothing (c · max π < 1): c = Σ 1/π / (d²/k).
    // The others need their π: gathered in one more pass.
    cursor.clear();
    let mut at = 0;
    for (g, group) in groups.iter().enumerate() {
        cursor.push(usize::MAX);
        if group.keeps_all() {
            continue;
        }
        let d = group.candidates.len() as f64;
        let c = sum[g] / (d * d / group.k as f64);
        if c * max[g] < 1.0 {
            solved.c[g] = c;
        } else {
            cursor[g] = at;
            at += group.candidates.len();
        }
    }
    if at == 0 {
        return;
    }
    saturated.clear();
    saturated.resize(at, 0.0);
    for (j, g) in solved.occurrences() {
        if cursor[g] != usize::MAX {
            saturated[cursor[g]] = solved.pi[j];
            cursor[g] += 1;
        }
    }
    for (g, group) in groups.iter().enumerate() {
        if cursor[g] != usize::MAX {
            let d = group.candidates.len();
            let pis = &mut saturated[cursor[g] - d..cursor[g]];
            let k = group.k as f64;
            let guess = sum[g] / (d as f64 * d as f64 / k);
            solved.c[g] =
                solve_saturated(pis, k, guess).unwrap_or_else(|| solve_c_with(pis, suffix, k));
        }
    }
}

/// The `c` with `Σ 1 / min(1, c π_t) = d² / k` (`0 < k < d`) without
/// sorting, from `c` below it (the solution that saturates nothing, say):
/// with `S` the `π_t` that `c` saturates, the next `c` solves
/// `|S| + Σ_{t ∉ S} 1/(c π_t) = d²/k`. Each step stays at or below the
/// solution and grows `S`, so it stops when `S` does, at the solution.
/// None after 16 steps (the caller sorts instead).
fn solve_saturated(pi: &[f64], k: f64, mut c: f64) -> Option<f64> {
    let d = pi.len() as f64;
    let target = d * d / k;
    let mut before = usize::MAX;
    for _ in 0..16 {
        let (mut saturated, mut rest) = (0usize, 0.0f64);
        for &p in pi {
            if c * p >= 1.0 {
                saturated += 1;
            } else {
                rest += 1.0 / p;
            }
        }
        if saturated == before {
            return Some(c);
        }
        before = saturated;
        c = rest / (target - saturated as f64);
    }
    None
}

/// The `c` with `Σ 1 / min(1, c π_t) = d² / k` over the group's `π` (`pi`,
/// reordered here), for `0 < k < d`.
#[cfg(test)]
pub(crate) fn solve_c(pi: &mut [f64], k: f64) -> f64 {
    solve_c_with(pi, &mut Vec::new(), k)
}

/// [`solve_c`] with a reusable buffer.
fn solve_c_with(pi: &mut [f64], suffix: &mut Vec<f64>, k: f64) -> f64 {
    let d = pi.len();
    let target = (d as f64) * (d as f64) / k;
    pi.sort_unstable_by(|a, b| b.total_cmp(a));
    // suffix[j] = Σ_{i >= j} 1 / π_i.
    suffix.clear();
    suffix.resize(d + 1, 0.0);
    for j in (0..d).rev() {
        suffix[j] = suffix[j + 1] + 1.0 / pi[j];
    }
    let mut last = f64::INFINITY;
    for j in 0..d {
        // The j largest π saturate (keep probability 1).
        let c = suffix[j] / (target - j as f64);
        last = c;
        let above = j == 0 || c * pi[j - 1] >= 1.0;
        if above && c * pi[j] < 1.0 {
            return c;
        }
    }
    last
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn solved(gs: &[Group<'_>], iterations: usize) -> Solved {
        let mut scratch = SolveScratch::default();
        solve(gs, iterations, &mut scratch).unwrap();
        scratch.solved
    }

    pub(crate) fn groups(lists: &[Vec<u64>], k: i64) -> Vec<Group<'_>> {
        lists
            .iter()
            .enumerate()
            .map(|(target, l)| Group {
                target,
                candidates: l,
                k,
            })
            .collect()
    }

    /// `Σ_t max_s p_st` over `lists` (one group per list).
    fn expected_distinct(lists: &[Vec<u64>], s: &Solved) -> f64 {
        let mut best: std::collections::BTreeMap<u64, f64> = Default::default();
        for (g, l) in lists.iter().enumerate() {
            for &t in l {
                let b = best.entry(t).or_default();
                *b = b.max(s.p(g, t));
            }
        }
        best.values().sum()
    }

    #[test]
    fn c_keeps_neighbor_samplings_variance() {
        // π = 1: c = k / d.
        let mut ones = vec![1.0; 20];
        assert!((solve_c(&mut ones, 5.0) - 0.25).abs() < 1e-12);
        // Mixed π, with saturation: the constraint holds exactly.
        let pis = [8.0, 3.0, 1.0, 1.0, 0.5, 0.5, 0.25, 0.1];
        let mut p = pis.to_vec();
        let c = solve_c(&mut p, 3.0);
        let sum: f64 = pis.iter().map(|&x| 1.0 / (c * x).min(1.0)).sum();
        assert!((sum - 64.0 / 3.0).abs() < 1e-9, "{sum}");
        assert!(c * 8.0 >= 1.0);
    }

    /// The sort-free solve finds the sorted solve's `c` wherever the
    /// largest `π` saturate, one or many levels of them.
    #[test]
    fn the_sort_free_solve_matches_the_sorted_one() {
        let mut x: u64 = 11;
        let mut checked = 0;
        for case in 0..400 {
            let d = 3 + case % 40;
            let pis: Vec<f64> = (0..d)
                .map(|_| {
                    x = crate::rng::mix64(x);
                    // π over several orders of magnitude, as after a few
                    // updates.
                    10f64.powf((x % 1000) as f64 / 1000.0 * 6.0 - 3.0)
                })
                .collect();
            let k = (1 + case % (d - 1)) as f64;
            let target = (d * d) as f64 / k;
            let guess = pis.iter().map(|p| 1.0 / p).sum::<f64>() / target;
            let want = solve_c(&mut pis.clone(), k);
            let got = solve_saturated(&pis, k, guess).expect("converges");
            assert!((got - want).abs() <= 1e-9 * want, "{case}: {got} vs {want}");
            let max = pis.iter().copied().fold(0.0, f64::max);
            checked += usize::from(guess * max >= 1.0);
        }
        assert!(checked > 100, "{checked} cases saturate");
    }

    /// The radix sort orders by the chosen bits only and keeps the order
    /// of equal keys, over several digits; the index lists every
    /// occurrence once, by id.
    #[test]
    fn the_index_sorts_occurrences_by_id_stably() {
        let mut x: u64 = 7;
        let mut keys: Vec<u64> = (0..5000)
            .map(|i| {
                x = crate::rng::mix64(x);
                ((x % 300_000) << 13) | i
            })
            .collect();
        let mut want = keys.clone();
        want.sort_by_key(|k| k >> 13);
        radix_sort(&mut keys, &mut Vec::new(), 13, 13 + 19);
        assert_eq!(keys, want);
        let lists: Vec<Vec<u64>> = vec![vec![3, 9, 1 << 40], vec![], vec![2, 3], vec![9]];
        let gs = groups(&lists, 1);
        let s = solved(&gs, 1);
        assert_eq!(s.ids, vec![2, 3, 9, 1 << 40]);
        let occ: Vec<(u64, usize)> = s.occurrences().map(|(j, g)| (s.ids[j], g)).collect();
        assert_eq!(
            occ,
            vec![(2, 2), (3, 0), (3, 2), (9, 0), (9, 3), (1 << 40, 0)]
        );
        // Ids too wide to pack beside the group take the other sort.
        let wide: Vec<Vec<u64>> = vec![vec![5, 1 << 62], vec![5], vec![1], vec![1 << 62]];
        let gs = groups(&wide, 1);
        let s = solved(&gs, 1);
        assert_eq!(s.ids, vec![1, 5, 1 << 62]);
        let occ: Vec<(u64, usize)> = s.occurrences().map(|(j, g)| (s.ids[j], g)).collect();
        assert_eq!(
            occ,
            vec![(1, 2), (5, 0), (5, 1), (1 << 62, 0), (1 << 62, 3)]
        );
    }

    /// Six targets with overlapping in-lists out of 0..40.
    fn lists() -> Vec<Vec<u64>> {
        (0..6u64)
            .map(|s| (0..40).filter(|t| (t * 7 + s * 3) % (s + 2) < 2).collect())
            .collect()
    }

    /// The fixed-point iterations lower the expected count of distinct
    /// vertices, `Σ_t max_s p_st` (one shared variate per vertex), and
    /// every group keeps neighbor sampling's variance.
    #[test]
    fn iterations_lower_the_expected_distinct_vertices() {
        let lists = lists();
        let gs = groups(&lists, 4);
        let expected = |it: usize| expected_distinct(&lists, &solved(&gs, it));
        let (zero, one, star) = (expected(0), expected(1), expected(MAX_LABOR_ITERATIONS));
        assert!(one < zero && star <= one + 1e-9, "{zero} {one} {star}");
        let s = solved(&gs, MAX_LABOR_ITERATIONS);
        for (g, l) in lists.iter().enumerate() {
            let d = l.len() as f64;
            let var: f64 = l.iter().map(|&t| 1.0 / s.p(g, t)).sum();
            assert!((var - d * d / 4.0).abs() < 1e-6 * var, "{g}");
        }
    }

    /// A target that keeps all its candidates lends them `π`: the
    /// sampling targets sharing them keep them more often than `k / d`,
    /// and the batch needs fewer distinct vertices than when it did not.
    #[test]
    fn vertices_a_full_target_keeps_are_preferred() {
        // Target 0 keeps {0, 1} (k = 4 ≥ d = 2); targets 1 and 2 sample 4
        // of 10 and of 12 that include 0 and 1.
        let lists: Vec<Vec<u64>> = vec![vec![0, 1], (0..10).collect(), (0..12).collect()];
        let gs = groups(&lists, 4);
        let zero = solved(&gs, 0);
        let one = solved(&gs, 1);
        assert_eq!(zero.p(1, 0), 0.4);
        assert_eq!((one.p(1, 0), one.p(1, 1), one.p(0, 0)), (1.0, 1.0, 1.0));
        assert!(one.p(1, 5) < 0.4, "{}", one.p(1, 5));
        assert!(expected_distinct(&lists, &one) < expected_distinct(&lists, &zero));
    }
}
