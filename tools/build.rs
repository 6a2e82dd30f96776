//! With the `train` feature the tools link libtorch's shared libraries
//! (torch-sys links them dynamically). So that the binaries start without
//! `LD_LIBRARY_PATH`, this records libtorch's library directory as an rpath
//! of every binary and test of this crate, found the way torch-sys finds it:
//! with `LIBTORCH_USE_PYTORCH`, the `torch` package of the Python
//! interpreter on `PATH` (the project venv after
//! `eval "$(bash tools/setup-libtorch.sh --env)"`), else `LIBTORCH_LIB` or
//! `LIBTORCH` (`<dir>/lib`); a system libtorch in /usr/lib needs none.
//! The directory must stay where it is: the binaries load libtorch from it
//! at every start. `GINEX_NO_RPATH=1` leaves the rpath out.

use std::path::PathBuf;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    for var in [
        "LIBTORCH",
        "LIBTORCH_LIB",
        "LIBTORCH_USE_PYTORCH",
        "VIRTUAL_ENV",
        "GINEX_NO_RPATH",
    ] {
        println!("cargo:rerun-if-env-changed={var}");
    }
    if std::env::var_os("CARGO_FEATURE_TRAIN").is_none()
        || std::env::var_os("GINEX_NO_RPATH").is_some_and(|v| v != "0")
        || std::env::var("CARGO_CFG_TARGET_OS").as_deref() != Ok("linux")
    {
        return;
    }
    match torch_lib_dir() {
        Some(dir) if dir.is_dir() => {
            println!("cargo:rustc-link-arg=-Wl,-rpath,{}", dir.display());
        }
        Some(dir) => println!(
            "cargo:warning=libtorch's library directory {} does not exist: the binaries will need LD_LIBRARY_PATH",
            dir.display()
        ),
        None if std::path::Path::new("/usr/lib/libtorch.so").exists() => {}
        None => println!(
            "cargo:warning=libtorch's library directory not found (set LIBTORCH, or LIBTORCH_USE_PYTORCH=1 with torch importable): the binaries will need LD_LIBRARY_PATH"
        ),
    }
}

/// Where torch-sys links libtorch from (the same order of precedence).
fn torch_lib_dir() -> Option<PathBuf> {
    if std::env::var_os("LIBTORCH_USE_PYTORCH").is_none() {
        let root = std::env::var_os("LIBTORCH_LIB").or_else(|| std::env::var_os("LIBTORCH"))?;
        return Some(PathBuf::from(root).join("lib"));
    }
    // torch-sys's choice of interpreter.
    let python = if std::env::var_os("VIRTUAL_ENV").is_some() {
        "python"
    } else {
        "python3"
    };
    let out = Command::new(python)
        .args([
            "-W",
            "ignore",
            "-c",
            "import os, torch; print(os.path.join(os.path.dirname(torch.__file__), 'lib'))",
        ])
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let dir = String::from_utf8(out.stdout).ok()?;
    let dir = dir.trim();
    (!dir.is_empty()).then(|| PathBuf::from(dir))
}
