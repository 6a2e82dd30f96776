//! `ginex-import`: datasets in. Thin wrapper over `ginex::cli::import`.

use clap::Parser;

fn main() -> std::process::ExitCode {
    ginex::cli::init_tracing();
    let cli = ginex::cli::import::ImportCli::parse();
    ginex::cli::finish(ginex::cli::import::run(&cli, &mut std::io::stdout().lock()))
}
