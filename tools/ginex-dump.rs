//! `ginex-dump`: inspect and verify any file ginex writes. Thin wrapper over
//! `ginex::cli::dump`.

use clap::Parser;

fn main() -> anyhow::Result<()> {
    ginex::cli::init_tracing();
    let args = ginex::cli::dump::DumpArgs::parse();
    let mut stdout = std::io::stdout().lock();
    ginex::cli::dump::run(&args, &mut stdout)?;
    Ok(())
}
