//! clap value parsers: flags are parsed into their types when the command
//! line is read, so a bad value is refused with clap's usage message before
//! any work starts. The parsing logic itself stays in the library
//! (`Policy::parse`, `parse_fanouts`) or in `size.rs`.

use ginex::exec::policy::Policy;

/// Neighbors per hop, seeds' hop first (-1 = all). An alias, so that clap
/// takes the whole list as one value.
pub type Fanouts = Vec<i64>;

/// `--fanouts 10,10,10`.
pub fn fanouts(s: &str) -> Result<Fanouts, String> {
    ginex::sample::sampler::parse_fanouts(s).map_err(|e| e.to_string())
}

/// `--policy ginex` (ginex, degree, presc, lru, mmap, none).
pub fn policy(s: &str) -> Result<Policy, String> {
    Policy::parse(s).map_err(|e| e.to_string())
}

/// A byte size: `4096`, `512MiB`, `2GiB`.
pub fn bytes(s: &str) -> Result<u64, String> {
    crate::size::parse_bytes(s).map_err(|e| e.to_string())
}
