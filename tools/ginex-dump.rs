//! `ginex-dump`: inspect and verify any file ginex writes. Thin wrapper over
//! `ginex::cli::dump`.

use clap::Parser;

fn main() -> std::process::ExitCode {
    ginex::cli::init_tracing();
    let args = ginex::cli::dump::DumpArgs::parse();
    ginex::cli::finish(ginex::cli::dump::run(&args, &mut std::io::stdout().lock()))
}
