//! JSON-lines files that survive a crash mid-write.
//!
//! Game files and the gating ledger are append-only logs that several processes (a match, a
//! `yari run` loop, a crash and a restart) may add to. Each record is serialised first and
//! written with a single `write` on a file opened in append mode, so a reader never sees two
//! records interleaved; if the writer dies mid-line, the torn line has no newline, the next
//! writer starts with one, and readers skip the unparseable fragment instead of failing.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::Path;

use serde::de::DeserializeOwned;
use serde::Serialize;

/// Appends `record` as one line. Creates the file (and its parent folder) when missing.
pub fn append<T: Serialize>(path: &Path, record: &T) -> io::Result<()> {
    let mut line = serde_json::to_string(record).map_err(io::Error::other)?;
    line.push('\n');
    if let Some(dir) = path.parent() {
        if !dir.as_os_str().is_empty() {
            std::fs::create_dir_all(dir)?;
        }
    }
    let mut file = OpenOptions::new()
        .create(true)
        .append(true)
        .read(true)
        .open(path)?;
    // A torn last line (a writer that died mid-record) must not swallow this record.
    if ends_without_newline(&mut file)? {
        line.insert(0, '\n');
    }
    file.write_all(line.as_bytes())?;
    file.sync_data()
}

fn ends_without_newline(file: &mut File) -> io::Result<bool> {
    let len = file.metadata()?.len();
    if len == 0 {
        return Ok(false);
    }
    file.seek(SeekFrom::Start(len - 1))?;
    let mut last = [0u8; 1];
    file.read_exact(&mut last)?;
    Ok(last[0] != b'\n')
}

/// The records of a JSON-lines file, and how many lines were skipped as torn or unreadable.
#[derive(Debug, Clone)]
pub struct Records<T> {
    pub records: Vec<T>,
    /// Lines that did not parse (a torn last line after a crash, or foreign text).
    pub skipped: usize,
}

/// Reads every record of a JSON-lines file. A missing file reads as empty; blank lines are
/// ignored; lines that do not parse are counted in [`Records::skipped`], not fatal.
pub fn read<T: DeserializeOwned>(path: &Path) -> io::Result<Records<T>> {
    let text = match std::fs::read(path) {
        Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
        Err(e) if e.kind() == io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(e),
    };
    let mut records = Vec::new();
    let mut skipped = 0;
    for line in text.lines() {
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str(line) {
            Ok(r) => records.push(r),
            Err(_) => skipped += 1,
        }
    }
    Ok(Records { records, skipped })
}
