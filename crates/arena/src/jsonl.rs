//! The arena's game files and gating ledger: JSON-lines logs written and read by
//! [`yari_io::jsonl`] (one write per record, a torn last line after a kill reported apart
//! from damage and never glued to the next record). These wrappers keep the arena's
//! `std::io::Error`-based signatures; [`crate::ArenaError::Io`] adds the path.

use std::io;
use std::path::Path;

use serde::de::DeserializeOwned;
use serde::Serialize;

pub use yari_io::jsonl::{BadLine, Records};

/// Appends `record` as one line and syncs it. Creates the file (and its parent folder) when
/// missing.
pub fn append<T: Serialize>(path: &Path, record: &T) -> io::Result<()> {
    yari_io::jsonl::append(path, record).map_err(yari_io::Error::into_io)
}

/// Reads every record of a JSON-lines file. A missing file reads as empty; blank lines are
/// ignored; lines that do not parse are listed in [`Records::torn`] or [`Records::corrupt`].
pub fn read<T: DeserializeOwned>(path: &Path) -> io::Result<Records<T>> {
    yari_io::jsonl::read(path).map_err(yari_io::Error::into_io)
}
