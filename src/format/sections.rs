//! Feature sections: where each feature row lives when the node types of
//! a typed store have different dimensions or dtypes.
//!
//! Spec: `format/features.md`, "Sections". The featured types' rows are
//! back to back in type order; consecutive types of one layout form a
//! section, packed as the rows of an untyped store of that layout, and
//! each section starts on a page of its own. Readers return every row in
//! the store's row format (the manifest's `dim` and dtype, the widest
//! dimension and a dtype that holds every type's values exactly), zero
//! padded; writers narrow rows given in the row format back to their
//! section's layout. A store of one layout has one section: exactly the
//! untyped page layout.

use crate::error::{Error, Result};
use crate::format::pages::{Dtype, FeatureLayout, RowLocation};
use crate::format::schema::Schema;
use crate::format::PAGE_SIZE;

/// The rows of one layout, starting on a page of their own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Section {
    /// The first feature row of the section.
    pub first_row: u64,
    /// Rows in the section.
    pub rows: u64,
    /// The page its first row starts on.
    pub first_page: u64,
    /// The layout of its rows on disk.
    pub layout: FeatureLayout,
}

impl Section {
    /// The location of feature row `row` (which the section holds).
    fn locate(&self, row: u64) -> RowLocation {
        let loc = self.layout.locate(row - self.first_row);
        RowLocation {
            page: self.first_page + loc.page,
            ..loc
        }
    }
}

/// Where every feature row of a store lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FeatureSections {
    row: FeatureLayout,
    sections: Vec<Section>,
    num_pages: u64,
}

impl FeatureSections {
    /// One section of `rows` rows in the row format itself (an untyped
    /// store, or a typed one whose featured types share a layout).
    pub fn uniform(row: FeatureLayout, rows: u64) -> Result<Self> {
        let section = Section {
            first_row: 0,
            rows,
            first_page: 0,
            layout: row,
        };
        Ok(FeatureSections {
            row,
            num_pages: row.num_pages(rows)?,
            sections: vec![section],
        })
    }

    /// The sections of a store of `num_nodes` nodes with row format `row`
    /// (the manifest's) and `schema` (None: untyped). An error when the
    /// pages overflow a u64 of bytes.
    pub fn of(schema: Option<&Schema>, row: FeatureLayout, num_nodes: u64) -> Result<Self> {
        let Some(schema) = schema.filter(|s| !s.is_uniform()) else {
            let rows = schema.map_or(num_nodes, Schema::feature_rows);
            return Self::uniform(row, rows);
        };
        let mut sections: Vec<Section> = Vec::new();
        let (mut next_row, mut next_page) = (0u64, 0u64);
        for t in &schema.node_types {
            let Some(layout) = t.layout().filter(|_| t.count > 0) else {
                continue;
            };
            match sections.last_mut() {
                Some(last) if last.layout == layout => last.rows += t.count,
                _ => {
                    if let Some(last) = sections.last() {
                        next_page = next_page
                            .checked_add(last.layout.num_pages(last.rows)?)
                            .ok_or_else(overflow)?;
                    }
                    sections.push(Section {
                        first_row: next_row,
                        rows: t.count,
                        first_page: next_page,
                        layout,
                    });
                }
            }
            next_row = next_row.checked_add(t.count).ok_or_else(overflow)?;
        }
        if sections.len() > 1 && sections.iter().any(|s| s.layout.dtype == Dtype::Q8) {
            return Err(Error::invalid_argument(
                "q8 features in a typed store whose types differ in dimension or dtype are not supported: give every featured type one dimension and q8, or use f32/f16/bf16",
            ));
        }
        let num_pages = match sections.last() {
            Some(last) => next_page
                .checked_add(last.layout.num_pages(last.rows)?)
                .filter(|p| p.checked_mul(PAGE_SIZE as u64).is_some())
                .ok_or_else(overflow)?,
            None => 0,
        };
        Ok(FeatureSections {
            row,
            sections,
            num_pages,
        })
    }

    /// The row format readers return rows in.
    pub fn row_format(&self) -> FeatureLayout {
        self.row
    }

    /// The sections, in row order.
    pub fn sections(&self) -> &[Section] {
        &self.sections
    }

    /// Whether every row is stored in the row format (one section).
    pub fn is_uniform(&self) -> bool {
        self.sections.iter().all(|s| s.layout == self.row)
    }

    /// Pages of `features.pages` in all.
    pub fn num_pages(&self) -> u64 {
        self.num_pages
    }

    /// Rows a page holds when the store has one layout, for the
    /// planner's page companions (`id / rows_per_page` is then a row's
    /// page); 0 (no companions) for rows larger than a page or a store of
    /// several layouts.
    pub fn uniform_rows_per_page(&self) -> u64 {
        match self.is_uniform() {
            true => self.row.rows_per_page() as u64,
            false => 0,
        }
    }

    /// Bytes of every feature row in its stored layout (page padding
    /// left out): the size of the features, as the "dataset / memory"
    /// ratios of the benchmarks count it.
    pub fn row_bytes_stored(&self) -> u64 {
        self.sections
            .iter()
            .map(|s| s.rows.saturating_mul(s.layout.row_bytes() as u64))
            .fold(0, u64::saturating_add)
    }

    /// The most pages one row takes.
    pub fn max_pages_per_row(&self) -> u64 {
        self.sections
            .iter()
            .map(|s| s.layout.pages_per_row())
            .max()
            .unwrap_or(1)
    }

    /// The section holding feature row `row` (the last one for a row past
    /// the end).
    pub fn section_of(&self, row: u64) -> &Section {
        let i = self
            .sections
            .partition_point(|s| s.first_row + s.rows <= row)
            .min(self.sections.len().saturating_sub(1));
        self.sections.get(i).unwrap_or(&NO_ROWS)
    }

    /// Where feature row `row` lives: first page (of the whole file), byte
    /// offset in it, pages it touches.
    pub fn locate(&self, row: u64) -> RowLocation {
        self.section_of(row).locate(row)
    }

    /// Copies feature row `row` out of `pages` (consecutive feature pages
    /// read from page `first_page` on) into `out`, one row of the row
    /// format: the section's bytes unchanged when it has the row format,
    /// else converted and zero padded. An error when the buffer does not
    /// hold the row.
    pub fn copy_row(&self, pages: &[u8], first_page: u64, row: u64, out: &mut [u8]) -> Result<()> {
        let section = self.section_of(row);
        let loc = section.locate(row);
        let bytes = loc
            .page
            .checked_sub(first_page)
            .and_then(|p| usize::try_from(p).ok()?.checked_mul(PAGE_SIZE))
            .and_then(|at| at.checked_add(loc.offset_in_page))
            .and_then(|at| pages.get(at..at.checked_add(section.layout.row_bytes())?))
            .ok_or_else(|| {
                Error::OutOfRange(format!(
                    "row {row} (page {}) is not in the {} bytes read from feature page {first_page}",
                    loc.page,
                    pages.len()
                ))
            })?;
        if section.layout.dtype == Dtype::Q8 {
            // The page passed its CRC; a scale that decodes to garbage is
            // still refused (format/features.md, "q8 rows").
            if let Some(why) = crate::format::q8::check_row(bytes) {
                return Err(Error::corrupt(
                    crate::format::manifest::store_file_name(
                        crate::format::header::FileKind::FeaturePages,
                    ),
                    FeatureLayout::page_offset(loc.page) + loc.offset_in_page as u64,
                    format!("feature row {row}: {why}"),
                ));
            }
        }
        widen(section.layout, bytes, self.row, out);
        Ok(())
    }

    /// Narrows `row_bytes`, one row of the row format, to the layout of
    /// the section of feature row `row`, into `out` (that layout's
    /// `row_bytes`). Exact for rows a reader returned.
    pub fn narrow_row(&self, row: u64, row_bytes: &[u8], out: &mut [u8]) {
        narrow(self.row, row_bytes, self.section_of(row).layout, out);
    }
}

/// What [`FeatureSections::section_of`] answers for sections without any
/// (which [`FeatureSections::of`] never builds).
const NO_ROWS: Section = Section {
    first_row: 0,
    rows: 0,
    first_page: 0,
    layout: FeatureLayout {
        dim: 1,
        dtype: Dtype::F32,
    },
};

fn overflow() -> Error {
    Error::invalid_argument("the feature rows overflow the page space")
}

/// Converts one row of layout `from` into `out`, one row of layout `to`
/// whose dimension is at least `from`'s: converted element by element,
/// the columns past `from.dim` zero.
pub fn widen(from: FeatureLayout, src: &[u8], to: FeatureLayout, out: &mut [u8]) {
    if from == to {
        return copy_row(to, src, out);
    }
    let n = from.dim as usize;
    convert(from, src, to, out, n);
    if let Some(rest) = out.get_mut(n * to.dtype.size()..) {
        rest.fill(0);
    }
}

/// Converts the first `to.dim` elements of `src`, one row of layout
/// `from`, into `out`, one row of layout `to`.
pub fn narrow(from: FeatureLayout, src: &[u8], to: FeatureLayout, out: &mut [u8]) {
    if from == to {
        return copy_row(to, src, out);
    }
    convert(from, src, to, out, to.dim as usize);
}

/// One row of `layout` copied unchanged.
fn copy_row(layout: FeatureLayout, src: &[u8], out: &mut [u8]) {
    let n = layout.row_bytes();
    if let (Some(src), Some(out)) = (src.get(..n), out.get_mut(..n)) {
        out.copy_from_slice(src);
    }
}

/// Converts `n` elements of a row of layout `from` in `src` to dtype
/// `to` in `out` (through f32, exact when `to` holds every value of
/// `from`). Neither is q8: [`FeatureSections::of`] refuses q8 in a store
/// of several layouts.
fn convert(from: FeatureLayout, src: &[u8], to: FeatureLayout, out: &mut [u8], n: usize) {
    let (from, to) = (from.dtype, to.dtype);
    let (Some(src), Some(out)) = (src.get(..n * from.size()), out.get_mut(..n * to.size())) else {
        debug_assert!(false, "a row shorter than its layout");
        return;
    };
    if from == to {
        out.copy_from_slice(src);
        return;
    }
    const BLOCK: usize = 256;
    let mut values = [0f32; BLOCK];
    for (s, o) in src
        .chunks(BLOCK * from.size())
        .zip(out.chunks_mut(BLOCK * to.size()))
    {
        let k = s.len() / from.size();
        let block = values.get_mut(..k).unwrap_or_default();
        from.decode_to_f32(k, s, block);
        to.encode_f32(k, block, o);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::schema::{test_schema, NodeType};

    fn layout(dim: u32, dtype: Dtype) -> FeatureLayout {
        FeatureLayout { dim, dtype }
    }

    /// author: 5 rows of 3 x f16; paper: 700 rows of 2 x f32 (512 a
    /// page); venue: featureless; field: 4 rows of 3 x f16 (a section of
    /// its own again: sections merge consecutive featured types only).
    fn mixed() -> Schema {
        let mut s = test_schema(
            &[
                ("author", 0, 5, 3),
                ("paper", 5, 700, 2),
                ("venue", 705, 2, 0),
                ("field", 707, 4, 3),
            ],
            &[],
        );
        let dtypes = [Some(Dtype::F16), Some(Dtype::F32), None, Some(Dtype::F16)];
        for (t, d) in s.node_types.iter_mut().zip(dtypes) {
            t.dtype = d;
        }
        s
    }

    #[test]
    fn a_uniform_store_has_one_section_in_the_untyped_layout() {
        let row = layout(100, Dtype::F32);
        let s = FeatureSections::of(None, row, 25).unwrap();
        assert!(s.is_uniform());
        assert_eq!(s.num_pages(), 3);
        assert_eq!(s.uniform_rows_per_page(), 10);
        for r in 0..25 {
            assert_eq!(s.locate(r), row.locate(r));
        }
        let typed = test_schema(&[("a", 0, 3, 0), ("b", 3, 25, 100)], &[]);
        assert_eq!(FeatureSections::of(Some(&typed), row, 28).unwrap(), s);
    }

    #[test]
    fn mixed_layouts_start_a_section_on_a_new_page() {
        let s = mixed();
        let row = s.row_format().unwrap();
        assert_eq!(row, layout(3, Dtype::F32));
        let sec = FeatureSections::of(Some(&s), row, 711).unwrap();
        let got: Vec<(u64, u64, u64)> = sec
            .sections()
            .iter()
            .map(|s| (s.first_row, s.rows, s.first_page))
            .collect();
        assert_eq!(got, vec![(0, 5, 0), (5, 700, 1), (705, 4, 3)]);
        assert_eq!(sec.num_pages(), 4);
        assert_eq!(sec.row_bytes_stored(), 5 * 6 + 700 * 8 + 4 * 6);
        assert_eq!(sec.uniform_rows_per_page(), 0);
        assert_eq!(sec.locate(4).page, 0);
        assert_eq!(sec.locate(5).page, 1);
        assert_eq!(sec.locate(5 + 512).page, 2);
        assert_eq!(sec.locate(5 + 513).offset_in_page, 8);
        assert_eq!(sec.locate(706).page, 3);
        assert_eq!(sec.locate(706).offset_in_page, 6);
        assert!(!sec.is_uniform());
    }

    #[test]
    fn rows_widen_to_the_row_format_and_narrow_back_exactly() {
        let s = mixed();
        let row = s.row_format().unwrap();
        let sec = FeatureSections::of(Some(&s), row, 711).unwrap();
        // Page 0: author rows of f16 [r, r + 0.5, -r].
        let mut page = vec![0u8; PAGE_SIZE];
        for r in 0..5u64 {
            let v = [r as f32, r as f32 + 0.5, -(r as f32)];
            Dtype::F16.encode_f32(3, &v, &mut page[r as usize * 6..r as usize * 6 + 6]);
        }
        let mut out = vec![0xffu8; 12];
        sec.copy_row(&page, 0, 3, &mut out).unwrap();
        let mut x = [0f32; 3];
        Dtype::F32.decode_to_f32(x.len(), &out, &mut x);
        assert_eq!(x, [3.0, 3.5, -3.0]);
        let mut back = [0u8; 6];
        sec.narrow_row(3, &out, &mut back);
        assert_eq!(back, page[18..24]);
        // A paper row (2 x f32) gets a zero third column.
        let mut page = vec![0u8; PAGE_SIZE];
        Dtype::F32.encode_f32(2, &[7.25, -1.0], &mut page[8..16]);
        sec.copy_row(&page, 1, 6, &mut out).unwrap();
        Dtype::F32.decode_to_f32(x.len(), &out, &mut x);
        assert_eq!(x, [7.25, -1.0, 0.0]);
        // A read of pages 0..2 holds rows of both sections.
        let mut two = vec![0u8; 2 * PAGE_SIZE];
        two[PAGE_SIZE + 8..PAGE_SIZE + 16].copy_from_slice(&page[8..16]);
        sec.copy_row(&two, 0, 6, &mut out).unwrap();
        Dtype::F32.decode_to_f32(x.len(), &out, &mut x);
        assert_eq!(x, [7.25, -1.0, 0.0]);
        // A row outside the pages read is refused, naming it.
        let err = sec.copy_row(&page, 1, 3, &mut out).unwrap_err().to_string();
        assert!(err.contains("row 3 (page 0)"), "{err}");
    }

    #[test]
    fn copy_row_finds_a_row_in_the_pages_read_and_refuses_rows_outside() {
        let l = layout(128, Dtype::F32); // 512-byte rows, 8 a page
        let sec = FeatureSections::uniform(l, 100).unwrap();
        let pages: Vec<u8> = (0..2 * PAGE_SIZE).map(|i| (i / 512) as u8).collect();
        let mut out = vec![0u8; 512];
        // Pages 3 and 4 hold rows 24..40; row 33 is the second row of page 4.
        sec.copy_row(&pages, 3, 33, &mut out).unwrap();
        assert_eq!(out, [9u8; 512]);
        sec.copy_row(&pages, 3, 24, &mut out).unwrap();
        assert_eq!(out, [0u8; 512]);
        for outside in [23, 40, 0] {
            let err = sec.copy_row(&pages, 3, outside, &mut out).unwrap_err();
            assert!(
                err.to_string().contains(&format!("row {outside} ")),
                "{err}"
            );
        }
        let big = FeatureSections::uniform(layout(1025, Dtype::F32), 10).unwrap(); // 2 pages a row
        let mut wide = vec![0u8; 4100];
        big.copy_row(&pages, 6, 3, &mut wide).unwrap();
        assert!(big.copy_row(&pages[..PAGE_SIZE], 6, 3, &mut wide).is_err());
    }

    #[test]
    fn featureless_schemas_have_no_pages() {
        let s = Schema {
            node_types: vec![NodeType {
                name: "a".into(),
                offset: 0,
                count: 9,
                dim: 0,
                dtype: None,
            }],
            relations: vec![],
        };
        let sec = FeatureSections::of(Some(&s), layout(1, Dtype::F32), 9).unwrap();
        assert_eq!(sec.num_pages(), 0);
    }
}
