//! A device's cost of reading feature pages, and the choice it drives
//! between random reads and one sequential pass (DiskGNN's lesson).
//!
//! A gather reads the distinct pages its rows sit on. Two ways to issue
//! them:
//!
//! * **random reads** — one read per run of needed pages, runs at most
//!   [`GatherOptions::merge_gap_pages`](super::gather::GatherOptions::merge_gap_pages)
//!   apart merged, each read at most 32 pages;
//! * **a sequential pass** — the span from the first needed page to the
//!   last, in reads of up to [`SCAN_READ_PAGES`], every page between read
//!   and dropped (a gap longer than a read is skipped).
//!
//! [`ReadCostModel`] prices a read of `k` pages at queue depth 64 as
//! `max(per_read + k × per_page, k × per_page_sequential)`: a fixed cost a
//! read plus a cost a page while reads are small, the device's sequential
//! bandwidth once they are large. `ginex bench io` fits the three numbers
//! on a device (its read-size sweep) and prints them as a `--read-cost`
//! value. A gather takes the plan with the lower predicted cost
//! ([`SequentialReads::Auto`]); both read the same pages' bytes, so batches
//! and checksums do not depend on the choice.
//!
//! On a device whose random reads are cheap against its bandwidth (this
//! project's SSD: [`ReadCostModel::THIS_MACHINE`]) a sequential pass never
//! wins: a page read inside a large read costs as much as one a merged
//! random read brings. On one whose reads are dear (a network disk of a few
//! thousand IOPS, an HDD) it wins once a gather needs a large enough share
//! of its span, as a superbatch's init does.

use crate::error::{Error, Result};

/// Pages a read of a sequential pass: 1 MiB.
pub const SCAN_READ_PAGES: u64 = 256;

/// The cost of reads at queue depth 64, in microseconds of device time
/// (reads overlap: the sum over a gather's reads is its predicted time).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ReadCostModel {
    /// Fixed cost of a read.
    pub us_per_read: f64,
    /// Cost of each page of a small read.
    pub us_per_page: f64,
    /// Cost of each page of a large read (4 KiB over the sequential
    /// bandwidth).
    pub us_per_page_sequential: f64,
}

impl ReadCostModel {
    /// This project's machine (a 2-core VM on an NVMe-backed SSD): the fit
    /// of `ginex bench io`'s read-size sweep, 9.9 µs a read + 2.7 µs a page
    /// over reads of 1–8 pages, 1.26 GB/s for 32-page reads
    /// (`docs/lab/performance-journal.md`, "Device read-size sweep").
    pub const THIS_MACHINE: ReadCostModel = ReadCostModel {
        us_per_read: 9.9,
        us_per_page: 2.7,
        us_per_page_sequential: 3.25,
    };

    /// Predicted microseconds of one read of `pages` pages.
    pub fn read_us(&self, pages: u64) -> f64 {
        let k = pages as f64;
        (self.us_per_read + k * self.us_per_page).max(k * self.us_per_page_sequential)
    }

    /// Parses `--read-cost US_PER_READ,US_PER_PAGE,US_PER_PAGE_SEQUENTIAL`
    /// (three non-negative numbers, the form `ginex bench io` prints).
    pub fn parse(s: &str) -> Result<ReadCostModel> {
        let bad = |why: &str| {
            Error::invalid_argument(format!(
                "--read-cost `{s}`: {why}; expected three non-negative numbers of microseconds, \
                 a read, a page, a page of a large read (e.g. --read-cost 9.9,2.7,3.25, \
                 as `ginex bench io` prints them)"
            ))
        };
        let parts: Vec<&str> = s.split(',').map(str::trim).collect();
        if parts.len() != 3 {
            return Err(bad(&format!("{} values", parts.len())));
        }
        let mut v = [0f64; 3];
        for (slot, part) in v.iter_mut().zip(&parts) {
            *slot = part
                .parse::<f64>()
                .ok()
                .filter(|x| x.is_finite() && *x >= 0.0)
                .ok_or_else(|| bad(&format!("`{part}` is not a non-negative number")))?;
        }
        Ok(ReadCostModel {
            us_per_read: v[0],
            us_per_page: v[1],
            us_per_page_sequential: v[2],
        })
    }

    /// The `--read-cost` form of this model.
    pub fn to_arg(&self) -> String {
        format!(
            "{},{},{}",
            self.us_per_read, self.us_per_page, self.us_per_page_sequential
        )
    }
}

impl std::fmt::Display for ReadCostModel {
    /// The `--read-cost` form.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.to_arg())
    }
}

impl Default for ReadCostModel {
    fn default() -> Self {
        ReadCostModel::THIS_MACHINE
    }
}

/// Whether a gather may read its pages in one sequential pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SequentialReads {
    /// When the cost model predicts it costs less than random reads, and
    /// reads are merged at all (a sequential pass is merging taken to the
    /// whole span; `--read-merge-gap off` asks for one read per page).
    #[default]
    Auto,
    /// Never (random reads only).
    Never,
    /// Always (every gather of more than one read; for comparison).
    Always,
}

impl serde::Serialize for SequentialReads {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl SequentialReads {
    /// The names `--sequential-reads` takes.
    pub const NAMES: [&'static str; 3] = ["auto", "never", "always"];

    /// Parses `auto`, `never` or `always`.
    pub fn parse(s: &str) -> Result<SequentialReads> {
        match s {
            "auto" => Ok(SequentialReads::Auto),
            "never" => Ok(SequentialReads::Never),
            "always" => Ok(SequentialReads::Always),
            _ => Err(Error::invalid_argument(format!(
                "--sequential-reads `{s}`: expected one of auto, never, always"
            ))),
        }
    }

    /// Its name.
    pub fn name(self) -> &'static str {
        match self {
            SequentialReads::Auto => "auto",
            SequentialReads::Never => "never",
            SequentialReads::Always => "always",
        }
    }

    /// Whether to read sequentially, given the predicted microseconds of
    /// the random reads and of the sequential pass (ties go to random
    /// reads: they read fewer bytes).
    pub fn choose_scan(self, random_us: f64, scan_us: f64) -> bool {
        match self {
            SequentialReads::Auto => scan_us < random_us,
            SequentialReads::Never => false,
            SequentialReads::Always => true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_read_costs_its_fixed_part_and_pages_until_bandwidth_bounds_it() {
        let m = ReadCostModel::THIS_MACHINE;
        assert!((m.read_us(1) - 12.6).abs() < 1e-9);
        assert!((m.read_us(8) - 31.5).abs() < 1e-9);
        // 32 pages: bandwidth-bound (measured 104.2 µs).
        assert!((m.read_us(32) - 104.0).abs() < 1e-9);
        // On this machine a page in a large read costs what it costs in a
        // 32-page read: a sequential pass never undercuts merged reads.
        assert!(m.read_us(SCAN_READ_PAGES) / SCAN_READ_PAGES as f64 >= m.read_us(32) / 32.0 - 1e-9);
    }

    #[test]
    fn read_cost_parses_three_numbers_and_names_what_is_wrong() {
        let m = ReadCostModel::parse("300, 2,3.5").unwrap();
        assert_eq!(m.us_per_read, 300.0);
        assert_eq!(m.us_per_page_sequential, 3.5);
        assert_eq!(ReadCostModel::parse(&m.to_arg()).unwrap(), m);
        let e = ReadCostModel::parse("1,2").unwrap_err().to_string();
        assert!(e.contains("2 values") && e.contains("--read-cost"), "{e}");
        let e = ReadCostModel::parse("1,-2,3").unwrap_err().to_string();
        assert!(e.contains("`-2`"), "{e}");
        let e = ReadCostModel::parse("1,x,3").unwrap_err().to_string();
        assert!(e.contains("`x`"), "{e}");
    }

    #[test]
    fn the_choice_follows_the_mode() {
        for name in SequentialReads::NAMES {
            assert_eq!(SequentialReads::parse(name).unwrap().name(), name);
        }
        assert!(SequentialReads::parse("sometimes").is_err());
        assert!(SequentialReads::Auto.choose_scan(10.0, 9.0));
        assert!(!SequentialReads::Auto.choose_scan(10.0, 10.0));
        assert!(!SequentialReads::Never.choose_scan(10.0, 1.0));
        assert!(SequentialReads::Always.choose_scan(1.0, 10.0));
    }
}
