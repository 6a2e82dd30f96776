//! Where the rows of one read go.
//!
//! A cache's miss path reads a batch's missed rows straight into their
//! places in the batch (among the hits copied there from the cache), so
//! no buffer of the batch's size stands between the read and the batch;
//! rows read along with them for later (a Belady cache's page companions)
//! go, in order, to a buffer of their own. [`fill_batch`] copies a large
//! batch's hits on a thread of its own while the misses are read.

use crate::error::{Error, Result};

/// Destinations of the rows of one read, by the row's index `k` in the
/// request: see [`in_order`](Self::in_order) and
/// [`scattered`](Self::scattered).
pub struct RowTargets<'a> {
    places: Places<'a>,
    rest: &'a mut [u8],
    row_bytes: usize,
}

/// Where the rows before `rest` go.
enum Places<'a> {
    /// Row `k` to row `k` of the batch.
    InOrder(&'a mut [u8]),
    /// Row `k` to row `at[k]` of the batch.
    Scattered(&'a mut [u8], &'a [usize]),
    /// Row `k` to `rows[k]` (rows of a batch whose other rows another
    /// thread fills meanwhile).
    Rows(Vec<&'a mut [u8]>),
}

impl<'a> RowTargets<'a> {
    /// Row `k` to row `k` of `out` (`out.len() / row_bytes` rows).
    pub fn in_order(out: &'a mut [u8], row_bytes: usize) -> Self {
        RowTargets {
            places: Places::InOrder(out),
            rest: &mut [],
            row_bytes,
        }
    }

    /// Row `k < at.len()` to row `at[k]` of `batch`, the rows after them
    /// in order to `rest` (whole rows). Refused where a position is
    /// outside `batch` or `rest` does not hold whole rows.
    pub fn scattered(
        batch: &'a mut [u8],
        at: &'a [usize],
        rest: &'a mut [u8],
        row_bytes: usize,
    ) -> Result<Self> {
        let batch_rows = batch.len() / row_bytes.max(1);
        if let Some(&pos) = at.iter().find(|&&pos| pos >= batch_rows) {
            return Err(Error::internal(format!(
                "row target {pos} is outside the batch's {batch_rows} rows"
            )));
        }
        check_whole_rows(rest, row_bytes)?;
        Ok(RowTargets {
            places: Places::Scattered(batch, at),
            rest,
            row_bytes,
        })
    }

    /// Rows the targets take: the read must ask for exactly these many.
    pub fn rows(&self) -> usize {
        let rb = self.row_bytes.max(1);
        self.rest.len() / rb
            + match &self.places {
                Places::InOrder(batch) => batch.len() / rb,
                Places::Scattered(_, at) => at.len(),
                Places::Rows(rows) => rows.len(),
            }
    }

    /// Checks that a read of `ids` rows fills the targets exactly.
    pub fn check_rows(&self, ids: usize) -> Result<()> {
        match &self.places {
            Places::InOrder(batch) => {
                Error::check_output_len(batch.len(), ids, self.row_bytes, "bytes")
            }
            _ if self.rows() == ids => Ok(()),
            _ => Err(Error::OutOfRange(format!(
                "{ids} rows read into targets for {} rows",
                self.rows()
            ))),
        }
    }

    /// Where row `k` of the read goes (`k < rows()`).
    pub fn row_mut(&mut self, k: usize) -> &mut [u8] {
        let rb = self.row_bytes;
        let placed = match &self.places {
            Places::InOrder(_) => usize::MAX,
            Places::Scattered(_, at) => at.len(),
            Places::Rows(rows) => rows.len(),
        };
        if k >= placed {
            let r = k - placed;
            return &mut self.rest[r * rb..(r + 1) * rb];
        }
        match &mut self.places {
            Places::InOrder(batch) => &mut batch[k * rb..(k + 1) * rb],
            Places::Scattered(batch, at) => &mut batch[at[k] * rb..(at[k] + 1) * rb],
            Places::Rows(rows) => rows[k],
        }
    }

    /// Fills every target from `rows`, the read's rows in order (a source
    /// that reads into one buffer first).
    pub fn fill_from(&mut self, rows: &[u8]) -> Result<()> {
        self.check_rows(rows.len() / self.row_bytes.max(1))?;
        Error::check_output_len(rows.len(), self.rows(), self.row_bytes, "bytes")?;
        for (k, row) in rows.chunks_exact(self.row_bytes).enumerate() {
            self.row_mut(k).copy_from_slice(row);
        }
        Ok(())
    }
}

/// Refuses a buffer that does not hold whole rows of `row_bytes`.
fn check_whole_rows(rest: &[u8], row_bytes: usize) -> Result<()> {
    if row_bytes == 0 || rest.len() % row_bytes != 0 {
        return Err(Error::internal(format!(
            "a buffer of {} bytes does not hold whole rows of {row_bytes} bytes",
            rest.len()
        )));
    }
    Ok(())
}

/// Hit bytes from which [`fill_batch`] copies them on a thread of its own:
/// 4 MiB (a 3 M × 256 batch at 5× copies ~60 MiB of hits, 20 ms, beside
/// ~170 ms of miss reads; a small batch is not worth a thread).
pub const HITS_BESIDE_READ_BYTES: usize = 4 << 20;

/// Bytes a batch row [`fill_batch`] may hold beside the batch while its
/// hits are copied on a thread of their own: the caller's hit list (8), a
/// hit's row slice and slot (24; a miss's slice, 16).
pub const FILL_BYTES_PER_ROW: u64 = 32;

/// Fills `batch`, rows of `row_bytes`: each hit `(pos, slot)` from row
/// `slot` of `slots` to row `pos`, and the misses through `read`, row `k`
/// of the read to row `miss_at[k]` and the rows after them in order to
/// `rest` (a cache's page companions). Where the hits come to
/// [`HITS_BESIDE_READ_BYTES`] and there are misses, a thread of their own
/// copies the hits while `read` waits for the device (the executor's
/// copies were on the critical path of every gather: 2.3 s of a 30 s
/// epoch at 5× on 3 M nodes). Positions must be distinct, ascending and
/// inside the batch; `read` must fill every target (on error the batch holds an
/// unspecified mix of rows).
pub fn fill_batch(
    batch: &mut [u8],
    row_bytes: usize,
    (slots, hits): (&[u8], &[(u32, u32)]),
    miss_at: &[usize],
    rest: &mut [u8],
    read: impl FnOnce(&mut RowTargets<'_>) -> Result<()>,
) -> Result<()> {
    let rb = row_bytes;
    let copy = |row: &mut [u8], slot: u32| -> Result<()> {
        let slot = slot as usize;
        let from = slots.get(slot * rb..(slot + 1) * rb).ok_or_else(|| {
            Error::internal(format!("cache slot {slot} is outside the cache's slots"))
        })?;
        row.copy_from_slice(from);
        Ok(())
    };
    if hits.len() * rb < HITS_BESIDE_READ_BYTES || miss_at.is_empty() {
        for &(pos, slot) in hits {
            let pos = pos as usize;
            let row = batch.get_mut(pos * rb..(pos + 1) * rb).ok_or_else(|| {
                Error::internal(format!("hit position {pos} is outside the batch"))
            })?;
            copy(row, slot)?;
        }
        return read(&mut RowTargets::scattered(batch, miss_at, rest, rb)?);
    }
    check_whole_rows(rest, rb)?;
    // One walk over the batch's rows hands each to the hits or the
    // misses, both in ascending position.
    let (mut hit_rows, mut miss_rows) = (
        Vec::with_capacity(hits.len()),
        Vec::with_capacity(miss_at.len()),
    );
    let (mut next_hit, mut next_miss) = (hits.iter().peekable(), miss_at.iter().peekable());
    for (pos, row) in batch.chunks_exact_mut(rb).enumerate() {
        if let Some(&(_, slot)) = next_hit.next_if(|&&(p, _)| p as usize == pos) {
            hit_rows.push((row, slot));
        } else if next_miss.next_if(|&&p| p == pos).is_some() {
            miss_rows.push(row);
        }
    }
    if let Some(pos) = next_hit
        .next()
        .map(|&(p, _)| p as usize)
        .or(next_miss.next().copied())
    {
        return Err(Error::internal(format!(
            "row {pos} of the batch is targeted twice, out of order or outside it"
        )));
    }
    std::thread::scope(|scope| {
        let copier = scope.spawn(|| -> Result<()> {
            let _cpu = crate::io::cpu_time::RoleGuard::start(crate::io::cpu_time::Role::Executor);
            hit_rows
                .into_iter()
                .try_for_each(|(row, slot)| copy(row, slot))
        });
        let read = read(&mut RowTargets {
            places: Places::Rows(miss_rows),
            rest,
            row_bytes: rb,
        });
        let copied = copier
            .join()
            .map_err(|_| Error::internal("the thread copying a batch's hits panicked"))?;
        read.and(copied)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scattered_rows_land_at_their_positions_and_the_rest_in_order() {
        let mut batch = vec![0u8; 8];
        let mut rest = vec![0u8; 4];
        let at = [3, 0];
        let mut to = RowTargets::scattered(&mut batch, &at, &mut rest, 2).unwrap();
        assert_eq!(to.rows(), 4);
        to.fill_from(&[1, 1, 2, 2, 3, 3, 4, 4]).unwrap();
        assert_eq!(batch, [2, 2, 0, 0, 0, 0, 1, 1]);
        assert_eq!(rest, [3, 3, 4, 4]);
    }

    /// Small or large, on a thread of their own or not, hits come from
    /// their slots and misses from the read, each at its position, the
    /// rest in order.
    #[test]
    fn a_batch_is_filled_from_its_hits_and_its_read() {
        let rb = 4096;
        for rows in [3usize, HITS_BESIDE_READ_BYTES / rb * 2] {
            let slots: Vec<u8> = (0..rows * rb).map(|i| (i / rb) as u8 ^ 0x55).collect();
            // Odd positions hit slot `rows - 1 - pos`, even ones miss.
            let hits: Vec<(u32, u32)> = (1..rows)
                .step_by(2)
                .map(|p| (p as u32, (rows - 1 - p) as u32))
                .collect();
            let miss_at: Vec<usize> = (0..rows).step_by(2).collect();
            let mut batch = vec![0u8; rows * rb];
            let mut rest = vec![0u8; rb];
            fill_batch(&mut batch, rb, (&slots, &hits), &miss_at, &mut rest, |to| {
                let read: Vec<u8> = (0..to.rows() * rb).map(|i| (i / rb) as u8).collect();
                to.fill_from(&read)
            })
            .unwrap();
            for pos in 0..rows {
                let want = if pos % 2 == 1 {
                    (rows - 1 - pos) as u8 ^ 0x55
                } else {
                    (pos / 2) as u8
                };
                assert!(
                    batch[pos * rb..(pos + 1) * rb].iter().all(|&b| b == want),
                    "row {pos} of {rows}"
                );
            }
            assert!(rest.iter().all(|&b| b == miss_at.len() as u8), "{rows}");
            // A position named twice is refused, not written twice.
            let twice = [miss_at[0]; 2];
            let e = fill_batch(&mut batch, rb, (&slots, &hits), &twice, &mut [], |_| Ok(()));
            assert!(rows < 8 || e.is_err(), "{rows}");
            // The read's error comes back.
            let e = fill_batch(&mut batch, rb, (&slots, &hits), &miss_at, &mut rest, |_| {
                Err(Error::internal("the device went away"))
            });
            assert!(e.unwrap_err().to_string().contains("device went away"));
        }
    }

    #[test]
    fn in_order_rows_fill_the_output() {
        let mut out = vec![0u8; 6];
        let mut to = RowTargets::in_order(&mut out, 3);
        to.fill_from(&[1, 2, 3, 4, 5, 6]).unwrap();
        assert_eq!(out, [1, 2, 3, 4, 5, 6]);
    }

    #[test]
    fn targets_outside_the_batch_or_reads_of_another_size_are_refused() {
        let mut batch = vec![0u8; 4];
        let e = RowTargets::scattered(&mut batch, &[2], &mut [], 2)
            .err()
            .unwrap();
        assert!(e.to_string().contains("row target 2"), "{e}");
        let mut rest = vec![0u8; 3];
        assert!(RowTargets::scattered(&mut batch, &[0], &mut rest, 2).is_err());
        let mut to = RowTargets::scattered(&mut batch, &[1], &mut [], 2).unwrap();
        assert!(to.check_rows(2).is_err());
        assert!(to.fill_from(&[1, 1, 2, 2]).is_err());
        assert_eq!(batch, [0, 0, 0, 0], "a refused fill writes nothing");
    }
}
