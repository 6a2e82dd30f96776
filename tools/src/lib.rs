//! Command-line front ends. Each tool in `tools/` parses its arguments with
//! the clap types here and calls a `run` function that writes to any
//! `io::Write`, so tests can drive the tools without spawning processes.

pub mod args;
pub mod commands;
pub mod derive;
pub mod dump;
pub mod epoch;
pub mod export;
pub mod gen;
pub mod import;
pub mod neighbor_cache;
#[cfg(feature = "train")]
pub mod predict;
#[cfg(feature = "train")]
pub mod predict_link;
pub mod sample;
pub mod size;
#[cfg(feature = "train")]
pub mod train;

/// The benchmark harness (its own crate, `tools/bench/`), `ginex bench`.
pub use ginex_bench as bench;
/// Measuring and reporting, shared with the harness: the machine line,
/// memory cgroups, SVG charts, report files.
pub use ginex_bench::{cgroup, create_parent_dirs, machine, sorted_json, svg, write_report};

/// Sets up `tracing` logs on stderr, filtered by `RUST_LOG` (default: warn),
/// and the library's progress reports as bars on stderr.
pub fn init_tracing() {
    ginex::progress::install(Box::new(TerminalProgress));
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(std::io::stderr)
        .try_init();
}

/// A progress bar on stderr for `total` units, hidden when `quiet` or when
/// stderr is not a terminal.
pub fn progress_bar(total: u64, what: &str, quiet: bool) -> indicatif::ProgressBar {
    if quiet {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::new(total);
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{msg:>12} [{bar:30}] {percent:>3}% {binary_bytes_per_sec} eta {eta}",
        )
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
        .progress_chars("=> "),
    );
    bar.set_message(what.to_string());
    bar
}

/// An indicatif style from `template`, with the key `{rate}`: units per
/// second as people read them (`1.35 M/s`, not indicatif's
/// `1,345,699.5461/s`).
pub fn bar_style(template: &str) -> indicatif::ProgressStyle {
    indicatif::ProgressStyle::with_template(template)
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
        .with_key(
            "rate",
            |state: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
                let _ = w.write_str(&ginex::progress::human_rate(state.per_sec(), ""));
            },
        )
        .progress_chars("=> ")
}

/// The library's progress phases as indicatif bars on stderr (hidden when
/// stderr is not a terminal, which indicatif checks itself): the phase's
/// name, the bar, the position, the phase's message, the time left.
struct TerminalProgress;

impl ginex::progress::ProgressSink for TerminalProgress {
    fn phase(&self, what: &str, total: u64) -> Box<dyn ginex::progress::PhaseProgress> {
        let (bar, template) = if total > 0 {
            (
                indicatif::ProgressBar::new(total),
                "{prefix:>14} [{bar:30}] {human_pos}/{human_len} {msg} eta {eta}",
            )
        } else {
            (
                indicatif::ProgressBar::new_spinner(),
                "{prefix:>14} {human_pos} {rate} {msg} {elapsed}",
            )
        };
        bar.set_style(bar_style(template));
        bar.set_prefix(what.to_string());
        Box::new(IndicatifPhase(bar))
    }
}

struct IndicatifPhase(indicatif::ProgressBar);

impl ginex::progress::PhaseProgress for IndicatifPhase {
    fn set_position(&self, pos: u64) {
        self.0.set_position(pos);
    }
    fn set_message(&self, message: &str) {
        self.0.set_message(message.to_string());
    }
    fn finish(&self) {
        self.0.finish_and_clear();
    }
}

/// Turns a tool's result into its exit status: errors are printed as one
/// line per cause on stderr (no backtrace) with status 1; a closed stdout
/// (`ginex-dump --json … | head`) is not an error.
pub fn finish(result: ginex::internals::error::Result<()>) -> std::process::ExitCode {
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(ginex::internals::error::Error::Io { source, .. })
            if source.kind() == std::io::ErrorKind::BrokenPipe =>
        {
            std::process::ExitCode::SUCCESS
        }
        Err(e) => {
            let mut said = e.to_string();
            eprintln!("error: {said}");
            let mut cause = std::error::Error::source(&e);
            while let Some(c) = cause {
                // Variants that show their source inline (`Io`) would
                // otherwise print the same OS error twice.
                let text = c.to_string();
                if !said.contains(&text) {
                    eprintln!("  caused by: {text}");
                    said.push_str(&text);
                }
                cause = c.source();
            }
            std::process::ExitCode::FAILURE
        }
    }
}

/// Reads a file of node ids, one per line, given in the store's original
/// ids (see [`ginex::NodeIds`]), as store ids; `ginex predict --nodes`.
pub fn read_node_ids(
    ids: &ginex::NodeIds,
    path: &std::path::Path,
) -> ginex::internals::error::Result<Vec<u64>> {
    use ginex::internals::error::Error;
    let bytes = std::fs::read(path).map_err(|e| Error::io("read", path, e))?;
    let text = String::from_utf8(bytes).map_err(|e| {
        let npy = e.as_bytes().starts_with(b"\x93NUMPY");
        Error::InvalidInput {
            source_file: path.to_path_buf(),
            line: None,
            reason: format!(
                "expected a text file of node ids, one per line{}; byte {} is not text",
                if npy { " (this is an .npy array: write its ids out with numpy.savetxt(path, ids, fmt=\"%d\"))" } else { "" },
                e.utf8_error().valid_up_to()
            ),
        }
    })?;
    let mut nodes = Vec::new();
    for (i, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let bad = |reason: String| Error::InvalidInput {
            source_file: path.to_path_buf(),
            line: Some(i as u64 + 1),
            reason,
        };
        let v: u64 = line
            .trim()
            .parse()
            .map_err(|_| bad(format!("{line:?} is not a node id")))?;
        nodes.push(ids.store_id(v).map_err(|e| match e {
            Error::OutOfRange(m) => bad(m),
            other => other,
        })?);
    }
    Ok(nodes)
}
