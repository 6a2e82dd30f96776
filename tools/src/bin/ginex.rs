//! `ginex`: generate synthetic data, sample, inspect, run epochs, train,
//! benchmark. Thin wrapper over `ginex_cli::commands`.

use clap::Parser;

fn main() -> std::process::ExitCode {
    ginex_cli::init_tracing();
    let cli = ginex_cli::commands::GinexCli::parse();
    ginex_cli::finish(ginex_cli::commands::run(cli, &mut std::io::stdout().lock()))
}
