//! Edges into the bucketer: [`EdgeSink`] checks and remaps what
//! [`edges_from`](super::edge_input::edges_from) reads, and
//! [`Build::topology`] builds the CSC (holding a split's edges out).

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use crate::error::{Error, Result};
use crate::import::remap::IdMap;
use crate::progress::Bar;
use crate::store::edges::EdgeBucketer;
use crate::store::relation_counts::{CountingSink, RelationCounts};

use super::edge_input::{edges_noting, node_id, typed_id, EdgeEnds, EdgeInput};
use super::edge_splits::{SplitBuild, SplitRelation, SplitSink};
use super::{progress, Build};

/// Feeds checked, remapped edges to the bucketer.
pub struct EdgeSink<'a> {
    bucketer: &'a mut EdgeBucketer,
    n: u64,
    /// The types the next input joins (typed imports).
    ends: Option<EdgeEnds>,
    map: Option<&'a IdMap>,
    undirected: bool,
    bar: &'a Bar,
    read: u64,
    /// Set when the feature thread failed: stop early.
    cancel: &'a AtomicBool,
    /// What the import's output says about the inputs.
    notes: Vec<String>,
}

impl EdgeSink<'_> {
    /// Pushes every edge of `input`; returns how many it held.
    pub fn push_input(&mut self, input: &EdgeInput) -> Result<u64> {
        let path = input.path().to_path_buf();
        let ends = self.ends.clone();
        let mut notes = std::mem::take(&mut self.notes);
        let read = edges_noting(
            input,
            &mut |s, d, at| {
                let (s, d) = match &ends {
                    None => (
                        node_id(s, self.n, self.map, &path, at, "edge source")?,
                        node_id(d, self.n, self.map, &path, at, "edge target")?,
                    ),
                    Some(e) => (
                        typed_id(s, &e.src, &path, at, "edge source")?,
                        typed_id(d, &e.dst, &path, at, "edge target")?,
                    ),
                };
                self.bucketer.push(s, d)?;
                if self.undirected && s != d {
                    self.bucketer.push(d, s)?;
                }
                self.read += 1;
                if self.read % (1 << 16) == 0 {
                    self.bar.set_position(self.read);
                    if self.cancel.load(Ordering::Relaxed) {
                        return Err(Error::invalid_argument(
                            "edge import stopped: the feature import failed",
                        ));
                    }
                }
                Ok(())
            },
            &mut notes,
        );
        self.notes = notes;
        read
    }
}

impl Build {
    /// Builds the topology from `inputs` (ids checked against the node
    /// count, or mapped through `map`). `expected` sizes the buckets.
    pub fn topology(
        &mut self,
        inputs: &[EdgeInput],
        map: Option<&IdMap>,
        expected: u64,
    ) -> Result<Vec<u64>> {
        self.build_topology(inputs, map, None, expected)
    }

    /// Builds a typed store's topology: input `i` joins the types
    /// `ends[i]`, its ids are the types' own. The schema set with
    /// [`Build::set_schema`] gets each relation's edge count (edges are
    /// assigned to relations by their endpoints' types).
    pub fn typed_topology(
        &mut self,
        inputs: &[EdgeInput],
        ends: &[EdgeEnds],
        expected: u64,
    ) -> Result<Vec<u64>> {
        self.build_topology(inputs, None, Some(ends), expected)
    }

    fn build_topology(
        &mut self,
        inputs: &[EdgeInput],
        map: Option<&IdMap>,
        ends: Option<&[EdgeEnds]>,
        expected: u64,
    ) -> Result<Vec<u64>> {
        let started = Instant::now();
        let mut split = match &self.opts.edge_splits {
            None => None,
            Some(source) => {
                let relation = SplitRelation::resolve(
                    self.builder.schema(),
                    self.opts.target_relation.as_deref(),
                )?;
                // A relation's split names its own edge file.
                let input = match (&relation, ends) {
                    (Some(r), Some(ends)) => ends.iter().position(|e| *e == r.ends),
                    _ => None,
                };
                Some(SplitBuild::new(
                    source,
                    (self.n, self.opts.undirected || self.opts.undirected_splits),
                    map,
                    relation,
                    inputs
                        .get(input.unwrap_or(0))
                        .map_or(Path::new("<edges>"), EdgeInput::path),
                )?)
            }
        };
        let scratch = self.builder.staging_path().join("scratch");
        let expected = if self.opts.undirected {
            expected.saturating_mul(2)
        } else {
            expected
        };
        // The sort gets half the budget, less the topology writer's
        // out-degree count.
        let sort_budget = (self.opts.memory / 2).saturating_sub(
            self.n
                .saturating_mul(crate::store::TOPOLOGY_WRITER_BYTES_PER_NODE),
        );
        let mut bucketer = EdgeBucketer::new(&scratch, self.n, expected, sort_budget)?;
        let bar = progress(expected, "edges", self.opts.quiet);
        let mut sink = EdgeSink {
            bucketer: &mut bucketer,
            n: self.n,
            ends: None,
            map,
            undirected: self.opts.undirected,
            bar: &bar,
            read: 0,
            cancel: &self.cancel,
            notes: Vec::new(),
        };
        let mut counts = Vec::with_capacity(inputs.len());
        for (i, input) in inputs.iter().enumerate() {
            sink.ends = ends.and_then(|e| e.get(i)).cloned();
            counts.push(sink.push_input(input)?);
        }
        self.report.edges_read = sink.read;
        self.report.notes.append(&mut sink.notes);
        bar.finish_and_clear();
        self.report
            .phases
            .push(("read + spill edges", started.elapsed()));
        let started = Instant::now();
        let mut topo = self.builder.topology_writer()?;
        match self.builder.schema().cloned() {
            None => match split.as_mut() {
                None => self.report.csc = bucketer.finish(self.opts.csc, &mut topo)?,
                Some(split) => {
                    let mut sink = SplitSink {
                        inner: &mut topo,
                        split,
                        node: 0,
                        kept: Vec::new(),
                    };
                    self.report.csc = bucketer.finish(self.opts.csc, &mut sink)?;
                }
            },
            Some(schema) => {
                let mut counting = CountingSink {
                    inner: &mut topo,
                    counts: RelationCounts::new(&schema),
                    next: 0,
                };
                match split.as_mut() {
                    None => self.report.csc = bucketer.finish(self.opts.csc, &mut counting)?,
                    Some(split) => {
                        let mut sink = SplitSink {
                            inner: &mut counting,
                            split,
                            node: 0,
                            kept: Vec::new(),
                        };
                        self.report.csc = bucketer.finish(self.opts.csc, &mut sink)?;
                    }
                }
                let counts = counting.counts.counts().to_vec();
                self.builder.set_relation_edges(&counts)?;
            }
        }
        self.builder.add_topology(topo)?;
        if let Some(split) = split {
            self.report.edges_held_out = split.removed();
            let s = split.finish(&mut self.builder)?;
            tracing::info!(
                valid = s.valid.len(),
                test = s.test.len(),
                held_out = self.report.edges_held_out,
                "edge splits written"
            );
        }
        tracing::info!(
            edges_read = self.report.edges_read,
            edges_kept = self.report.csc.edges_out,
            "topology written"
        );
        self.report
            .phases
            .push(("sort + write csc", started.elapsed()));
        Ok(counts)
    }
}
