//! Edges per relation of a typed store, counted from its sorted
//! in-neighbor lists: by `Store::verify` against the schema, and by the
//! typed importers to fill the schema in ([`CountingSink`]).

use crate::error::{Error, Result};
use crate::format::schema::Schema;
use crate::store::ListSink;

/// Edges per relation of a typed store, counted from its lists while
/// `indices` streams by (format/schema.md, "Verification").
pub struct RelationCounts<'s> {
    schema: &'s Schema,
    counts: Vec<u64>,
}

impl<'s> RelationCounts<'s> {
    pub fn new(schema: &'s Schema) -> Self {
        RelationCounts {
            schema,
            counts: vec![0; schema.relations.len()],
        }
    }

    /// Counts the sorted in-neighbor `list` of `v`; an edge between types
    /// no relation joins is an error at its position in the list.
    pub fn add(&mut self, v: u64, list: &[u64]) -> std::result::Result<(), (usize, String)> {
        let s = self.schema;
        let dst = s.type_of(v);
        for (src, ty) in s.node_types.iter().enumerate() {
            let lo = list.partition_point(|&u| u < ty.offset);
            let hi = list.partition_point(|&u| u < ty.offset + ty.count);
            if hi == lo {
                continue;
            }
            let Some(r) = s.relation_between(src, dst) else {
                let name = |t: usize| s.node_types.get(t).map_or("?", |t| t.name.as_str());
                return Err((
                    lo,
                    format!(
                        "edge {} -> {v} joins node types {} and {}, which no relation of the schema joins",
                        list.get(lo).copied().unwrap_or(0),
                        name(src),
                        name(dst)
                    ),
                ));
            };
            if let Some(c) = self.counts.get_mut(r) {
                *c += (hi - lo) as u64;
            }
        }
        Ok(())
    }

    pub fn check(&self, schema_path: &std::path::Path) -> Result<()> {
        for (r, (rel, got)) in self.schema.relations.iter().zip(&self.counts).enumerate() {
            if rel.num_edges != *got {
                return Err(Error::corrupt(
                    schema_path,
                    0,
                    format!(
                        "relation {r} ({}) lists {} edges but the topology holds {got}",
                        self.schema.canonical(rel),
                        rel.num_edges
                    ),
                ));
            }
        }
        Ok(())
    }

    /// The counts, one per relation in schema order.
    pub fn counts(&self) -> &[u64] {
        &self.counts
    }
}

/// A [`ListSink`] that counts each list's edges per relation before
/// passing it on.
pub struct CountingSink<'a, 's> {
    /// Where the lists go.
    pub inner: &'a mut dyn ListSink,
    /// The counts so far.
    pub counts: RelationCounts<'s>,
    /// The node whose list comes next.
    pub next: u64,
}

impl ListSink for CountingSink<'_, '_> {
    fn push_list(&mut self, list: &[u64]) -> Result<()> {
        let v = self.next;
        self.counts
            .add(v, list)
            .map_err(|(_, reason)| Error::invalid_argument(reason))?;
        self.next += 1;
        self.inner.push_list(list)
    }
}
