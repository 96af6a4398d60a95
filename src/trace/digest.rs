//! Digests of what a table holds: what a checkpoint records so that a resume can prove the
//! trace and events table it continues are the ones it wrote.
//!
//! A line table (JSON Lines, CSV) is digested over every byte from the start of the file
//! to the checkpoint's position; a Parquet table over its finished part files in order
//! (each one's length, then its bytes). Writers keep the digest running as they write, so
//! a checkpoint costs no read of the table, and a resume reads the kept prefix once.

use std::fs::File;
use std::hash::Hasher as _;
use std::path::{Path, PathBuf};

use super::TraceError;

/// A running digest (XXH64): fast enough to keep up with a trace writer, and wide enough
/// that a table changed by accident, swapped or shortened since its checkpoint is told
/// apart from the one recorded.
#[derive(Clone, Default)]
pub(crate) struct Digest(twox_hash::XxHash64);

impl Digest {
    /// Adds `bytes` to the digest.
    pub(crate) fn update(&mut self, bytes: &[u8]) {
        self.0.write(bytes);
    }

    /// The digest so far, as the hex a checkpoint stores.
    pub(crate) fn hex(&self) -> String {
        format!("{:016x}", self.0.finish())
    }

    /// The digest of the first `len` bytes of `file`.
    ///
    /// # Errors
    ///
    /// The file is shorter than `len` or cannot be read.
    pub(crate) fn of_prefix(file: &File, path: &Path, len: u64) -> Result<Self, TraceError> {
        use std::os::unix::fs::FileExt;
        let mut digest = Digest::default();
        let mut chunk = vec![0u8; 1 << 20];
        let mut at = 0u64;
        while at < len {
            let n = (len - at).min(chunk.len() as u64) as usize;
            file.read_exact_at(&mut chunk[..n], at)
                .map_err(|e| TraceError::io(path, e))?;
            digest.update(&chunk[..n]);
            at += n as u64;
        }
        Ok(digest)
    }

    /// Adds the part files `parts`, in order: each one's length, then its bytes.
    ///
    /// # Errors
    ///
    /// A part cannot be read.
    pub(crate) fn add_parts(&mut self, parts: &[PathBuf]) -> Result<(), TraceError> {
        for part in parts {
            let file = File::open(part).map_err(|e| TraceError::io(part, e))?;
            let len = file.metadata().map_err(|e| TraceError::io(part, e))?.len();
            self.update(&len.to_le_bytes());
            let whole = Digest::of_prefix(&file, part, len)?;
            // The part's own digest, not its bytes again: the same length and bytes give
            // the same value, and the chain stays one pass over each part.
            self.update(whole.hex().as_bytes());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prefix_digest_equals_the_running_digest_of_the_same_bytes() {
        let scratch = crate::output::Scratch::new("digest-prefix");
        let path = scratch.join("t.jsonl");
        std::fs::write(&path, b"one\ntwo\nthree\n").unwrap();
        let file = File::open(&path).unwrap();
        let mut running = Digest::default();
        running.update(b"one\n");
        running.update(b"two\n");
        let read = Digest::of_prefix(&file, &path, 8).unwrap();
        assert_eq!(read.hex(), running.hex());
        assert_ne!(
            Digest::of_prefix(&file, &path, 7).unwrap().hex(),
            running.hex()
        );
        assert!(Digest::of_prefix(&file, &path, 100).is_err());
    }

    #[test]
    fn parts_in_another_order_digest_differently() {
        let scratch = crate::output::Scratch::new("digest-parts");
        let (a, b) = (scratch.join("a"), scratch.join("b"));
        std::fs::write(&a, b"ab").unwrap();
        std::fs::write(&b, b"c").unwrap();
        let (mut ab, mut ba) = (Digest::default(), Digest::default());
        ab.add_parts(&[a.clone(), b.clone()]).unwrap();
        ba.add_parts(&[b, a]).unwrap();
        assert_ne!(ab.hex(), ba.hex());
    }
}
