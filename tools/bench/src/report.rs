//! The files a tool writes for a user (`--report`, `--plot`, an SVG, a
//! bench's JSON) and the JSON documents it prints.

/// Creates the missing parent directories of an output path (`--out`,
/// `--report`, `--plot`), as `mkdir -p` would, so that `--out data/store`
/// works in a fresh checkout. A parent that exists but is not a directory is
/// left alone for the command to report; the output itself is not created.
pub fn create_parent_dirs(path: &std::path::Path) -> ginex::internals::error::Result<()> {
    match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() && parent.symlink_metadata().is_err() => {
            std::fs::create_dir_all(parent)
                .map_err(|e| ginex::internals::error::Error::io("create directory", parent, e))
        }
        _ => Ok(()),
    }
}

/// Writes a user-named output file (`--report`, `--plot`, an SVG, a bench's
/// JSON) beside `path` and renames it into place, creating missing parent
/// directories: an existing file is replaced only by a complete one, and a
/// failure (a full disk) removes only the temporary file this call created
/// (`npy_write::write_output`).
pub fn write_report(
    path: &std::path::Path,
    bytes: impl AsRef<[u8]>,
) -> ginex::internals::error::Result<()> {
    create_parent_dirs(path)?;
    ginex::internals::import::npy_write::write_output(path, |w| w.write_all(bytes.as_ref()))
}

/// `doc` as JSON with its keys in sorted order, as the `json!` documents
/// the tools printed before their serde types (serializing a tool's own
/// document of numbers, strings and paths cannot fail).
pub fn sorted_json(doc: &impl serde::Serialize) -> serde_json::Value {
    serde_json::to_value(doc).unwrap_or_default()
}
