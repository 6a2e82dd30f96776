//! The command-line tools run in process, for ginex-cli's tests: each
//! runner parses its arguments as the binary would and returns what it
//! printed. (The tests of the core crate cannot use them: it does not
//! depend on the tools.)
#![allow(dead_code)]

use std::path::Path;

use clap::Parser;

use crate::common::p;

/// `ginex-import ARGS`; a parse error is an `Err` too.
pub fn run_import(args: &[&str]) -> ginex::Result<String> {
    use ginex_cli::import::{run, ImportCli};
    let cli = ImportCli::try_parse_from(std::iter::once(&"ginex-import").chain(args))
        .map_err(|e| ginex::Error::invalid_argument(e.to_string()))?;
    let mut out = Vec::new();
    run(&cli, &mut out)?;
    Ok(String::from_utf8(out).unwrap())
}

/// `ginex ARGS`; a parse error is an `Err` too.
pub fn run_ginex(args: &[&str]) -> ginex::Result<String> {
    use ginex_cli::commands::{run, GinexCli};
    let cli = GinexCli::try_parse_from(std::iter::once(&"ginex").chain(args))
        .map_err(|e| ginex::Error::invalid_argument(e.to_string()))?;
    let mut out = Vec::new();
    run(cli, &mut out)?;
    Ok(String::from_utf8(out).unwrap())
}

/// `ginex-export ARGS`, which must succeed.
pub fn run_export(args: &[&str]) -> String {
    use ginex_cli::export::{run, ExportCli};
    let cli = ExportCli::try_parse_from(std::iter::once(&"ginex-export").chain(args)).unwrap();
    let mut out = Vec::new();
    run(&cli, &mut out).unwrap();
    String::from_utf8(out).unwrap()
}

/// `ginex-dump ARGS`, which must succeed.
pub fn run_dump(args: &[&str]) -> String {
    use ginex_cli::dump::{run, DumpArgs};
    let a = DumpArgs::try_parse_from(std::iter::once(&"ginex-dump").chain(args)).unwrap();
    let mut out = Vec::new();
    run(&a, &mut out).unwrap();
    String::from_utf8(out).unwrap()
}

/// Runs the `ginex-import` command an export report prints, with `STORE`
/// replaced by `rebuilt`.
pub fn run_printed_reimport(report: &str, rebuilt: &Path) {
    let cmd = report
        .lines()
        .find_map(|l| l.trim().strip_prefix("rebuild the same store: "))
        .unwrap_or_else(|| panic!("no re-import command in:\n{report}"));
    let mut args: Vec<&str> = cmd.split_whitespace().collect();
    assert_eq!(args.remove(0), "ginex-import", "{cmd}");
    assert!(!args.contains(&"--undirected"), "{cmd}");
    let rebuilt = p(rebuilt);
    let args: Vec<&str> = args
        .into_iter()
        .map(|a| if a == "STORE" { rebuilt } else { a })
        .chain(["--quiet"])
        .collect();
    run_import(&args).unwrap_or_else(|e| panic!("{cmd}: {e}"));
}

/// Paper `i` of the MAG-shaped typed fixtures has features `[i, 10 i, -i]`.
pub fn paper_feats(range: std::ops::Range<usize>) -> Vec<f32> {
    range
        .flat_map(|i| [i as f32, 10.0 * i as f32, -(i as f32)])
        .collect()
}
