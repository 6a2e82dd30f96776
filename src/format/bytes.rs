//! Little-endian field access on byte slices whose length the caller has
//! already checked. Out-of-range offsets read as zero rather than panic, so a
//! caller's length bug shows up as a checksum or validation error.

fn field<const N: usize>(b: &[u8], at: usize) -> [u8; N] {
    let mut out = [0u8; N];
    if let Some(src) = at.checked_add(N).and_then(|end| b.get(at..end)) {
        out.copy_from_slice(src);
    }
    out
}

/// Reads a little-endian `u16` at `at`.
pub fn le_u16(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes(field(b, at))
}

/// Reads a little-endian `u32` at `at`.
pub fn le_u32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(field(b, at))
}

/// Reads a little-endian `u64` at `at`.
pub fn le_u64(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(field(b, at))
}

/// Reads a little-endian `i32` at `at`.
pub fn le_i32(b: &[u8], at: usize) -> i32 {
    i32::from_le_bytes(field(b, at))
}
