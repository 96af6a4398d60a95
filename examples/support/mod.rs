//! What the examples that drive the `perennial` command share.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The `perennial` binary next to this example's build folder, built when absent.
pub fn binary() -> Result<PathBuf, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let dir = exe
        .parent()
        .and_then(Path::parent)
        .ok_or("cannot locate the build folder")?;
    let bin = dir.join("perennial");
    if !bin.exists() {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let status = Command::new(cargo)
            .args(["build", "--release", "--bin", "perennial"])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .status()
            .map_err(|e| format!("cannot build perennial: {e}"))?;
        if !status.success() {
            return Err("building perennial failed".into());
        }
    }
    Ok(bin)
}
