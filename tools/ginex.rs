//! `ginex`: generate synthetic data, sample, inspect, benchmark. Thin
//! wrapper over `ginex::cli::ginex`.

use clap::Parser;

fn main() -> std::process::ExitCode {
    ginex::cli::init_tracing();
    let cli = ginex::cli::ginex::GinexCli::parse();
    ginex::cli::finish(ginex::cli::ginex::run(cli, &mut std::io::stdout().lock()))
}
