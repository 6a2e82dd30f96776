//! `ginex-import`: datasets in. Thin wrapper over `ginex_cli::import`.

use clap::Parser;

fn main() -> std::process::ExitCode {
    ginex_cli::init_tracing();
    let cli = ginex_cli::import::ImportCli::parse();
    ginex_cli::finish(ginex_cli::import::run(&cli, &mut std::io::stdout().lock()))
}
