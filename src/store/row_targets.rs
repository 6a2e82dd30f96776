//! Where the rows of one read go.
//!
//! A cache's miss path reads a batch's missed rows straight into their
//! places in the batch (among the hits copied there from the cache), so
//! no buffer of the batch's size stands between the read and the batch;
//! rows read along with them for later (a Belady cache's page companions)
//! go, in order, to a buffer of their own.

use crate::error::{Error, Result};

/// Destinations of the rows of one read, by the row's index `k` in the
/// request: see [`in_order`](Self::in_order) and
/// [`scattered`](Self::scattered).
pub struct RowTargets<'a> {
    batch: &'a mut [u8],
    /// None: row `k` goes to row `k` of `batch`.
    at: Option<&'a [usize]>,
    rest: &'a mut [u8],
    row_bytes: usize,
}

impl<'a> RowTargets<'a> {
    /// Row `k` to row `k` of `out` (`out.len() / row_bytes` rows).
    pub fn in_order(out: &'a mut [u8], row_bytes: usize) -> Self {
        RowTargets {
            batch: out,
            at: None,
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
        if row_bytes == 0 || rest.len() % row_bytes != 0 {
            return Err(Error::internal(format!(
                "a buffer of {} bytes does not hold whole rows of {row_bytes} bytes",
                rest.len()
            )));
        }
        Ok(RowTargets {
            batch,
            at: Some(at),
            rest,
            row_bytes,
        })
    }

    /// Rows the targets take: the read must ask for exactly these many.
    pub fn rows(&self) -> usize {
        let rb = self.row_bytes.max(1);
        match self.at {
            None => self.batch.len() / rb,
            Some(at) => at.len() + self.rest.len() / rb,
        }
    }

    /// Checks that a read of `ids` rows fills the targets exactly.
    pub fn check_rows(&self, ids: usize) -> Result<()> {
        match self.at {
            None => Error::check_output_len(self.batch.len(), ids, self.row_bytes, "bytes"),
            Some(_) if self.rows() == ids => Ok(()),
            Some(_) => Err(Error::OutOfRange(format!(
                "{ids} rows read into targets for {} rows",
                self.rows()
            ))),
        }
    }

    /// Where row `k` of the read goes (`k < rows()`).
    pub fn row_mut(&mut self, k: usize) -> &mut [u8] {
        let rb = self.row_bytes;
        let (buf, row) = match self.at {
            None => (&mut *self.batch, k),
            Some(at) if k < at.len() => (&mut *self.batch, at[k]),
            Some(at) => (&mut *self.rest, k - at.len()),
        };
        &mut buf[row * rb..(row + 1) * rb]
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
