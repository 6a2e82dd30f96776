//! The memory plan of streaming layer-wise inference
//! ([`crate::train::layerwise_stream`]): how `--memory` is split between
//! what the process already holds, the output, the projection chunks, the
//! read buffer of a pass and a destination partition's accumulators and
//! edge keys, and therefore how many passes each layer takes.

use crate::error::{Error, Result};

/// What a pass's sizes depend on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamShape {
    /// Bytes of one stored feature row (layer 0's raw input).
    pub row_bytes: u64,
    /// The widest layer input (`f32` values).
    pub max_in: u64,
    /// The widest layer output (`f32` values).
    pub max_out: u64,
    /// The widest message row a pass streams (`f32` values; 0: no layer
    /// aggregates).
    pub max_message: u64,
    /// The largest in-degree (a partition holds at least one whole list).
    pub max_degree: u64,
    /// Values of the result (nodes asked for × the last layer's width).
    pub output_values: u64,
    /// Distinct nodes asked for.
    pub targets: u64,
}

/// How a streaming pass uses its budget (bytes unless named otherwise).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamPlan {
    /// The budget (`--memory`).
    pub memory: u64,
    /// Resident before the pass: libtorch, the model, the graph's offsets.
    pub fixed: u64,
    /// The result and the last layer's target index.
    pub output: u64,
    /// Rows projected or finalised at once.
    pub chunk_rows: u64,
    /// Bytes a chunk row takes (raw row, input, outputs, libtorch's
    /// temporaries).
    pub chunk_row_bytes: u64,
    /// Message rows read per step of a pass.
    pub block_rows: u64,
    /// Bytes a block row takes (the bytes read and their `f32` values).
    pub block_row_bytes: u64,
    /// What a destination partition's accumulators (4 bytes a value) and
    /// edge keys (8 bytes an edge) may take: a layer's passes are its
    /// accumulator and edge bytes over this.
    pub partition: u64,
}

/// Bytes per edge key of a partition (source << 32 | local destination).
pub const EDGE_BYTES: u64 = 8;

/// Most rows projected at once (larger chunks gain nothing in a matmul).
const MAX_CHUNK_ROWS: u64 = 1 << 13;

/// Most bytes read per step of a pass.
const MAX_BLOCK_BYTES: u64 = 16 << 20;

impl StreamPlan {
    /// Splits `memory` for `shape` given `fixed` bytes already resident: a
    /// quarter of what is left (at most) for projection chunks, an eighth
    /// (at most 16 MiB read) for the read buffer, the rest for partitions.
    /// Refuses a budget that cannot hold the output, one chunk row, one
    /// block row and a partition of the largest in-neighbour list.
    pub fn new(memory: u64, fixed: u64, shape: &StreamShape) -> Result<StreamPlan> {
        let output = shape.output_values * 4 + shape.targets * 16;
        let chunk_row_bytes = shape.row_bytes + 4 * (2 * shape.max_in + 6 * shape.max_out);
        let block_row_bytes = 8 * shape.max_message.max(1);
        let min_partition = 4 * shape.max_message + EDGE_BYTES * shape.max_degree;
        let need = fixed + output + chunk_row_bytes + block_row_bytes + min_partition;
        let mib = |b: u64| b.div_ceil(1 << 20);
        if memory < need {
            return Err(Error::invalid_argument(format!(
                "layer-wise inference needs at least {} MiB: {} MiB resident before it (libtorch, the model, the graph's offsets), {} MiB for the result, and one row of each buffer plus the largest in-neighbour list ({} edges); --memory gives {} MiB",
                mib(need),
                mib(fixed),
                mib(output),
                shape.max_degree,
                mib(memory)
            )));
        }
        let buffers = memory - fixed - output;
        let chunk_rows = (buffers / 4 / chunk_row_bytes).clamp(1, MAX_CHUNK_ROWS);
        let block_rows = (buffers / 8 / block_row_bytes)
            .clamp(1, (MAX_BLOCK_BYTES / (4 * shape.max_message.max(1))).max(1));
        let partition = buffers - chunk_rows * chunk_row_bytes - block_rows * block_row_bytes;
        Ok(StreamPlan {
            memory,
            fixed,
            output,
            chunk_rows,
            chunk_row_bytes,
            block_rows,
            block_row_bytes,
            partition: partition.max(min_partition),
        })
    }

    /// One line for people.
    pub fn describe(&self) -> String {
        let mib = |b: u64| b as f64 / f64::from(1 << 20);
        format!(
            "layer-wise plan for {:.0} MiB: {:.0} MiB resident, {:.0} MiB result, chunks of {} rows ({:.0} MiB), reads of {} rows ({:.0} MiB), partitions of {:.0} MiB",
            mib(self.memory),
            mib(self.fixed),
            mib(self.output),
            self.chunk_rows,
            mib(self.chunk_rows * self.chunk_row_bytes),
            self.block_rows,
            mib(self.block_rows * self.block_row_bytes),
            mib(self.partition)
        )
    }

    /// The destination partitions of a layer whose message rows are
    /// `message` values wide: consecutive runs of `degrees` (one per
    /// destination, in order) whose accumulators and edge keys fit
    /// [`partition`](Self::partition). Returns each partition's end index.
    pub fn partitions(&self, message: u64, degrees: impl Iterator<Item = u64>) -> Vec<usize> {
        let mut ends = Vec::new();
        let (mut bytes, mut count) = (0u64, 0usize);
        for (i, d) in degrees.enumerate() {
            let more = 4 * message + EDGE_BYTES * d;
            if count > 0 && bytes + more > self.partition {
                ends.push(i);
                bytes = 0;
                count = 0;
            }
            bytes += more;
            count += 1;
        }
        if count > 0 {
            ends.push(ends.last().copied().unwrap_or(0) + count);
        }
        ends
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape() -> StreamShape {
        StreamShape {
            row_bytes: 1024,
            max_in: 256,
            max_out: 128,
            max_message: 128,
            max_degree: 1000,
            output_values: 3_000_000 * 16,
            targets: 3_000_000,
        }
    }

    #[test]
    fn the_plan_shrinks_partitions_with_the_budget_and_refuses_below_its_minimum() {
        let s = shape();
        let fixed = 300 << 20;
        let big = StreamPlan::new(4 << 30, fixed, &s).unwrap();
        let small = StreamPlan::new(1 << 30, fixed, &s).unwrap();
        // Everything the plan hands out fits the budget.
        for p in [&big, &small] {
            let used = p.fixed
                + p.output
                + p.chunk_rows * p.chunk_row_bytes
                + p.block_rows * p.block_row_bytes
                + p.partition;
            assert!(used <= p.memory, "{p:?}");
        }
        assert!(small.partition < big.partition);
        // 3M destinations of 128 values and 10 edges each: 1.76 GiB of
        // accumulators and keys, several partitions at 1 GiB, fewer at 4.
        let degrees = || std::iter::repeat_n(10u64, 3_000_000);
        let (pb, ps) = (
            big.partitions(128, degrees()),
            small.partitions(128, degrees()),
        );
        assert_eq!(*ps.last().unwrap(), 3_000_000);
        assert_eq!(*pb.last().unwrap(), 3_000_000);
        assert!(
            ps.len() > pb.len() && !pb.is_empty(),
            "{} vs {}",
            ps.len(),
            pb.len()
        );
        let per = (4 * 128 + EDGE_BYTES * 10) as usize;
        let mut start = 0;
        for &end in &ps {
            assert!((end - start) * per <= small.partition as usize);
            start = end;
        }
        // Below the fixed part, the output and one row of each buffer: refused,
        // naming the need and the budget.
        let err = StreamPlan::new(fixed + (100 << 20), fixed, &s)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("needs at least") && err.contains("--memory gives 400 MiB"),
            "{err}"
        );
    }

    #[test]
    fn a_list_larger_than_a_partition_gets_a_partition_of_its_own() {
        let mut s = shape();
        s.output_values = 0;
        s.targets = 0;
        let plan = StreamPlan::new(64 << 20, 0, &s).unwrap();
        let huge = plan.partition / EDGE_BYTES;
        let ends = plan.partitions(128, [1, huge, 1, 1].into_iter());
        assert_eq!(ends, vec![1, 2, 4]);
        assert!(plan.partitions(128, std::iter::empty()).is_empty());
    }
}
