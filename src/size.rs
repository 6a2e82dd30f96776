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

/// `bytes` in binary units, for messages (`1.5 GiB`).
pub fn format_bytes(bytes: u64) -> String {
    let units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    let mut v = bytes as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < units.len() {
        v /= 1024.0;
        u += 1;
    }
    format!("{v:.1} {}", units.get(u).copied().unwrap_or("B"))
}

/// This machine's memory (`MemTotal`), if the system says.
pub fn physical_memory() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let kib = info
        .lines()
        .find(|l| l.starts_with("MemTotal"))?
        .split_whitespace()
        .nth(1)?
        .parse::<u64>()
        .ok()?;
    Some(kib.saturating_mul(1024))
}

/// The memory a count the user gives per item asks for (`--neg` per
/// positive edge, `--test-neg` per test edge, Python's `neg=`): `items ×
/// value` entries of `entry_bytes` each, which must fit the budget.
#[derive(Debug, Clone, Copy)]
pub struct PerItemCount<'a> {
    /// The option as the user wrote it (`--neg`).
    pub option: &'a str,
    /// Its value.
    pub value: u64,
    /// How many items it multiplies, and what they are (`positives a batch`).
    pub items: (u64, &'a str),
    /// Bytes an entry takes at least, and what they hold.
    pub entry: (u64, &'a str),
}

impl PerItemCount<'_> {
    /// Refuses the count when its entries exceed `budget` bytes (None:
    /// this machine's memory), naming the option, what it would take and
    /// the largest value that fits: an allocation that cannot succeed is
    /// an error here, not an abort later.
    pub fn check(&self, budget: Option<u64>) -> Result<()> {
        let (budget, budget_name) = match budget {
            Some(b) => (b, "--memory"),
            None => match physical_memory() {
                Some(b) => (b, "this machine's memory"),
                None => return Ok(()),
            },
        };
        let (items, entry_bytes) = (self.items.0.max(1), self.entry.0.max(1));
        let need = items.saturating_mul(self.value).saturating_mul(entry_bytes);
        if need <= budget {
            return Ok(());
        }
        let fits = budget / items / entry_bytes;
        Err(Error::invalid_argument(format!(
            "{} {}: {} {} × {} need at least {} ({} B each: {}), more than {} ({}); at most {} {} fits",
            self.option,
            self.value,
            self.items.0,
            self.items.1,
            self.value,
            format_bytes(need),
            entry_bytes,
            self.entry.1,
            budget_name,
            format_bytes(budget),
            self.option,
            fits
        )))
    }
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

    proptest::proptest! {
        /// A count is refused exactly when its entries exceed the budget,
        /// and the largest count the refusal offers fits while one more
        /// does not.
        #[test]
        fn a_per_item_count_fits_exactly_when_its_bytes_do(
            value in 0u64..1 << 40,
            items in 1u64..1 << 20,
            entry in 1u64..1 << 12,
            budget in 0u64..1 << 40,
        ) {
            let count = |value| PerItemCount {
                option: "--neg",
                value,
                items: (items, "positives"),
                entry: (entry, "ids"),
            };
            let fits = |v: u64| (items as u128) * (v as u128) * (entry as u128) <= budget as u128;
            match count(value).check(Some(budget)) {
                Ok(()) => proptest::prop_assert!(fits(value)),
                Err(e) => {
                    proptest::prop_assert!(!fits(value));
                    let msg = e.to_string();
                    let offered: u64 = msg.rsplit("at most --neg ").next().unwrap()
                        .trim_end_matches(" fits").parse().unwrap();
                    proptest::prop_assert!(fits(offered) && !fits(offered + 1), "{}", msg);
                    proptest::prop_assert!(count(offered).check(Some(budget)).is_ok());
                }
            }
        }
    }
}
