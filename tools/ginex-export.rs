//! `ginex-export`: stores out to DGL / GraphBolt. Thin wrapper over `ginex::cli::export`.

use clap::Parser;

fn main() -> std::process::ExitCode {
    ginex::cli::init_tracing();
    let cli = ginex::cli::export::ExportCli::parse();
    ginex::cli::finish(ginex::cli::export::run(&cli, &mut std::io::stdout().lock()))
}
