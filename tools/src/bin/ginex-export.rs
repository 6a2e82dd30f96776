//! `ginex-export`: stores out to DGL / GraphBolt. Thin wrapper over `ginex_cli::export`.

use clap::Parser;

fn main() -> std::process::ExitCode {
    ginex_cli::init_tracing();
    let cli = ginex_cli::export::ExportCli::parse();
    ginex_cli::finish(ginex_cli::export::run(&cli, &mut std::io::stdout().lock()))
}
