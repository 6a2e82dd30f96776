//! The `q8` feature dtype: 8-bit codes with a per-row affine scale, and
//! the reconstruction-error record of a q8 `features.pages` header.
//!
//! Spec: `format/features.md`, "q8 rows" and "The q8 error record". A row
//! of `dim` elements is `min` (f32), `step` (f32), then `dim` u8 codes;
//! element `j` decodes to `min + code_j x step`. The writer picks `min` and
//! `step = (max - min) / 255` per row, so the error of an element is at
//! most half a step (`(max - min) / 510`), plus f32 rounding.

use std::path::Path;

use crate::error::{Error, Result};
use crate::format::bytes::{le_u32, le_u64};

/// Offset in a q8 row of its `min` (`f32`).
pub const Q8_MIN_OFFSET: usize = 0;
/// Offset in a q8 row of its `step` (`f32`).
pub const Q8_STEP_OFFSET: usize = Q8_MIN_OFFSET + 4;
/// Offset in a q8 row of its first code (`u8`, one per element).
pub const Q8_CODES_OFFSET: usize = Q8_STEP_OFFSET + 4;
/// The largest code.
pub const Q8_MAX_CODE: u8 = 255;

/// File offset in a q8 `features.pages` header (v1.11) of the error
/// record: right after the layout record (`pages::LAYOUT_RECORD_END`,
/// asserted in pages.rs). Its fields:
pub const Q8_RECORD_OFFSET: usize = 76;
/// Rows measured (`u64`).
pub const Q8_ROWS_OFFSET: usize = Q8_RECORD_OFFSET;
/// Largest absolute error of a decoded element (`f32`).
pub const Q8_MAX_ABS_OFFSET: usize = Q8_ROWS_OFFSET + 8;
/// Mean absolute error over the measured elements (`f32`).
pub const Q8_MEAN_ABS_OFFSET: usize = Q8_MAX_ABS_OFFSET + 4;
/// Smallest measured source value (`f32`).
pub const Q8_LOW_OFFSET: usize = Q8_MEAN_ABS_OFFSET + 4;
/// Largest measured source value (`f32`).
pub const Q8_HIGH_OFFSET: usize = Q8_LOW_OFFSET + 4;
/// CRC-32 of the record's bytes before it (`u32`).
pub const Q8_RECORD_CRC_OFFSET: usize = Q8_HIGH_OFFSET + 4;
/// End of the record: the header padding (zero) starts here.
pub const Q8_RECORD_END: usize = Q8_RECORD_CRC_OFFSET + 4;

/// Bytes of a q8 row of `dim` elements.
pub fn row_bytes(dim: usize) -> usize {
    Q8_CODES_OFFSET + dim
}

fn f32_at(bytes: &[u8], at: usize) -> f32 {
    f32::from_bits(le_u32(bytes, at))
}

/// Encodes one row of finite `values` into `out` (`row_bytes(values.len())`
/// bytes). Non-finite values (which importers refuse first) are encoded as
/// the row's `min`.
pub fn encode_row(values: &[f32], out: &mut [u8]) {
    let (mut lo, mut hi) = (f32::INFINITY, f32::NEG_INFINITY);
    for &x in values.iter().filter(|x| x.is_finite()) {
        lo = lo.min(x);
        hi = hi.max(x);
    }
    if lo > hi {
        (lo, hi) = (0.0, 0.0);
    }
    // In f64: the range of two finite f32 values always fits.
    let range = f64::from(hi) - f64::from(lo);
    let step = (range / f64::from(Q8_MAX_CODE)) as f32;
    let (head, codes) = out.split_at_mut(Q8_CODES_OFFSET.min(out.len()));
    for (dst, v) in head.chunks_exact_mut(4).zip([lo, step]) {
        dst.copy_from_slice(&v.to_le_bytes());
    }
    let inv = if step > 0.0 {
        1.0 / f64::from(step)
    } else {
        0.0
    };
    for (x, c) in values.iter().zip(codes.iter_mut()) {
        let q = if x.is_finite() {
            ((f64::from(*x) - f64::from(lo)) * inv).round()
        } else {
            0.0
        };
        *c = q.clamp(0.0, f64::from(Q8_MAX_CODE)) as u8;
    }
}

/// Decodes one q8 row (`bytes`, `row_bytes(out.len())` bytes) into `out`.
/// A plain multiply-add over the codes, which the compiler vectorizes.
pub fn decode_row(bytes: &[u8], out: &mut [f32]) {
    let Some(codes) = bytes.get(Q8_CODES_OFFSET..) else {
        out.fill(0.0);
        return;
    };
    let (min, step) = (f32_at(bytes, Q8_MIN_OFFSET), f32_at(bytes, Q8_STEP_OFFSET));
    for (c, o) in codes.iter().zip(out.iter_mut()) {
        *o = min + f32::from(*c) * step;
    }
}

/// Checks one stored q8 row: `min` finite, `step` finite and not
/// negative, the largest decodable value finite, and a zero `step` only
/// with zero codes. The reason a row is corrupt, or `None`.
pub fn check_row(bytes: &[u8]) -> Option<String> {
    let Some(codes) = bytes.get(Q8_CODES_OFFSET..) else {
        return Some("row shorter than its scale".into());
    };
    let (min, step) = (f32_at(bytes, Q8_MIN_OFFSET), f32_at(bytes, Q8_STEP_OFFSET));
    if !min.is_finite() {
        return Some(format!("q8 row min is {min}"));
    }
    if !step.is_finite() || step.is_sign_negative() {
        return Some(format!("q8 row step is {step}"));
    }
    if !(min + f32::from(Q8_MAX_CODE) * step).is_finite() {
        return Some(format!("q8 row min {min} step {step} decode past f32"));
    }
    if step == 0.0 && codes.iter().any(|&c| c != 0) {
        return Some("q8 row step is 0 but its codes are not".into());
    }
    None
}

/// The reconstruction error of q8 rows against their source values.
#[derive(Debug, Clone, Copy, PartialEq, Default, serde::Serialize)]
pub struct Q8Error {
    /// Rows measured.
    pub rows: u64,
    /// Largest absolute error of one element.
    pub max_abs: f32,
    /// Sum of the absolute errors (the record keeps the mean).
    #[serde(skip)]
    sum_abs: f64,
    /// Elements measured.
    #[serde(skip)]
    elements: u64,
    /// Smallest source value measured.
    pub low: f32,
    /// Largest source value measured.
    pub high: f32,
}

impl Q8Error {
    /// The error of `encoded` (q8 rows of `dim`) against `values`, the
    /// rows they were encoded from.
    pub fn measure(dim: usize, values: &[f32], encoded: &[u8]) -> Q8Error {
        let mut e = Q8Error::default();
        let mut back = vec![0f32; dim];
        for (v, b) in values
            .chunks_exact(dim.max(1))
            .zip(encoded.chunks_exact(row_bytes(dim)))
        {
            decode_row(b, &mut back);
            e.add_row(v, &back);
        }
        e
    }

    /// Adds one row: source `values`, `decoded` from its codes.
    pub fn add_row(&mut self, values: &[f32], decoded: &[f32]) {
        let mut row = Q8Error {
            rows: 1,
            low: f32::INFINITY,
            high: f32::NEG_INFINITY,
            ..Q8Error::default()
        };
        for (x, y) in values.iter().zip(decoded) {
            let d = (x - y).abs();
            row.max_abs = row.max_abs.max(d);
            row.sum_abs += f64::from(d);
            row.low = row.low.min(*x);
            row.high = row.high.max(*x);
        }
        row.elements = values.len() as u64;
        *self = self.merge(row);
    }

    /// Both measurements as one.
    pub fn merge(self, o: Q8Error) -> Q8Error {
        if self.rows == 0 {
            return o;
        }
        if o.rows == 0 {
            return self;
        }
        Q8Error {
            rows: self.rows + o.rows,
            max_abs: self.max_abs.max(o.max_abs),
            sum_abs: self.sum_abs + o.sum_abs,
            elements: self.elements + o.elements,
            low: self.low.min(o.low),
            high: self.high.max(o.high),
        }
    }

    /// Mean absolute error of an element.
    pub fn mean_abs(&self) -> f32 {
        if self.elements == 0 {
            0.0
        } else {
            (self.sum_abs / self.elements as f64) as f32
        }
    }

    /// `error / (high - low)`: an error relative to the feature range (0
    /// for a range of 0).
    pub fn relative(&self, error: f32) -> f64 {
        let range = f64::from(self.high) - f64::from(self.low);
        if range > 0.0 {
            f64::from(error) / range
        } else {
            0.0
        }
    }

    /// The record's bytes: file offsets [`Q8_RECORD_OFFSET`]..[`Q8_RECORD_END`].
    pub fn encode_record(&self) -> [u8; Q8_RECORD_END - Q8_RECORD_OFFSET] {
        let mut r = [0u8; Q8_RECORD_END - Q8_RECORD_OFFSET];
        let (low, high) = if self.rows == 0 {
            (0.0, 0.0)
        } else {
            (self.low, self.high)
        };
        let mut fields = Vec::with_capacity(r.len());
        fields.extend_from_slice(&self.rows.to_le_bytes());
        for v in [self.max_abs, self.mean_abs(), low, high] {
            fields.extend_from_slice(&v.to_le_bytes());
        }
        let crc = crate::format::crc32(&fields);
        fields.extend_from_slice(&crc.to_le_bytes());
        r.copy_from_slice(&fields);
        r
    }

    /// Decodes the record from `head`, the file's first
    /// [`Q8_RECORD_END`] bytes or more; `path` for errors.
    pub fn decode_record(head: &[u8], path: &Path) -> Result<Q8Error> {
        let r = head
            .get(Q8_RECORD_OFFSET..Q8_RECORD_END)
            .ok_or_else(|| Error::corrupt(path, 0, "header is too short for its q8 record"))?;
        let at = |o: usize| o - Q8_RECORD_OFFSET;
        let stored = le_u32(r, at(Q8_RECORD_CRC_OFFSET));
        let got = crate::format::crc32(r.get(..at(Q8_RECORD_CRC_OFFSET)).unwrap_or_default());
        Error::check_crc(
            path,
            "q8 error record",
            Q8_RECORD_OFFSET as u64,
            stored,
            got,
        )?;
        let rows = le_u64(r, at(Q8_ROWS_OFFSET));
        let e = Q8Error {
            rows,
            max_abs: f32_at(r, at(Q8_MAX_ABS_OFFSET)),
            sum_abs: 0.0,
            elements: 0,
            low: f32_at(r, at(Q8_LOW_OFFSET)),
            high: f32_at(r, at(Q8_HIGH_OFFSET)),
        };
        let mean = f32_at(r, at(Q8_MEAN_ABS_OFFSET));
        for (o, v) in [
            (Q8_MAX_ABS_OFFSET, e.max_abs),
            (Q8_MEAN_ABS_OFFSET, mean),
            (Q8_LOW_OFFSET, e.low),
            (Q8_HIGH_OFFSET, e.high),
        ] {
            if !v.is_finite() {
                return Err(Error::corrupt(
                    path,
                    o as u64,
                    format!("q8 error record holds {v}"),
                ));
            }
        }
        // Keep the mean: one element of sum `mean`.
        Ok(Q8Error {
            sum_abs: f64::from(mean),
            elements: 1,
            ..e
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn offsets_match_the_spec_tables() {
        // format/features.md, "q8 rows" and "The q8 error record".
        assert_eq!([Q8_MIN_OFFSET, Q8_STEP_OFFSET, Q8_CODES_OFFSET], [0, 4, 8]);
        assert_eq!(row_bytes(256), 264);
        assert_eq!(
            [
                Q8_ROWS_OFFSET,
                Q8_MAX_ABS_OFFSET,
                Q8_MEAN_ABS_OFFSET,
                Q8_LOW_OFFSET,
                Q8_HIGH_OFFSET,
                Q8_RECORD_CRC_OFFSET,
                Q8_RECORD_END
            ],
            [76, 84, 88, 92, 96, 100, 104]
        );
    }

    #[test]
    fn a_row_is_min_step_then_codes() {
        let mut out = [0u8; 11];
        encode_row(&[1.0, 3.0, 1.5], &mut out);
        assert_eq!(f32_at(&out, 0), 1.0);
        assert_eq!(f32_at(&out, 4), (2.0f64 / 255.0) as f32);
        assert_eq!(&out[8..], &[0, 255, 64]);
        let mut back = [0f32; 3];
        decode_row(&out, &mut back);
        assert_eq!(back[0], 1.0);
        assert!((back[1] - 3.0).abs() < 1e-6);
        // A constant row: step 0, codes 0, exact.
        encode_row(&[-2.5; 3], &mut out);
        assert_eq!((f32_at(&out, 0), f32_at(&out, 4)), (-2.5, 0.0));
        assert_eq!(check_row(&out), None);
        decode_row(&out, &mut back);
        assert_eq!(back, [-2.5; 3]);
    }

    #[test]
    fn corrupt_scales_are_named() {
        let mut row = [0u8; 10];
        encode_row(&[0.0, 1e38], &mut row);
        assert_eq!(check_row(&row), None);
        for (at, v, want) in [
            (Q8_STEP_OFFSET, f32::NAN, "step is NaN"),
            (Q8_STEP_OFFSET, f32::INFINITY, "step is inf"),
            (Q8_STEP_OFFSET, -1.0, "step is -1"),
            (Q8_STEP_OFFSET, 0.0, "step is 0 but its codes"),
            (Q8_MIN_OFFSET, f32::NAN, "min is NaN"),
            (Q8_MIN_OFFSET, f32::NEG_INFINITY, "min is -inf"),
            (Q8_MIN_OFFSET, f32::MAX, "decode past f32"),
        ] {
            let mut bad = row;
            bad[at..at + 4].copy_from_slice(&v.to_le_bytes());
            let why = check_row(&bad).expect("refused");
            assert!(why.contains(want), "{why}");
        }
    }

    #[test]
    fn the_record_round_trips_and_refuses_damage() {
        let values = [0.0f32, 1.0, 0.3, -2.0, 4.0, 0.1];
        let mut enc = vec![0u8; 2 * row_bytes(3)];
        for (v, o) in values.chunks(3).zip(enc.chunks_mut(row_bytes(3))) {
            encode_row(v, o);
        }
        let e = Q8Error::measure(3, &values, &enc);
        assert_eq!((e.rows, e.low, e.high), (2, -2.0, 4.0));
        assert!(e.max_abs > 0.0 && e.mean_abs() <= e.max_abs);
        let mut head = vec![0u8; Q8_RECORD_END];
        head[Q8_RECORD_OFFSET..].copy_from_slice(&e.encode_record());
        let path = Path::new("features.pages");
        let back = Q8Error::decode_record(&head, path).unwrap();
        assert_eq!((back.rows, back.max_abs, back.low), (2, e.max_abs, -2.0));
        assert_eq!(back.mean_abs(), e.mean_abs());
        head[Q8_MAX_ABS_OFFSET] ^= 1;
        let err = Q8Error::decode_record(&head, path).unwrap_err().to_string();
        assert!(
            err.to_lowercase().contains("checksum") || err.contains("CRC"),
            "{err}"
        );
    }

    proptest! {
        /// Every decoded element is within half a step of its source (plus
        /// f32 rounding), and the measurement records that bound.
        #[test]
        fn decode_error_is_within_half_a_step(
            values in proptest::collection::vec(-1.0e6f32..1.0e6, 1..300),
            scale in prop_oneof![Just(1.0f32), Just(1e-30), Just(1e30)],
        ) {
            let values: Vec<f32> = values.iter().map(|v| v * scale).collect();
            let mut enc = vec![0u8; row_bytes(values.len())];
            encode_row(&values, &mut enc);
            prop_assert_eq!(check_row(&enc), None);
            let step = f32_at(&enc, Q8_STEP_OFFSET);
            let (lo, hi) = values.iter().fold((f32::MAX, f32::MIN), |(a, b), &x| (a.min(x), b.max(x)));
            let bound = step / 2.0 + (lo.abs().max(hi.abs())) * 2.0 * f32::EPSILON;
            let mut back = vec![0f32; values.len()];
            decode_row(&enc, &mut back);
            for (x, y) in values.iter().zip(&back) {
                prop_assert!((x - y).abs() <= bound, "{} vs {} (step {})", x, y, step);
            }
            let e = Q8Error::measure(values.len(), &values, &enc);
            prop_assert!(e.max_abs <= bound);
            prop_assert!(e.relative(e.max_abs) <= 1.0 / 510.0 + 1e-5);
        }
    }
}
