//! Where a world file's errors point: the error type, and the lines and fields a byte
//! offset of the file falls on.

use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};

use crate::config::serde_field;

/// A world file that cannot be used, with where and why.
#[derive(Clone, Debug, PartialEq)]
pub struct WorldFileError {
    /// The file.
    pub path: PathBuf,
    /// 1-based line, when known.
    pub line: Option<usize>,
    /// The offending field (dotted path), when known.
    pub field: Option<String>,
    /// What is wrong and what to do.
    pub message: String,
}

impl fmt::Display for WorldFileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.path.display())?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
        }
        if let Some(field) = &self.field {
            write!(f, ": field `{field}`")?;
        }
        write!(f, ": {}", self.message)
    }
}

impl std::error::Error for WorldFileError {}

impl WorldFileError {
    /// An error about the file as a whole: no line or field to point at.
    pub fn whole(path: &Path, message: impl Into<String>) -> Self {
        WorldFileError {
            path: path.to_path_buf(),
            line: None,
            field: None,
            message: message.into(),
        }
    }
}

/// Reads at most [`MAX_WORLD_FILE_BYTES`](crate::limits::MAX_WORLD_FILE_BYTES), so
/// `/dev/zero` or a huge file is refused instead of read without bound.
fn read_bounded(path: &Path) -> Result<Vec<u8>, String> {
    use std::io::Read;
    let limit = crate::limits::MAX_WORLD_FILE_BYTES;
    let file = std::fs::File::open(path).map_err(|e| format!("cannot read the file: {e}"))?;
    let mut bytes = Vec::new();
    file.take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read the file: {e}"))?;
    if bytes.len() as u64 > limit {
        return Err(format!(
            "is larger than {limit} bytes, the limit for a world or sweep file; is it the right file?"
        ));
    }
    Ok(bytes)
}

/// The text of a TOML file the user names (a world or sweep file): read with
/// [`read_bounded`], and UTF-8, else an error naming the line of the first invalid byte.
pub(crate) fn read_text(path: &Path) -> Result<String, WorldFileError> {
    let error = |line, message| WorldFileError {
        path: path.to_path_buf(),
        line,
        field: None,
        message,
    };
    let bytes = read_bounded(path).map_err(|message| error(None, message))?;
    String::from_utf8(bytes).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        let line = e.as_bytes()[..at].iter().filter(|b| **b == b'\n').count() + 1;
        let message = format!("byte {at} is not valid UTF-8; save the file as UTF-8");
        error(Some(line), message)
    })
}

/// A TOML file the user names, validated against what it may name: world files and sweep
/// files load through these four functions alike. Bring it into scope to call them
/// (`use perennial::world_file::TomlFile;`).
///
/// A type implements [`TomlFile::builtin`] and [`TomlFile::parse_with`]; reading the file
/// (bounded in size, UTF-8, an error naming the line of the first bad byte) and the
/// built-in lookups come with the trait.
///
/// ```
/// use perennial::world_file::{TomlFile, WorldFile};
/// use std::path::Path;
///
/// let world = WorldFile::load(Path::new("worlds/cartpole.toml")).unwrap();
/// let text = std::fs::read_to_string("worlds/cartpole.toml").unwrap();
/// let again = WorldFile::parse(&text, Path::new("worlds/cartpole.toml")).unwrap();
/// assert_eq!((world.kind.as_str(), again.kind.as_str()), ("cartpole", "cartpole"));
/// let err = WorldFile::load(Path::new("worlds/none.toml")).unwrap_err();
/// assert_eq!(err.path, Path::new("worlds/none.toml"));
/// ```
pub trait TomlFile: Sized {
    /// What the file's names (world kinds, agents) are looked up in.
    type Names: ?Sized + 'static;

    /// The built-in names: perennial's own worlds and agents.
    fn builtin() -> &'static Self::Names;

    /// Validates the file's text against `names`; `path` is used in errors.
    ///
    /// # Errors
    ///
    /// The text is not a valid file of this kind; the error names the file, line and field.
    fn parse_with(text: &str, path: &Path, names: &Self::Names) -> Result<Self, WorldFileError>;

    /// [`TomlFile::parse_with`] against the built-in names.
    ///
    /// # Errors
    ///
    /// As [`TomlFile::parse_with`].
    fn parse(text: &str, path: &Path) -> Result<Self, WorldFileError> {
        Self::parse_with(text, path, Self::builtin())
    }

    /// Reads the file at `path` and validates it against `names`.
    ///
    /// # Errors
    ///
    /// The file cannot be read (missing, larger than the limit, not UTF-8), or as
    /// [`TomlFile::parse_with`].
    fn load_with(path: &Path, names: &Self::Names) -> Result<Self, WorldFileError> {
        let text = read_text(path)?;
        Self::parse_with(&text, path, names)
    }

    /// [`TomlFile::load_with`] against the built-in names.
    ///
    /// # Errors
    ///
    /// As [`TomlFile::load_with`].
    fn load(path: &Path) -> Result<Self, WorldFileError> {
        Self::load_with(path, Self::builtin())
    }
}

/// Locates byte offsets as lines and builds errors for one file (a world file, or a sweep
/// file: its errors have the same form).
pub(crate) struct Ctx<'a> {
    pub(crate) path: &'a Path,
    pub(crate) text: &'a str,
}

impl Ctx<'_> {
    /// The file's text as `T`; serde's error at its line, with the field it names (prefixed
    /// with `prefix`, e.g. `sweep.`).
    pub(crate) fn parse<T: serde::de::DeserializeOwned>(
        &self,
        prefix: &str,
    ) -> Result<T, WorldFileError> {
        toml::from_str(self.text).map_err(|e| {
            let msg = e.message().trim();
            let at = e.span().map(|s| s.start);
            // A value of the wrong type or range names no field: the key on its line does.
            let field = serde_field(msg)
                .map(str::to_string)
                .or_else(|| at.and_then(|a| self.key_at(a)))
                .map(|f| match at.and_then(|a| self.table_at(a, &f)) {
                    Some(table) => table,
                    None => format!("{prefix}{f}"),
                });
            self.err(e.span(), field.as_deref(), msg.to_string())
        })
    }

    /// The line holding byte `offset`, and the offset where it starts.
    pub(super) fn line_at(&self, offset: usize) -> (usize, &str) {
        let offset = offset.min(self.text.len());
        let start = self.text[..offset].rfind('\n').map_or(0, |i| i + 1);
        let end = self.text[offset..]
            .find('\n')
            .map_or(self.text.len(), |i| offset + i);
        (start, &self.text[start..end])
    }

    /// The key of the `key = value` line holding byte `offset`.
    pub(super) fn key_at(&self, offset: usize) -> Option<String> {
        let (_, line) = self.line_at(offset);
        let key = line.split_once('=')?.0.trim();
        let bare = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.');
        (!key.is_empty() && key.chars().all(bare)).then(|| key.to_string())
    }

    /// `field` in full, for an error at byte `offset`: within the table whose header
    /// (`[harness]`, `[[regimes]]`) comes last at or before it, so `[notify] extra = 1`
    /// is `notify.extra`, not `extra`. An error on a header line itself is about that
    /// table (`[harnes]`) or a field it lacks. `None` before any header.
    pub(super) fn table_at(&self, offset: usize, field: &str) -> Option<String> {
        let header = |line: &str| {
            let t = line.trim();
            let name = t
                .strip_prefix("[[")
                .and_then(|r| r.split_once("]]"))
                .or_else(|| t.strip_prefix('[').and_then(|r| r.split_once(']')))?
                .0
                .trim();
            // A line of a multi-line array (`[0, "a"],`) is not a header.
            let bare = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.');
            (!name.is_empty() && name.chars().all(bare)).then(|| name.to_string())
        };
        let (start, line) = self.line_at(offset);
        if let Some(table) = header(line) {
            let last = table.rsplit('.').next().unwrap_or(&table);
            return Some(if last == field {
                table
            } else {
                format!("{table}.{field}")
            });
        }
        self.text[..start]
            .lines()
            .rev()
            .find_map(header)
            .map(|table| format!("{table}.{field}"))
    }

    pub(super) fn line(&self, offset: usize) -> usize {
        let end = offset.min(self.text.len());
        self.text.as_bytes()[..end]
            .iter()
            .filter(|&&b| b == b'\n')
            .count()
            + 1
    }

    pub(crate) fn err(
        &self,
        span: Option<Range<usize>>,
        field: Option<&str>,
        message: impl Into<String>,
    ) -> WorldFileError {
        WorldFileError {
            path: self.path.to_path_buf(),
            line: span.map(|s| self.line(s.start)),
            field: field.map(str::to_string),
            message: message.into(),
        }
    }

    /// The line of `key = ...` at or after `from`, for errors serde reports without a span.
    pub(super) fn find_key(&self, from: usize, key: &str) -> Option<Range<usize>> {
        let mut offset = from.min(self.text.len());
        for line in self.text[offset..].split_inclusive('\n') {
            let trimmed = line.trim_start();
            if let Some(rest) = trimmed.strip_prefix(key)
                && rest.trim_start().starts_with('=')
            {
                let start = offset + (line.len() - trimmed.len());
                return Some(start..start + key.len());
            }
            offset += line.len();
        }
        None
    }

    /// The line of a table header `[path]` (spaces and quotes inside the brackets aside),
    /// or with `prefix`, of the first header that starts with `path.` or is `path`.
    pub(super) fn find_header(&self, path: &str, prefix: bool) -> Option<Range<usize>> {
        let mut offset = 0;
        for line in self.text.split_inclusive('\n') {
            let trimmed = line.trim_start();
            if let Some(rest) = trimmed.strip_prefix('[')
                && !rest.starts_with('[')
                && let Some((inside, _)) = rest.split_once(']')
            {
                let name: String = inside
                    .chars()
                    .filter(|c| !c.is_whitespace() && *c != '"' && *c != '\'')
                    .collect();
                let hit = name == path
                    || (prefix && name.strip_prefix(path).is_some_and(|r| r.starts_with('.')));
                if hit {
                    let start = offset + (line.len() - trimmed.len());
                    return Some(start..start + trimmed.trim_end().len());
                }
            }
            offset += line.len();
        }
        None
    }

    /// The line of `key = ...` within the table whose header ends at `from` (up to the
    /// next header).
    pub(super) fn find_key_in_table(&self, from: usize, key: &str) -> Option<Range<usize>> {
        let end = self.text[from..]
            .split_inclusive('\n')
            .skip(1)
            .scan(from, |at, line| {
                let start = *at;
                *at += line.len();
                Some((start, line))
            })
            .find(|(_, line)| line.trim_start().starts_with('['))
            .map_or(self.text.len(), |(start, _)| start);
        self.find_key(from, key).filter(|span| span.start < end)
    }

    /// Where option `field` (dotted, within `[agent.<agent>]`) is written: the deepest
    /// `[agent.<agent>.…]` header on its path holding the next key, else the first header
    /// of the agent's tables.
    pub(super) fn find_agent_option(&self, agent: &str, field: &str) -> Option<Range<usize>> {
        let parts: Vec<&str> = field.split('.').collect();
        let table = format!("agent.{agent}");
        for depth in (0..parts.len()).rev() {
            let mut header = table.clone();
            for part in &parts[..depth] {
                header.push('.');
                header.push_str(part);
            }
            if let Some(at) = self.find_header(&header, false)
                && let Some(span) = self.find_key_in_table(at.end, parts[depth])
            {
                return Some(span);
            }
        }
        // The option is a whole table (`[agent.oracle.<label>]`), else point at the agent's.
        self.find_header(&format!("{table}.{field}"), false)
            .or_else(|| self.find_header(&table, true))
    }
}
