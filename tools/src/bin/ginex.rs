//! `ginex`: generate synthetic data, sample, inspect, benchmark. Thin
//! wrapper over `ginex_cli::ginex`.

use clap::Parser;

fn main() -> std::process::ExitCode {
    ginex_cli::init_tracing();
    let cli = ginex_cli::commands::GinexCli::parse();
    ginex_cli::finish(ginex_cli::commands::run(cli, &mut std::io::stdout().lock()))
}
