//! Parsing byte sizes such as `2GiB`, `512MiB`, `1.5G`, `4096` (the
//! command-line tools and [`LoaderBuilder::memory`](crate::LoaderBuilder::memory)
//! share it).

use crate::error::{Error, Result};

/// Parses a byte size: a number with an optional unit (`B`, `K`/`KiB`/`KB`,
/// `M`/`MiB`/`MB`, `G`/`GiB`/`GB`, `T`/`TiB`/`TB`; all binary multiples).
pub fn parse_bytes(s: &str) -> Result<u64> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let value: f64 = num.parse().map_err(|_| {
        Error::invalid_argument(format!(
            "{s:?} is not a size (examples: 4096, 512MiB, 2GiB)"
        ))
    })?;
    let mult: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        "t" | "tb" | "tib" => 1 << 40,
        other => {
            return Err(Error::invalid_argument(format!(
                "unknown size unit {other:?} in {s:?}; use KiB, MiB, GiB or TiB"
            )))
        }
    };
    let bytes = value * mult as f64;
    if !bytes.is_finite() || bytes < 0.0 || bytes > u64::MAX as f64 {
        return Err(Error::invalid_argument(format!(
            "size {s:?} is out of range"
        )));
    }
    Ok(bytes as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_units() {
        assert_eq!(parse_bytes("4096").unwrap(), 4096);
        assert_eq!(parse_bytes("2GiB").unwrap(), 2 << 30);
        assert_eq!(parse_bytes("1.5g").unwrap(), 3 << 29);
        assert_eq!(parse_bytes("512 MiB").unwrap(), 512 << 20);
        assert!(parse_bytes("lots").is_err());
        assert!(parse_bytes("3 parsecs").is_err());
    }
}
