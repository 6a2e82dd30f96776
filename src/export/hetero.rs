//! What both exporters need of a typed store (format/schema.md): which
//! node types carry labels and split members, file names made of type and
//! relation names, and the in-neighbor lists split by relation with
//! type-local ids (the convention of DGL's chunked format and of
//! GraphBolt's heterogeneous datasets: global id minus the type's offset).

use crate::error::{Error, Result};
use crate::export::source::Source;
use crate::export::EdgeCheck;
use crate::format::header::FileKind;
use crate::format::manifest::store_file_name;
use crate::format::schema::Schema;
use crate::progress::Bar;

/// Per node type: whether it gets a label array, whether it gets masks /
/// item sets, and how many of its nodes each split holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TypeTables {
    /// Types with a `label` array: those with any label `>= 0`; every type
    /// when the store has labels but none is set (so that a re-import
    /// still writes the all-missing labels file); none without labels.
    pub labelled: Vec<bool>,
    /// Types with masks / item sets: those with a node in any split; every
    /// type when the store has splits but all are empty; none without.
    pub split: Vec<bool>,
    /// `split_counts[s][t]`: nodes of type `t` in split `s` (train, valid,
    /// test).
    pub split_counts: [Vec<u64>; 3],
}

impl TypeTables {
    /// Reads the labels and the split lists once, streaming.
    pub fn read(src: &Source, schema: &Schema) -> Result<Self> {
        let types = schema.node_types.len();
        let mut labelled = vec![false; types];
        if let Some(table) = src.table(FileKind::Labels)? {
            let per = table.per_block(4);
            let (mut raw, mut vals) = (Vec::new(), Vec::<i32>::new());
            for (t, ty) in schema.node_types.iter().enumerate() {
                let mut at = ty.offset;
                while at < ty.offset + ty.count && !labelled[t] {
                    let k = per.min(ty.offset + ty.count - at);
                    vals.clear();
                    table.values(at..at + k, &mut raw, &mut vals)?;
                    labelled[t] = vals.iter().any(|&l| l >= 0);
                    at += k;
                }
            }
            if !labelled.contains(&true) {
                labelled.fill(true);
            }
        }
        let mut split = vec![false; types];
        let mut split_counts: [Vec<u64>; 3] = Default::default();
        if let Some(cursors) = src.split_cursors()? {
            for (counts, mut ids) in split_counts.iter_mut().zip(cursors) {
                counts.resize(types, 0);
                while let Some(id) = ids.next_id()? {
                    let t = schema.type_of(id);
                    if let Some(c) = counts.get_mut(t) {
                        *c += 1;
                    }
                    if let Some(s) = split.get_mut(t) {
                        *s = true;
                    }
                }
            }
            if !split.contains(&true) {
                split.fill(true);
            }
        }
        Ok(TypeTables {
            labelled,
            split,
            split_counts,
        })
    }
}

/// Names usable as path components for `names` (node types, or relations
/// as `src-rel-dst`): the names themselves when every one is made of
/// ASCII letters, digits, `_`, `-` and `.` (not leading) and they are
/// distinct; otherwise each is `<index>-<name with other characters as
/// _>`, distinct by its index.
pub fn path_names(names: &[String]) -> Vec<String> {
    let clean = |s: &str| -> String {
        s.chars()
            .enumerate()
            .map(|(i, c)| {
                if c.is_ascii_alphanumeric() || c == '_' || c == '-' || (c == '.' && i > 0) {
                    c
                } else {
                    '_'
                }
            })
            .collect()
    };
    let cleaned: Vec<String> = names.iter().map(|n| clean(n)).collect();
    let safe = cleaned.iter().zip(names).all(|(c, n)| c == n);
    let distinct = {
        let mut sorted = cleaned.clone();
        sorted.sort();
        sorted.dedup();
        sorted.len() == cleaned.len()
    };
    if safe && distinct {
        cleaned
    } else {
        cleaned
            .into_iter()
            .enumerate()
            .map(|(i, c)| format!("{i}-{c}"))
            .collect()
    }
}

/// The path component of each node type.
pub fn type_paths(schema: &Schema) -> Vec<String> {
    let names: Vec<String> = schema.node_types.iter().map(|t| t.name.clone()).collect();
    path_names(&names)
}

/// The path component of each relation (`src-rel-dst`).
pub fn relation_paths(schema: &Schema) -> Vec<String> {
    let name = |i: u32| {
        schema
            .node_types
            .get(i as usize)
            .map_or("?", |t| t.name.as_str())
    };
    let names: Vec<String> = schema
        .relations
        .iter()
        .map(|r| format!("{}-{}-{}", name(r.src), r.name, name(r.dst)))
        .collect();
    path_names(&names)
}

/// The path components of a typed store's node types and relations
/// ([`type_paths`], [`relation_paths`]) and its [`TypeTables`].
pub struct TypedNames {
    types: Vec<String>,
    relations: Vec<String>,
    /// The store's [`TypeTables`].
    pub tables: TypeTables,
}

impl TypedNames {
    /// The names of `schema`, and its tables read from `src`.
    pub fn read(src: &Source, schema: &Schema) -> Result<Self> {
        Ok(TypedNames {
            types: type_paths(schema),
            relations: relation_paths(schema),
            tables: TypeTables::read(src, schema)?,
        })
    }

    /// The path component of node type `t`.
    pub fn node_type(&self, t: usize) -> &str {
        self.types.get(t).map_or("?", String::as_str)
    }

    /// The path component of relation `r`.
    pub fn relation(&self, r: usize) -> &str {
        self.relations.get(r).map_or("?", String::as_str)
    }
}

/// Streams the in-neighbor lists of the nodes `ids` (one destination
/// type's) through `splitter` into `f`, counting them into `check` and
/// moving `bar`.
pub fn split_in_lists(
    src: &Source,
    ids: std::ops::Range<u64>,
    splitter: &mut RelationSplitter,
    check: &mut EdgeCheck,
    bar: &Bar,
    f: &mut RelationFn<'_>,
) -> Result<()> {
    src.in_lists_range(ids, &mut |dst, srcs| {
        check.add(dst, srcs);
        if dst % 4096 == 0 {
            bar.set_position(dst);
        }
        splitter.split(dst, srcs, f)
    })
}

/// What [`RelationSplitter::split`] calls: `(slot, local dst, local sources)`.
pub type RelationFn<'f> = dyn FnMut(usize, u64, &[u64]) -> Result<()> + 'f;

/// Splits the in-neighbor lists of one destination type by relation, with
/// type-local ids.
pub struct RelationSplitter<'a> {
    schema: &'a Schema,
    /// The destination type.
    dst_type: usize,
    /// Relations into it: (source type's id range, relation index), by
    /// source range.
    into: Vec<(std::ops::Range<u64>, usize)>,
    local: Vec<u64>,
    indices: std::path::PathBuf,
}

impl<'a> RelationSplitter<'a> {
    /// A splitter for the lists of type `dst_type`'s nodes.
    pub fn new(src: &Source, schema: &'a Schema, dst_type: usize) -> Self {
        let mut into: Vec<(std::ops::Range<u64>, usize)> = schema
            .relations
            .iter()
            .enumerate()
            .filter(|(_, r)| r.dst as usize == dst_type)
            .filter_map(|(i, r)| Some((schema.node_types.get(r.src as usize)?.ids(), i)))
            .collect();
        into.sort_by_key(|(ids, _)| ids.start);
        RelationSplitter {
            schema,
            dst_type,
            into,
            local: Vec::new(),
            indices: src.store().dir().join(store_file_name(FileKind::Indices)),
        }
    }

    /// The relations into the type, in source-type order.
    pub fn relations(&self) -> impl Iterator<Item = usize> + '_ {
        self.into.iter().map(|(_, r)| *r)
    }

    /// Calls `f(slot, local dst, local sources)` for each relation into
    /// the type, `slot` being its position in [`relations`](Self::relations),
    /// with the part of the sorted in-list `srcs` of node `dst` that comes
    /// from the relation's source type (possibly empty). A source in a
    /// type that no relation joins to the destination's is corruption
    /// (`Store::verify` reports it too).
    pub fn split(&mut self, dst: u64, srcs: &[u64], f: &mut RelationFn<'_>) -> Result<()> {
        let offset = self
            .schema
            .node_types
            .get(self.dst_type)
            .map_or(0, |t| t.offset);
        let mut covered = 0usize;
        for (slot, (ids, _)) in self.into.iter().enumerate() {
            let lo = srcs.partition_point(|&s| s < ids.start);
            let hi = srcs.partition_point(|&s| s < ids.end);
            let part = srcs.get(lo..hi).unwrap_or_default();
            covered += part.len();
            self.local.clear();
            self.local.extend(part.iter().map(|&s| s - ids.start));
            f(slot, dst - offset, &self.local)?;
        }
        if covered != srcs.len() {
            let stray = srcs
                .iter()
                .find(|&&s| !self.into.iter().any(|(ids, _)| ids.contains(&s)))
                .copied()
                .unwrap_or(0);
            let name = |t: usize| {
                self.schema
                    .node_types
                    .get(t)
                    .map_or("?", |t| t.name.as_str())
            };
            return Err(Error::corrupt(
                &self.indices,
                0,
                format!(
                    "edge {stray} -> {dst} joins node types {} and {}, which no relation of the schema joins (run ginex-dump --verify)",
                    name(self.schema.type_of(stray)),
                    name(self.dst_type)
                ),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn path_names_keep_safe_distinct_names_and_number_the_rest() {
        let safe = names(&["author", "paper", "field_of.study-2"]);
        assert_eq!(path_names(&safe), safe);
        assert_eq!(path_names(&names(&["a/b", "c"])), names(&["0-a_b", "1-c"]));
        // Distinct names that clean to the same component, and a leading dot.
        assert_eq!(
            path_names(&names(&["a b", "a_b", ".x"])),
            names(&["0-a_b", "1-a_b", "2-_x"])
        );
        assert_eq!(path_names(&names(&["..", "ok"])), names(&["0-_.", "1-ok"]));
    }
}
