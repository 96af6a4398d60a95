//! Why a server could not start.

use std::fmt;
use std::path::{Path, PathBuf};

/// Why a server could not start.
#[derive(Debug)]
#[non_exhaustive]
pub enum ServeError {
    /// A world file named with `--worlds` cannot be served.
    World {
        /// The file.
        path: PathBuf,
        /// Why.
        message: String,
    },
    /// The address cannot be bound.
    Bind {
        /// The address asked for.
        address: String,
        /// The system's error.
        source: std::io::Error,
    },
    /// A setting is out of range.
    Option(String),
    /// The runtime failed.
    Io(std::io::Error),
}

impl ServeError {
    pub(super) fn world(path: &Path, message: String) -> Self {
        ServeError::World {
            path: path.to_path_buf(),
            message,
        }
    }
}

impl fmt::Display for ServeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ServeError::World { path, message } => write!(f, "{}: {message}", path.display()),
            ServeError::Bind { address, source } => write!(
                f,
                "cannot listen on {address}: {source}; choose another --port, or --port 0 for a free one"
            ),
            ServeError::Option(m) => f.write_str(m),
            ServeError::Io(e) => write!(f, "the server failed: {e}"),
        }
    }
}

impl std::error::Error for ServeError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ServeError::Bind { source, .. } | ServeError::Io(source) => Some(source),
            _ => None,
        }
    }
}
