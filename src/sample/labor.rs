//! Layer-neighbor sampling (LABOR; Balın & Çatalyürek, NeurIPS'23) and
//! the choice of sampler.
//!
//! Neighbor sampling draws each target's neighbours on its own, so two
//! targets sharing a neighbour rarely both pick it. LABOR gives every
//! candidate neighbour `t` of a hop **one** uniform variate `r_t`, shared
//! by all targets of the batch, and keeps edge `t → s` iff
//! `r_t < min(1, c_s · π_t)`: targets sharing neighbours keep the same
//! ones, and a batch needs fewer distinct vertices.
//!
//! * `labor-0`: `π_t = 1`, `c_s = k / d_s` (fanout `k`, `d_s` distinct
//!   in-neighbours): every edge is kept with probability `k / d_s`, so a
//!   target keeps `k` neighbours in expectation, as many as neighbor
//!   sampling draws.
//! * `labor-1`, `labor-*`: one, or as many as it takes to converge,
//!   fixed-point iterations of the paper: `π_t ← π_t · max_{t→s} c_s`, then
//!   each `c_s` re-solved so that target `s`'s Horvitz–Thompson mean keeps
//!   neighbor sampling's variance: `Σ_{t→s} 1 / min(1, c_s π_t) = d_s² / k`
//!   (with `π = 1` that is `c_s = k / d_s`). Non-uniform `π` concentrates
//!   the batch on vertices many targets share: fewer distinct vertices,
//!   at the price of a few more edges per target.
//!
//! A kept edge carries its importance weight `1 / min(1, c_s π_t)`,
//! normalised so that each target's weights sum to 1 (the self-normalised
//! Horvitz–Thompson mean), which the models use in aggregation.
//!
//! The variates are keyed by (batch key, hop, `t`): with
//! [`SamplerConfig::layer_dependency`] the hop is left out (the same
//! `r_t` at every hop); with [`SamplerConfig::batch_dependency`] `K > 1`
//! the variates of consecutive batches are correlated (DGL's
//! `batch_dependency`): batch `b` of group `g = b / K` mixes the standard
//! normals `z_g(t)` and `z_{g+1}(t)` at angle `θ = (π/2)(b mod K)/K`,
//! `r_t = Φ(cos θ · z_g + sin θ · z_{g+1})`, uniform for every batch and
//! sliding from group `g`'s variates to group `g + 1`'s over `K` batches.
//! Every variate is a pure function of its key, so batches do not depend
//! on thread counts, chunking or the order lists arrive in.

use std::fmt;

use crate::error::{Error, Result};
use crate::rng::{purpose_key, stream_seed, stream_seed_keyed};
pub use crate::sample::labor_solve::MAX_LABOR_ITERATIONS;
use crate::sample::labor_solve::{solve, Group, SolveScratch};

/// Which sampler draws a batch's neighbours (`--sampler`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Sampler {
    /// Uniform neighbor sampling without replacement (GraphSAGE).
    #[default]
    Neighbor,
    /// LABOR with `π = 1`, `c_s = k / d_s`.
    Labor0,
    /// LABOR with one fixed-point iteration on `π`.
    Labor1,
    /// LABOR with the fixed-point iterations run until `π` converges.
    LaborStar,
}

impl Sampler {
    /// Every sampler, in `--sampler` order.
    pub const ALL: [Sampler; 4] = [
        Sampler::Neighbor,
        Sampler::Labor0,
        Sampler::Labor1,
        Sampler::LaborStar,
    ];

    /// The sampler's `--sampler` name.
    pub fn name(self) -> &'static str {
        match self {
            Sampler::Neighbor => "neighbor",
            Sampler::Labor0 => "labor-0",
            Sampler::Labor1 => "labor-1",
            Sampler::LaborStar => "labor-*",
        }
    }

    /// Parses a `--sampler` name.
    pub fn parse(s: &str) -> Result<Sampler> {
        Error::parse_name(s.trim(), "sampler", &Self::ALL, Self::name)
    }

    /// Whether this is a LABOR sampler.
    pub fn is_labor(self) -> bool {
        self != Sampler::Neighbor
    }

    /// The fixed-point iterations on `π` (None: neighbor sampling).
    pub fn iterations(self) -> Option<usize> {
        match self {
            Sampler::Neighbor => None,
            Sampler::Labor0 => Some(0),
            Sampler::Labor1 => Some(1),
            Sampler::LaborStar => Some(MAX_LABOR_ITERATIONS),
        }
    }

    /// The number the runtime `run` record stores (format/runtime.md).
    pub(crate) fn code(self) -> u8 {
        match self {
            Sampler::Neighbor => 0,
            Sampler::Labor0 => 1,
            Sampler::Labor1 => 2,
            Sampler::LaborStar => 3,
        }
    }
}

impl fmt::Display for Sampler {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Sampler {
    type Err = Error;
    fn from_str(s: &str) -> Result<Sampler> {
        Sampler::parse(s)
    }
}

impl serde::Serialize for Sampler {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> serde::Deserialize<'de> for Sampler {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Sampler::parse(&s).map_err(serde::de::Error::custom)
    }
}

/// The sampler and its LABOR options.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct SamplerConfig {
    /// Which sampler.
    pub sampler: Sampler,
    /// LABOR: the same variate `r_t` at every hop of a batch
    /// (`--layer-dependency`).
    pub layer_dependency: bool,
    /// LABOR: variates correlated across this many consecutive batches
    /// (`--batch-dependency K`; 1 = independent batches).
    pub batch_dependency: u64,
}

impl Default for SamplerConfig {
    fn default() -> Self {
        SamplerConfig {
            sampler: Sampler::Neighbor,
            layer_dependency: false,
            batch_dependency: 1,
        }
    }
}

impl From<Sampler> for SamplerConfig {
    fn from(sampler: Sampler) -> Self {
        SamplerConfig {
            sampler,
            ..SamplerConfig::default()
        }
    }
}

impl SamplerConfig {
    /// Refuses options that do not go together.
    pub fn check(&self) -> Result<()> {
        if self.batch_dependency == 0 {
            return Err(Error::invalid_argument(
                "--batch-dependency must be at least 1 (1 = independent batches)",
            ));
        }
        if !self.sampler.is_labor() && (self.layer_dependency || self.batch_dependency > 1) {
            return Err(Error::invalid_argument(format!(
                "--layer-dependency and --batch-dependency apply to LABOR samplers only, not --sampler {}",
                self.sampler
            )));
        }
        Ok(())
    }

    /// Whether this is plain neighbor sampling.
    pub fn is_neighbor(&self) -> bool {
        !self.sampler.is_labor()
    }

    /// The LABOR key of batch `batch` of `epoch` under the run seed.
    pub(crate) fn batch_key(&self, seed: u64, epoch: u64, batch: u64) -> LaborKey {
        let k = self.batch_dependency.max(1);
        let group = |g: u64| stream_seed(seed, PURPOSE_LABOR, stream_seed(seed, epoch, g));
        let g = batch / k;
        LaborKey {
            keys: [group(g), group(g + 1)],
            mix: (batch % k) as f64 / k as f64,
        }
    }
}

const PURPOSE_LABOR: u64 = 13;

/// What keys one batch's LABOR variates.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LaborKey {
    /// The keys of the two variate groups the batch mixes.
    pub keys: [u64; 2],
    /// How far along from `keys[0]` to `keys[1]` (0: `keys[0]` alone).
    pub mix: f64,
}

impl LaborKey {
    /// A key of independent variates from a batch seed.
    pub fn of_seed(batch_seed: u64) -> LaborKey {
        LaborKey {
            keys: [mix_purpose(batch_seed), mix_purpose(batch_seed)],
            mix: 0.0,
        }
    }

    /// The variate `r_t` of vertex `t` at hop key `hop` (see the module
    /// docs), uniform in `[0, 1)`.
    pub fn variate(&self, hop: u64, t: u64) -> f64 {
        let u = |key: u64| unit(stream_seed_keyed(purpose_key(key, hop), t));
        if self.mix == 0.0 {
            return u(self.keys[0]);
        }
        let theta = self.mix * std::f64::consts::FRAC_PI_2;
        let z = theta.cos() * normal_quantile(u(self.keys[0]))
            + theta.sin() * normal_quantile(u(self.keys[1]));
        normal_cdf(z).clamp(0.0, 1.0 - f64::EPSILON)
    }
}

fn mix_purpose(batch_seed: u64) -> u64 {
    stream_seed(batch_seed, PURPOSE_LABOR, 0)
}

/// The top 53 bits as a uniform in `[0, 1)`.
fn unit(x: u64) -> f64 {
    (x >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

/// Φ⁻¹(p), Acklam's rational approximation (relative error below
/// 1.2e-9); `p` is clamped into `(0, 1)`.
pub(crate) fn normal_quantile(p: f64) -> f64 {
    const A: [f64; 6] = [
        -3.969_683_028_665_376e1,
        2.209_460_984_245_205e2,
        -2.759_285_104_469_687e2,
        1.383_577_518_672_69e2,
        -3.066_479_806_614_716e1,
        2.506_628_277_459_239,
    ];
    const B: [f64; 5] = [
        -5.447_609_879_822_406e1,
        1.615_858_368_580_409e2,
        -1.556_989_798_598_866e2,
        6.680_131_188_771_972e1,
        -1.328_068_155_288_572e1,
    ];
    const C: [f64; 6] = [
        -7.784_894_002_430_293e-3,
        -3.223_964_580_411_365e-1,
        -2.400_758_277_161_838,
        -2.549_732_539_343_734,
        4.374_664_141_464_968,
        2.938_163_982_698_783,
    ];
    const D: [f64; 4] = [
        7.784_695_709_041_462e-3,
        3.224_671_290_700_398e-1,
        2.445_134_137_142_996,
        3.754_408_661_907_416,
    ];
    let p = p.clamp(1e-300, 1.0 - 1e-16);
    let tail = |q: f64| {
        (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    };
    if p < 0.02425 {
        tail((-2.0 * p.ln()).sqrt())
    } else if p > 1.0 - 0.02425 {
        -tail((-2.0 * (1.0 - p).ln()).sqrt())
    } else {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    }
}

/// Φ(z) through erfc (Numerical Recipes' Chebyshev fit, relative error
/// below 1.2e-7).
pub(crate) fn normal_cdf(z: f64) -> f64 {
    let x = -z / std::f64::consts::SQRT_2;
    let t = 1.0 / (1.0 + 0.5 * x.abs());
    let poly = -x * x - 1.265_512_23
        + t * (1.000_023_68
            + t * (0.374_091_96
                + t * (0.096_784_18
                    + t * (-0.186_288_06
                        + t * (0.278_868_07
                            + t * (-1.135_203_98
                                + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77))))))));
    let erfc = t * poly.exp();
    let erfc = if x >= 0.0 { erfc } else { 2.0 - erfc };
    0.5 * erfc
}

/// One batch's LABOR draw of one hop: every target's kept neighbours and
/// their normalised importance weights, in target order.
#[derive(Debug, Default)]
pub(crate) struct LaborDraw {
    /// Kept ids, a run per target.
    pub flat: Vec<u64>,
    /// The weight of each kept id.
    pub weights: Vec<f32>,
    /// `flat[starts[i]..starts[i + 1]]`: target `i`'s.
    pub starts: Vec<usize>,
}

impl LaborDraw {
    /// Target `i`'s kept ids and weights.
    pub fn of(&self, i: usize) -> (&[u64], &[f32]) {
        let r = self.starts[i]..self.starts[i + 1];
        (&self.flat[r.clone()], &self.weights[r])
    }

    fn clear(&mut self) {
        self.flat.clear();
        self.weights.clear();
        self.starts.clear();
    }
}

/// The buffers of [`labor_draw`], kept across the batches one worker
/// draws so that a draw allocates nothing once they have grown.
#[derive(Debug, Default)]
pub(crate) struct LaborScratch {
    solve: SolveScratch,
    kept: Vec<(u64, f32, u32)>,
    counts: Vec<usize>,
    group_starts: Vec<usize>,
    /// The last draw.
    pub draw: LaborDraw,
}

/// One hop's variates of a batch: [`LaborKey::variate`] with the
/// per-key part computed once.
struct HopVariates {
    keys: [u64; 2],
    cos_sin: Option<(f64, f64)>,
}

impl HopVariates {
    fn new(key: &LaborKey, hop: u64) -> Self {
        let theta = key.mix * std::f64::consts::FRAC_PI_2;
        HopVariates {
            keys: [purpose_key(key.keys[0], hop), purpose_key(key.keys[1], hop)],
            cos_sin: (key.mix != 0.0).then(|| (theta.cos(), theta.sin())),
        }
    }

    #[inline]
    fn at(&self, t: u64) -> f64 {
        let u = |key: u64| unit(stream_seed_keyed(key, t));
        let Some((cos, sin)) = self.cos_sin else {
            return u(self.keys[0]);
        };
        let z = cos * normal_quantile(u(self.keys[0])) + sin * normal_quantile(u(self.keys[1]));
        normal_cdf(z).clamp(0.0, 1.0 - f64::EPSILON)
    }
}

/// Draws one hop of one batch with LABOR into `scratch.draw`: `groups` in
/// target order (a target's groups together), `num_targets` targets,
/// `iterations` fixed-point iterations on `π` ([`Sampler::iterations`]),
/// variates from `key` at hop key `hop`.
///
/// `labor-0` needs no index of the candidates: each candidate's variate
/// is a hash of (key, hop, id), computed where it is tested. With
/// iterations the draw walks the solver's occurrences in id order, one
/// variate per distinct candidate, and then places each group's kept
/// candidates (ascending, as its list) in group order.
pub(crate) fn labor_draw(
    groups: &[Group<'_>],
    num_targets: usize,
    iterations: usize,
    key: &LaborKey,
    hop: u64,
    scratch: &mut LaborScratch,
) -> Result<()> {
    solve(groups, iterations, &mut scratch.solve)?;
    let hv = HopVariates::new(key, hop);
    let LaborScratch {
        solve,
        kept,
        counts,
        group_starts,
        draw: out,
    } = scratch;
    let solved = &solve.solved;
    out.clear();
    group_starts.clear();
    if iterations == 0 {
        for (group, &c) in groups.iter().zip(&solved.c) {
            group_starts.push(out.flat.len());
            if !c.is_finite() {
                out.flat.extend_from_slice(group.candidates);
                out.weights
                    .extend(std::iter::repeat_n(1.0f32, group.candidates.len()));
                continue;
            }
            // π = 1: every candidate's keep probability is c < 1.
            let w = (1.0 / c) as f32;
            for &t in group.candidates {
                if hv.at(t) < c {
                    out.flat.push(t);
                    out.weights.push(w);
                }
            }
        }
    } else {
        // Kept (id, 1/p, group) in id order, counted per group, then
        // placed in group order.
        kept.clear();
        counts.clear();
        counts.resize(groups.len() + 1, 0);
        let (mut last, mut r) = (usize::MAX, 0.0);
        for (j, g) in solved.occurrences() {
            let c = solved.c[g];
            if !c.is_finite() {
                kept.push((solved.ids[j], 1.0, g as u32));
                counts[g + 1] += 1;
                continue;
            }
            if j != last {
                r = hv.at(solved.ids[j]);
                last = j;
            }
            let p = (c * solved.pi[j]).min(1.0);
            if r < p {
                kept.push((solved.ids[j], (1.0 / p) as f32, g as u32));
                counts[g + 1] += 1;
            }
        }
        for g in 0..groups.len() {
            counts[g + 1] += counts[g];
        }
        out.flat.resize(kept.len(), 0);
        out.weights.resize(kept.len(), 0.0);
        group_starts.extend_from_slice(&counts[..groups.len()]);
        for &(t, w, g) in kept.iter() {
            let at = &mut counts[g as usize];
            out.flat[*at] = t;
            out.weights[*at] = w;
            *at += 1;
        }
    }
    // Each target's run is its groups' runs; weights normalised per target.
    out.starts.reserve(num_targets + 1);
    let group_start = |g: usize| group_starts.get(g).copied().unwrap_or(out.flat.len());
    let mut g = 0;
    for i in 0..num_targets {
        let start = group_start(g);
        while g < groups.len() && groups[g].target == i {
            g += 1;
        }
        let end = group_start(g);
        out.starts.push(start);
        let weights = &mut out.weights[start..end];
        let sum: f32 = weights.iter().sum();
        if sum > 0.0 {
            weights.iter_mut().for_each(|w| *w /= sum);
        }
    }
    out.starts.push(out.flat.len());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_codes_are_the_formats() {
        use crate::format::runtime::SAMPLER_CODES;
        for s in Sampler::ALL {
            assert!(SAMPLER_CODES.contains(&(s.code(), s.name())), "{s}");
        }
        assert_eq!(SAMPLER_CODES.len(), Sampler::ALL.len());
    }

    #[test]
    fn names_round_trip_and_unknown_names_list_the_choices() {
        for s in Sampler::ALL {
            assert_eq!(Sampler::parse(s.name()).unwrap(), s);
        }
        let err = Sampler::parse("labor").unwrap_err().to_string();
        assert!(
            err.contains("unknown sampler \"labor\"")
                && err.contains("neighbor, labor-0, labor-1 or labor-*"),
            "{err}"
        );
        let bad = SamplerConfig {
            layer_dependency: true,
            ..SamplerConfig::default()
        };
        assert!(bad.check().unwrap_err().to_string().contains("LABOR"));
    }

    #[test]
    fn the_normal_helpers_invert_each_other() {
        for p in [1e-6, 0.01, 0.2, 0.5, 0.77, 0.99, 1.0 - 1e-6] {
            let z = normal_quantile(p);
            assert!((normal_cdf(z) - p).abs() < 1e-6 * p.max(1e-2), "{p} {z}");
        }
        assert!((normal_quantile(0.975) - 1.959_963_985).abs() < 1e-7);
    }

    /// Six targets with overlapping in-lists out of 0..40, and a seventh
    /// with two, which fanout 4 keeps whole.
    fn lists() -> Vec<Vec<u64>> {
        let mut l: Vec<Vec<u64>> = (0..6u64)
            .map(|s| (0..40).filter(|t| (t * 7 + s * 3) % (s + 2) < 2).collect())
            .collect();
        l.push(vec![3, 10]);
        l
    }

    use crate::sample::labor_solve::tests::{groups, solved};

    /// Every edge's empirical inclusion frequency over 20,000 batches
    /// (fixed keys: the counts are fixed numbers, the test cannot flake)
    /// lies within 5 standard deviations of `min(1, c_s π_t)`; each
    /// sampling group keeps neighbor sampling's variance; weights are
    /// `1 / p` normalised per target.
    #[test]
    fn inclusion_matches_the_solved_probabilities() {
        let lists = lists();
        let gs = groups(&lists, 4);
        for sampler in [Sampler::Labor0, Sampler::Labor1, Sampler::LaborStar] {
            let it = sampler.iterations().unwrap();
            let solved = solved(&gs, it);
            for (g, l) in lists.iter().enumerate().filter(|(_, l)| l.len() > 4) {
                let d = l.len() as f64;
                let var: f64 = l.iter().map(|&t| 1.0 / solved.p(g, t)).sum();
                assert!((var - d * d / 4.0).abs() < 1e-6 * var, "{sampler} {g}");
                if sampler == Sampler::Labor0 {
                    let kept: f64 = l.iter().map(|&t| solved.p(g, t)).sum();
                    assert!((kept - 4.0).abs() < 1e-9, "{kept}");
                }
            }
            let n = 20_000u32;
            let mut scratch = LaborScratch::default();
            let mut hits: Vec<Vec<u32>> = lists.iter().map(|l| vec![0; l.len()]).collect();
            for b in 0..n {
                let key = LaborKey::of_seed(u64::from(b) * 977 + 5);
                labor_draw(&gs, lists.len(), it, &key, 1, &mut scratch).unwrap();
                let draw = &scratch.draw;
                assert_eq!(draw.starts.len(), lists.len() + 1);
                for (i, l) in lists.iter().enumerate() {
                    let (ids, w) = draw.of(i);
                    if !w.is_empty() {
                        assert!((w.iter().sum::<f32>() - 1.0).abs() < 1e-4);
                    }
                    assert!(ids.windows(2).all(|p| p[0] < p[1]), "{ids:?}");
                    for (&t, &wt) in ids.iter().zip(w) {
                        hits[i][l.binary_search(&t).unwrap()] += 1;
                        // w ∝ 1 / p: w · p is the same for every kept edge.
                        let p0 = solved.p(i, ids[0]);
                        let p = solved.p(i, t);
                        assert!((wt * p as f32 - w[0] * p0 as f32).abs() < 1e-4);
                    }
                }
            }
            for (g, h) in hits.iter().enumerate() {
                for (m, &count) in h.iter().enumerate() {
                    let p = solved.p(g, lists[g][m]);
                    let sd = (f64::from(n) * p * (1.0 - p)).sqrt();
                    let dev = (f64::from(count) - f64::from(n) * p).abs();
                    assert!(
                        dev <= 5.0 * sd + 1e-9,
                        "{sampler} g{g} m{m}: {count} vs p {p}"
                    );
                }
            }
        }
    }

    /// Batch dependency: mixed variates stay uniform, and consecutive
    /// batches of a group share most of them.
    #[test]
    fn batch_dependency_correlates_uniform_variates() {
        let config = SamplerConfig {
            sampler: Sampler::Labor0,
            layer_dependency: false,
            batch_dependency: 4,
        };
        let (a, b) = (config.batch_key(3, 0, 5), config.batch_key(3, 0, 6));
        assert_eq!(a.keys, b.keys);
        let n = 40_000u64;
        let mut bins = [0u32; 10];
        let (mut same, mut far) = (0u32, 0u32);
        let independent = config.batch_key(3, 0, 13);
        for t in 0..n {
            let r = a.variate(1, t);
            bins[(r * 10.0) as usize] += 1;
            same += u32::from((r < 0.3) == (b.variate(1, t) < 0.3));
            far += u32::from((r < 0.3) == (independent.variate(1, t) < 0.3));
        }
        // Chi-square over 10 bins, p = 1e-6 bound for 9 degrees of freedom.
        let e = n as f64 / 10.0;
        let chi: f64 = bins.iter().map(|&c| (f64::from(c) - e).powi(2) / e).sum();
        assert!(chi < 42.0, "{chi} {bins:?}");
        assert!(same > far + n as u32 / 10, "{same} {far}");
        // The last batch of a group leans on the next group's variates.
        let last = config.batch_key(3, 0, 7);
        let next = config.batch_key(3, 0, 8);
        assert_eq!(last.keys[1], next.keys[0]);
    }
}
