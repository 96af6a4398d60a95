//! What the benches share.

/// Removes this process's bench outputs in the temp dir: every trace, events table and
/// manifest whose name starts with `prefix`.
pub fn remove_outputs(prefix: &str) {
    let Ok(dir) = std::fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    for entry in dir.flatten() {
        if entry.file_name().to_string_lossy().starts_with(prefix) {
            let path = entry.path();
            let _ = std::fs::remove_dir_all(&path).or_else(|_| std::fs::remove_file(&path));
        }
    }
}
