//! Feature page math: where row `r` lives in `features.pages`.
//!
//! Spec: `format/features.md`. Rows of `row_bytes <= PAGE_SIZE` are packed
//! `PAGE_SIZE / row_bytes` to a page and never straddle a page; larger rows
//! start on a page boundary and take `ceil(row_bytes / PAGE_SIZE)` pages.

use std::path::Path;

use crate::error::{Error, Result};
use crate::format::bytes::le_u32;
use crate::format::header::HEADER_SIZE;
use crate::format::version::{Version, V1_11, V1_7};
use crate::format::PAGE_SIZE;

/// File offset of the layout record in the `features.pages` header (from
/// v1.7; format/features.md, "The layout record"): right after the common
/// header. Its fields:
pub const LAYOUT_RECORD_OFFSET: usize = HEADER_SIZE;
/// The row format's elements per row (`u32`).
pub const LAYOUT_DIM_OFFSET: usize = LAYOUT_RECORD_OFFSET;
/// The row format's dtype code (`u8`, as the manifest's).
pub const LAYOUT_DTYPE_OFFSET: usize = LAYOUT_DIM_OFFSET + 4;
/// Reserved, zero (3 bytes).
pub const LAYOUT_RESERVED_OFFSET: usize = LAYOUT_DTYPE_OFFSET + 1;
/// Length of the reserved bytes.
pub const LAYOUT_RESERVED_LEN: usize = 3;
/// CRC-32 of the record's first 8 bytes (`u32`).
pub const LAYOUT_CRC_OFFSET: usize = LAYOUT_RESERVED_OFFSET + LAYOUT_RESERVED_LEN;
/// End of the record: the header padding (zero) starts here.
pub const LAYOUT_RECORD_END: usize = LAYOUT_CRC_OFFSET + 4;

/// Element type of the feature rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Dtype {
    /// IEEE 754 binary32.
    F32 = 1,
    /// IEEE 754 binary16.
    F16 = 2,
    /// bfloat16 (the upper half of a binary32).
    Bf16 = 3,
    /// 8-bit codes with a per-row affine scale (lossy; `src/format/q8.rs`).
    Q8 = 4,
}

impl Dtype {
    /// Every dtype, in numeric order.
    pub const ALL: [Dtype; 4] = [Dtype::F32, Dtype::F16, Dtype::Bf16, Dtype::Q8];

    /// Decodes the numeric code.
    #[doc(hidden)]
    pub fn from_u8(v: u8) -> Option<Dtype> {
        Dtype::ALL.into_iter().find(|d| *d as u8 == v)
    }

    /// Bytes per element (a q8 code is 1; its row also holds its scale:
    /// use [`Dtype::row_bytes`] for rows).
    pub fn size(self) -> usize {
        match self {
            Dtype::F32 => 4,
            Dtype::F16 | Dtype::Bf16 => 2,
            Dtype::Q8 => 1,
        }
    }

    /// Bytes of one row of `dim` elements.
    pub fn row_bytes(self, dim: usize) -> usize {
        match self {
            Dtype::Q8 => crate::format::q8::row_bytes(dim),
            _ => dim * self.size(),
        }
    }

    /// Whether decoding gives back every value encoded (f32 only holds
    /// every f32; f16/bf16 round, q8 quantizes).
    pub fn is_lossy(self) -> bool {
        !matches!(self, Dtype::F32)
    }

    /// Lower-case name (`f32`, `f16`, `bf16`, `q8`).
    pub fn name(self) -> &'static str {
        match self {
            Dtype::F32 => "f32",
            Dtype::F16 => "f16",
            Dtype::Bf16 => "bf16",
            Dtype::Q8 => "q8",
        }
    }

    /// Parses a name as printed by [`Dtype::name`].
    pub fn parse(s: &str) -> Result<Dtype> {
        Error::parse_name(s, "dtype", &Dtype::ALL, Dtype::name)
    }

    /// Encodes `values`, whole rows of `dim` elements, into `out`
    /// (little-endian, `row_bytes(dim)` bytes a row).
    pub fn encode_f32(self, dim: usize, values: &[f32], out: &mut [u8]) {
        if self == Dtype::Q8 {
            let rows = values.chunks_exact(dim.max(1));
            for (v, dst) in rows.zip(out.chunks_exact_mut(self.row_bytes(dim))) {
                crate::format::q8::encode_row(v, dst);
            }
            return;
        }
        let size = self.size();
        for (v, dst) in values.iter().zip(out.chunks_exact_mut(size)) {
            match self {
                Dtype::F32 => dst.copy_from_slice(&v.to_le_bytes()),
                Dtype::F16 => dst.copy_from_slice(&half::f16::from_f32(*v).to_le_bytes()),
                Dtype::Bf16 => dst.copy_from_slice(&half::bf16::from_f32(*v).to_le_bytes()),
                Dtype::Q8 => {}
            }
        }
    }

    /// Decodes whole rows of `dim` elements of this dtype from `bytes`
    /// into `out`.
    pub fn decode_to_f32(self, dim: usize, bytes: &[u8], out: &mut [f32]) {
        // `chunks_exact` of a constant width: the array conversions cannot
        // fail (and compile to plain loads).
        let pairs = || {
            bytes
                .chunks_exact(2)
                .map(|c| <[u8; 2]>::try_from(c).unwrap_or_default())
        };
        match self {
            Dtype::F32 => {
                let words = bytes
                    .chunks_exact(4)
                    .map(|c| <[u8; 4]>::try_from(c).unwrap_or_default());
                for (w, v) in words.zip(out.iter_mut()) {
                    *v = f32::from_le_bytes(w);
                }
            }
            Dtype::F16 => {
                for (h, v) in pairs().zip(out.iter_mut()) {
                    *v = half::f16::from_le_bytes(h).to_f32();
                }
            }
            Dtype::Bf16 => {
                for (h, v) in pairs().zip(out.iter_mut()) {
                    *v = half::bf16::from_le_bytes(h).to_f32();
                }
            }
            Dtype::Q8 => {
                let rows = bytes.chunks_exact(self.row_bytes(dim));
                for (b, v) in rows.zip(out.chunks_exact_mut(dim.max(1))) {
                    crate::format::q8::decode_row(b, v);
                }
            }
        }
    }
}

impl serde::Serialize for Dtype {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

/// Where rows live in the feature pages, derived from `dim` and `dtype`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FeatureLayout {
    /// Elements per row.
    pub dim: u32,
    /// Element type.
    pub dtype: Dtype,
}

/// The byte range of one row inside the payload of `features.pages`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RowLocation {
    /// First page holding the row.
    pub page: u64,
    /// Byte offset of the row inside that page.
    pub offset_in_page: usize,
    /// Number of pages the row touches (1 for rows that fit a page).
    pub pages: u64,
}

impl FeatureLayout {
    /// The layout record of a v1.7 `features.pages` header: the bytes at
    /// file offsets [`LAYOUT_RECORD_OFFSET`]..[`LAYOUT_RECORD_END`].
    pub fn encode_record(&self) -> [u8; LAYOUT_RECORD_END - LAYOUT_RECORD_OFFSET] {
        let mut head = Vec::with_capacity(LAYOUT_RECORD_END - LAYOUT_RECORD_OFFSET);
        head.extend_from_slice(&self.dim.to_le_bytes());
        head.push(self.dtype as u8);
        head.extend_from_slice(&[0u8; LAYOUT_RESERVED_LEN]);
        let crc = crate::format::crc32(&head);
        head.extend_from_slice(&crc.to_le_bytes());
        let mut r = [0u8; LAYOUT_RECORD_END - LAYOUT_RECORD_OFFSET];
        r.copy_from_slice(&head);
        r
    }

    /// The layout a `features.pages` header records: `head` holds the
    /// file's first [`LAYOUT_RECORD_END`] bytes (or more), `version` its
    /// decoded common header's. `None` for a file older than 1.7, which
    /// records none (zero padding there).
    pub fn decode_record(head: &[u8], version: Version, path: &Path) -> Result<Option<Self>> {
        if version < V1_7 {
            return Ok(None);
        }
        let field = |from: usize, to: usize| {
            head.get(from..to)
                .ok_or_else(|| Error::corrupt(path, 0, "header is too short for its layout record"))
        };
        let covered = field(LAYOUT_RECORD_OFFSET, LAYOUT_CRC_OFFSET)?;
        let stored = le_u32(field(LAYOUT_CRC_OFFSET, LAYOUT_RECORD_END)?, 0);
        let got = crate::format::crc32(covered);
        Error::check_crc(
            path,
            "layout record",
            LAYOUT_RECORD_OFFSET as u64,
            stored,
            got,
        )?;
        let bad = |offset: usize, what: String| Err(Error::corrupt(path, offset as u64, what));
        if field(LAYOUT_RESERVED_OFFSET, LAYOUT_CRC_OFFSET)?
            .iter()
            .any(|&b| b != 0)
        {
            return bad(
                LAYOUT_RESERVED_OFFSET,
                "layout record: reserved bytes are not zero".into(),
            );
        }
        let code = field(LAYOUT_DTYPE_OFFSET, LAYOUT_RESERVED_OFFSET)?
            .first()
            .copied()
            .unwrap_or_default();
        let Some(dtype) = Dtype::from_u8(code) else {
            return bad(
                LAYOUT_DTYPE_OFFSET,
                format!("layout record: unknown dtype code {code}"),
            );
        };
        if dtype == Dtype::Q8 && version < V1_11 {
            return bad(
                LAYOUT_DTYPE_OFFSET,
                format!("layout record: dtype q8 in a {version} file (q8 is from 1.11)"),
            );
        }
        let dim = le_u32(field(LAYOUT_DIM_OFFSET, LAYOUT_DTYPE_OFFSET)?, 0);
        if dim == 0 {
            return bad(LAYOUT_DIM_OFFSET, "layout record: dimension 0".into());
        }
        Ok(Some(FeatureLayout { dim, dtype }))
    }

    /// `dim x dtype` for messages (`32 x f32`).
    pub fn describe(&self) -> String {
        format!("{} x {}", self.dim, self.dtype.name())
    }

    /// A layout; `dim` must be at least 1.
    pub fn new(dim: u32, dtype: Dtype) -> Result<Self> {
        if dim == 0 {
            return Err(Error::invalid_argument(
                "feature dimension must be at least 1",
            ));
        }
        Ok(FeatureLayout { dim, dtype })
    }

    /// Bytes of one row.
    pub fn row_bytes(&self) -> usize {
        self.dtype.row_bytes(self.dim as usize)
    }

    /// Rows packed in one page, or 0 when a row needs more than one page.
    pub fn rows_per_page(&self) -> usize {
        PAGE_SIZE / self.row_bytes()
    }

    /// Pages a row occupies when it is larger than a page (else 1).
    pub fn pages_per_row(&self) -> u64 {
        (self.row_bytes() as u64).div_ceil(PAGE_SIZE as u64)
    }

    /// Location of row `row`.
    #[doc(hidden)]
    pub fn locate(&self, row: u64) -> RowLocation {
        let rpp = self.rows_per_page();
        if rpp >= 1 {
            let rpp = rpp as u64;
            RowLocation {
                page: row / rpp,
                offset_in_page: (row % rpp) as usize * self.row_bytes(),
                pages: 1,
            }
        } else {
            let ppr = self.pages_per_row();
            RowLocation {
                page: row * ppr,
                offset_in_page: 0,
                pages: ppr,
            }
        }
    }

    /// Pages needed for `num_rows` rows, or an error on overflow.
    #[doc(hidden)]
    pub fn num_pages(&self, num_rows: u64) -> Result<u64> {
        let rpp = self.rows_per_page() as u64;
        let pages = if rpp >= 1 {
            Some(num_rows.div_ceil(rpp))
        } else {
            num_rows.checked_mul(self.pages_per_row())
        };
        pages
            .filter(|p| p.checked_mul(PAGE_SIZE as u64).is_some())
            .ok_or_else(|| {
                Error::invalid_argument(format!(
                    "{num_rows} rows of {} bytes overflow the page space",
                    self.row_bytes()
                ))
            })
    }

    /// File offset of feature page `page` (the header fills page 0).
    #[doc(hidden)]
    pub fn page_offset(page: u64) -> u64 {
        PAGE_SIZE as u64 * (page + 1)
    }

    /// Payload bytes of the feature file for `num_rows` rows.
    #[doc(hidden)]
    pub fn payload_len(&self, num_rows: u64) -> Result<u64> {
        Ok(self.num_pages(num_rows)? * PAGE_SIZE as u64)
    }
}

#[cfg(test)]
mod tests {
    /// The q8 error record starts where the layout record ends (q8.rs
    /// states the offset as a number: it cannot name this file's
    /// constants without an import circle).
    #[test]
    fn the_q8_record_follows_the_layout_record() {
        assert_eq!(
            crate::format::q8::Q8_RECORD_OFFSET,
            super::LAYOUT_RECORD_END
        );
    }

    use super::*;

    #[test]
    fn layout_record_offsets_match_the_spec_table() {
        // format/features.md, "The layout record".
        assert_eq!(
            [
                LAYOUT_DIM_OFFSET,
                LAYOUT_DTYPE_OFFSET,
                LAYOUT_RESERVED_OFFSET,
                LAYOUT_CRC_OFFSET,
                LAYOUT_RECORD_END
            ],
            [64, 68, 69, 72, 76]
        );
        assert_eq!(LAYOUT_RESERVED_LEN, 3);
    }

    #[test]
    fn the_layout_record_round_trips_and_refuses_damage() {
        let path = Path::new("features.pages");
        let mut head = vec![0u8; PAGE_SIZE];
        let v16 = crate::format::version::V1_7;
        // A 1.0 file records nothing.
        assert_eq!(
            FeatureLayout::decode_record(&head, crate::format::version::V1_0, path).unwrap(),
            None
        );
        for layout in [
            FeatureLayout::new(32, Dtype::F32).unwrap(),
            FeatureLayout::new(100_000, Dtype::Bf16).unwrap(),
        ] {
            head[LAYOUT_RECORD_OFFSET..LAYOUT_RECORD_END].copy_from_slice(&layout.encode_record());
            assert_eq!(
                FeatureLayout::decode_record(&head, v16, path).unwrap(),
                Some(layout)
            );
        }
        let good = head.clone();
        for (at, want) in [
            (LAYOUT_DIM_OFFSET, "checksum"),
            (LAYOUT_DTYPE_OFFSET, "checksum"),
            (LAYOUT_CRC_OFFSET, "checksum"),
        ] {
            let mut bad = good.clone();
            bad[at] ^= 1;
            let err = FeatureLayout::decode_record(&bad, v16, path)
                .unwrap_err()
                .to_string();
            assert!(
                err.to_lowercase().contains(want) || err.contains("CRC"),
                "{at}: {err}"
            );
        }
        // An unknown dtype with a valid CRC.
        let mut bad = good.clone();
        bad[LAYOUT_DTYPE_OFFSET] = 9;
        let crc = crate::format::crc32(&bad[LAYOUT_RECORD_OFFSET..LAYOUT_CRC_OFFSET]);
        bad[LAYOUT_CRC_OFFSET..LAYOUT_RECORD_END].copy_from_slice(&crc.to_le_bytes());
        let err = FeatureLayout::decode_record(&bad, v16, path)
            .unwrap_err()
            .to_string();
        assert!(err.contains("unknown dtype code 9"), "{err}");
    }
    use proptest::prelude::*;

    fn any_dtype() -> impl Strategy<Value = Dtype> {
        proptest::sample::select(Dtype::ALL.to_vec())
    }

    proptest! {
        /// Rows never overlap, never straddle a page when they fit one, and
        /// all lie inside the payload.
        #[test]
        fn rows_are_disjoint_and_in_bounds(dim in 1u32..5000, dtype in any_dtype(), n in 1u64..300) {
            let l = FeatureLayout::new(dim, dtype).unwrap();
            let payload = l.payload_len(n).unwrap();
            let mut prev_end = 0u64;
            for r in 0..n {
                let loc = l.locate(r);
                let start = loc.page * PAGE_SIZE as u64 + loc.offset_in_page as u64;
                let end = start + l.row_bytes() as u64;
                prop_assert!(start >= prev_end);
                prop_assert!(end <= payload);
                if l.row_bytes() <= PAGE_SIZE {
                    prop_assert_eq!((end - 1) / PAGE_SIZE as u64, loc.page);
                } else {
                    prop_assert_eq!(loc.offset_in_page, 0);
                    prop_assert!(end <= (loc.page + loc.pages) * PAGE_SIZE as u64);
                }
                prev_end = end;
            }
            // No wasted trailing page.
            prop_assert!(payload - prev_end < PAGE_SIZE as u64);
        }

        #[test]
        fn dtype_round_trip(values in proptest::collection::vec(-1.0e4f32..1.0e4, 0..64), dtype in any_dtype()) {
            let dim = values.len().max(1);
            let mut bytes = vec![0u8; dtype.row_bytes(dim) * usize::from(!values.is_empty())];
            dtype.encode_f32(dim, &values, &mut bytes);
            let mut back = vec![0f32; values.len()];
            dtype.decode_to_f32(dim, &bytes, &mut back);
            // q8: half a step of the row's range.
            let range = values.iter().fold(0f32, |m, x| m.max(x.abs())) * 2.0;
            for (a, b) in values.iter().zip(&back) {
                let tol = match dtype { Dtype::F32 => 0.0, Dtype::F16 => a.abs() * 1e-3 + 1e-3, Dtype::Bf16 => a.abs() * 8e-3 + 1e-3, Dtype::Q8 => range / 510.0 + 1e-3 };
                prop_assert!((a - b).abs() <= tol, "{a} vs {b}");
            }
        }
    }

    #[test]
    fn page_math_examples() {
        let l = FeatureLayout::new(128, Dtype::F32).unwrap(); // 512-byte rows
        assert_eq!(l.rows_per_page(), 8);
        assert_eq!(
            l.locate(9),
            RowLocation {
                page: 1,
                offset_in_page: 512,
                pages: 1
            }
        );
        let l = FeatureLayout::new(100, Dtype::F32).unwrap(); // 400 bytes, 10 a page, 96 padding
        assert_eq!(l.locate(10).page, 1);
        let l = FeatureLayout::new(1025, Dtype::F32).unwrap(); // 4100 bytes: 2 pages
        assert_eq!(
            l.locate(3),
            RowLocation {
                page: 6,
                offset_in_page: 0,
                pages: 2
            }
        );
        assert!(l.num_pages(u64::MAX).is_err());
    }
}
