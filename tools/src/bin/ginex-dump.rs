//! `ginex-dump`: inspect and verify any file ginex writes. Thin wrapper over
//! `ginex_cli::dump`.

use clap::Parser;

fn main() -> std::process::ExitCode {
    ginex_cli::init_tracing();
    let args = ginex_cli::dump::DumpArgs::parse();
    ginex_cli::finish(ginex_cli::dump::run(&args, &mut std::io::stdout().lock()))
}
