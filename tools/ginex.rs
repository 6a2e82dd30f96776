//! `ginex`: generate synthetic data, benchmark. Thin wrapper over
//! `ginex::cli::ginex`.

use clap::Parser;

fn main() -> anyhow::Result<()> {
    ginex::cli::init_tracing();
    let cli = ginex::cli::ginex::GinexCli::parse();
    let mut stdout = std::io::stdout().lock();
    ginex::cli::ginex::run(cli, &mut stdout)?;
    Ok(())
}
