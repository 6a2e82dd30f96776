//! `f32` rows to and from files as little-endian bytes without a decode
//! copy on little-endian hosts (layer-wise inference's spill files).

use std::borrow::Cow;
use std::fs::File;
use std::path::Path;

use crate::error::Result;
use crate::io::read::read_exact_at;

/// Reads `out.len()` little-endian `f32` values at `offset` of `file`.
pub fn read_f32_at(file: &File, path: &Path, offset: u64, out: &mut [f32]) -> Result<()> {
    #[cfg(target_endian = "little")]
    {
        // Every bit pattern is a valid f32, so whatever the read leaves in
        // the view is a valid value.
        let len = std::mem::size_of_val(out);
        // SAFETY: the byte view covers exactly `out`'s memory (u8 needs no
        // alignment) and lives only for this call, while `out` is borrowed.
        let bytes = unsafe { std::slice::from_raw_parts_mut(out.as_mut_ptr().cast::<u8>(), len) };
        read_exact_at(file, path, offset, bytes)
    }
    #[cfg(not(target_endian = "little"))]
    {
        let mut bytes = vec![0u8; out.len() * 4];
        read_exact_at(file, path, offset, &mut bytes)?;
        for (x, b) in out.iter_mut().zip(bytes.chunks_exact(4)) {
            *x = f32::from_le_bytes([b[0], b[1], b[2], b[3]]);
        }
        Ok(())
    }
}

/// `values` as little-endian bytes (borrowed on little-endian hosts).
pub fn f32_bytes(values: &[f32]) -> Cow<'_, [u8]> {
    #[cfg(target_endian = "little")]
    {
        // SAFETY: the view covers exactly `values`' memory and shares its
        // borrow; f32 has no padding, so every byte is initialised.
        Cow::Borrowed(unsafe {
            std::slice::from_raw_parts(values.as_ptr().cast::<u8>(), std::mem::size_of_val(values))
        })
    }
    #[cfg(not(target_endian = "little"))]
    {
        Cow::Owned(values.iter().flat_map(|x| x.to_le_bytes()).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn f32_rows_round_trip_through_a_file_and_a_short_file_is_corruption() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rows.f32");
        let values: Vec<f32> = (0..100).map(|i| i as f32 * -0.5 + 0.25).collect();
        let bytes = f32_bytes(&values);
        assert_eq!(bytes.len(), 400);
        assert_eq!(bytes[4..8], values[1].to_le_bytes());
        File::create(&path).unwrap().write_all(&bytes).unwrap();
        let file = File::open(&path).unwrap();
        let mut back = vec![0f32; 10];
        read_f32_at(&file, &path, 40, &mut back).unwrap();
        assert_eq!(back, values[10..20]);
        let mut past = vec![0f32; 10];
        let err = read_f32_at(&file, &path, 380, &mut past)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("rows.f32") && err.contains("truncated"),
            "{err}"
        );
    }
}
