//! The typed shape of `ginex gen --hetero`: an academic graph shaped like
//! MAG (the chunked format's example) with planted classes on papers.
//!
//! Node types by id range: `paper` (the first 40 % of ids: features,
//! labels, splits), `author` (the next 50 %, featureless) and `field` (the
//! last 10 %, featureless). R-MAT draws edges over all ids as for a plain
//! graph; an edge whose source type may not reach its destination type is
//! moved to an allowed source type, at the same relative position in that
//! type's range (so the degree skew survives), and homophily then rewires
//! it to a same-class node unless that would cross a type boundary. The
//! relations are `paper:cites:paper`, `author:writes:paper`,
//! `field:topic_of:paper`, `paper:written_by:author` and
//! `paper:has_topic:field`: a paper hears from papers, authors and fields,
//! authors and fields from papers. Authors and fields carry their
//! (latent) planted class through their edges, so a model that reads
//! relations learns more than one that reads a paper's own features.

use crate::format::pages::FeatureLayout;
use crate::format::schema::{NodeType, Relation, Schema};
use crate::rng::stream_seed;

/// Node types: name and share of the ids.
pub const HETERO_TYPES: [(&str, f64); 3] = [("paper", 0.4), ("author", 0.5), ("field", 0.1)];

/// Relations: (source type, name, destination type), indices into
/// [`HETERO_TYPES`].
pub const HETERO_RELATIONS: [(usize, &str, usize); 5] = [
    (0, "cites", 0),
    (1, "writes", 0),
    (2, "topic_of", 0),
    (0, "written_by", 1),
    (0, "has_topic", 2),
];

const PURPOSE_SOURCE_TYPE: u64 = 6;

/// The id ranges of the types for `nodes` nodes: `(offset, count)` each.
pub fn type_ranges(nodes: u64) -> [(u64, u64); 3] {
    let paper = ((nodes as f64 * HETERO_TYPES[0].1).round() as u64).clamp(1.min(nodes), nodes);
    let author = ((nodes as f64 * HETERO_TYPES[1].1).round() as u64).min(nodes - paper);
    let field = nodes - paper - author;
    [(0, paper), (paper, author), (paper + author, field)]
}

/// The schema of a `--hetero` store of `nodes` nodes with features of
/// `papers` on papers, and of `authors` on authors when given; relation
/// edge counts are filled in as the topology is built.
pub fn hetero_schema(nodes: u64, papers: FeatureLayout, authors: Option<FeatureLayout>) -> Schema {
    let layouts = [Some(papers), authors, None];
    let ranges = type_ranges(nodes);
    Schema {
        node_types: HETERO_TYPES
            .iter()
            .zip(ranges)
            .enumerate()
            .map(|(i, ((name, _), (offset, count)))| NodeType {
                name: (*name).into(),
                offset,
                count,
                dim: layouts[i].map_or(0, |l| l.dim),
                dtype: layouts[i].map(|l| l.dtype),
            })
            .collect(),
        relations: HETERO_RELATIONS
            .iter()
            .map(|&(src, name, dst)| Relation {
                src: src as u32,
                name: name.into(),
                dst: dst as u32,
                num_edges: 0,
            })
            .collect(),
    }
}

/// Where edges may go in a `--hetero` graph.
pub(super) struct HeteroShape {
    ranges: [(u64, u64); 3],
    seed: u64,
}

impl HeteroShape {
    pub(super) fn new(nodes: u64, seed: u64) -> Self {
        HeteroShape {
            ranges: type_ranges(nodes),
            seed,
        }
    }

    pub(super) fn type_of(&self, v: u64) -> usize {
        self.ranges
            .iter()
            .position(|&(o, c)| v < o + c)
            .unwrap_or(self.ranges.len() - 1)
    }

    /// The source types allowed into destination type `t`.
    fn sources(t: usize) -> impl Iterator<Item = usize> {
        HETERO_RELATIONS
            .iter()
            .filter(move |r| r.2 == t)
            .map(|r| r.0)
    }

    /// `src` moved into a type allowed to reach `dst`'s type (the same one
    /// when it is allowed), at the same relative position in its range.
    pub(super) fn constrain(&self, src: u64, dst: u64, edge: u64) -> u64 {
        let (ts, td) = (self.type_of(src), self.type_of(dst));
        if Self::sources(td).any(|s| s == ts) {
            return src;
        }
        let allowed: Vec<usize> = Self::sources(td)
            .filter(|&s| self.ranges[s].1 > 0)
            .collect();
        if allowed.is_empty() {
            return src;
        }
        let pick = allowed
            [(stream_seed(self.seed, PURPOSE_SOURCE_TYPE, edge) % allowed.len() as u64) as usize];
        let (from_offset, from_count) = self.ranges[ts];
        let (to_offset, to_count) = self.ranges[pick];
        let frac = (src - from_offset) as f64 / from_count.max(1) as f64;
        to_offset + ((frac * to_count as f64) as u64).min(to_count - 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constrained_sources_reach_their_destinations() {
        let shape = HeteroShape::new(1000, 3);
        assert_eq!(shape.ranges, [(0, 400), (400, 500), (900, 100)]);
        for src in (0..1000).step_by(7) {
            for dst in (0..1000).step_by(11) {
                let s = shape.constrain(src, dst, src * 1000 + dst);
                let pair = (shape.type_of(s), shape.type_of(dst));
                assert!(
                    HETERO_RELATIONS.iter().any(|r| (r.0, r.2) == pair),
                    "{src} -> {dst} became {s} -> {dst}"
                );
            }
        }
        let layout = FeatureLayout::new(8, crate::format::pages::Dtype::F16).unwrap();
        let schema = hetero_schema(1000, layout, None);
        assert_eq!(schema.feature_rows(), 400);
        assert!(schema.validate(1000, 0, layout).is_ok());
    }
}
