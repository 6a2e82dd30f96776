//! The clap value parsers the benchmarks share with the CLI's commands
//! (which re-export them from `ginex_cli::args`): `--fanouts`, byte sizes and
//! `--first-superbatch`.

/// Neighbors per hop, seeds' hop first (-1 = all), for all relations or
/// per relation ([`ginex::internals::sample::fanouts`]).
pub use ginex::internals::sample::fanouts::Fanouts;

/// `--fanouts 10,10,10` or `--fanouts cites=10:5,writes=5:5,*=2:0`: the
/// one parser of every command's `--fanouts` (and `--eval-fanouts`).
pub fn fanouts(s: &str) -> Result<Fanouts, String> {
    Fanouts::parse(s).map_err(|e| e.to_string())
}

/// Fanouts for a human: `[10, 10, 10]` (as these lines always showed one
/// list for all), or the per-relation text.
pub fn show_fanouts(f: &Fanouts) -> String {
    match f.uniform() {
        Some(u) => format!("{u:?}"),
        None => f.to_string(),
    }
}

/// `--first-superbatch short` (short, full): `ginex epoch`'s and the
/// policy lab's superbatch layout.
pub fn first_superbatch(
    s: &str,
) -> Result<ginex::internals::exec::config::FirstSuperbatch, String> {
    ginex::internals::exec::config::FirstSuperbatch::parse(s).map_err(|e| e.to_string())
}

/// A byte size: `4096`, `512MiB`, `2GiB`.
pub fn bytes(s: &str) -> Result<u64, String> {
    ginex::internals::size::parse_bytes(s).map_err(|e| e.to_string())
}
