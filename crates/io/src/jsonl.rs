//! Append-only logs of JSON lines that survive a kill mid-write.
//!
//! Each record is serialised first and written with a single `write` on a file opened in append
//! mode, so records of concurrent writers never interleave and a kill leaves at most one torn
//! line: a record's prefix without its newline. Before appending, a writer that finds the file
//! not ending in a newline starts a fresh line, so its record is not glued onto the fragment
//! (which would make both unreadable).
//!
//! Readers tell the two kinds of unreadable line apart: a *torn* line is a record cut short (the
//! JSON ends early), which a kill explains and which loses only that record; a *corrupt* line
//! is anything else (garbage, a flipped byte, a record of another shape), which a kill does not
//! explain. Both are skipped, neither is fatal, and both are reported with their line numbers.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::Error;

/// Appends `record` as one line and syncs it. Creates the file and its parent folder when
/// missing.
pub fn append<T: Serialize>(path: &Path, record: &T) -> Result<(), Error> {
    let mut w = Writer::open(path)?;
    w.append(record)?;
    w.sync()
}

/// An open log, for writers that append many records (per-step metrics) and choose when to
/// sync.
pub struct Writer {
    path: PathBuf,
    file: File,
}

impl Writer {
    /// Opens (creating it and its folder) the log for appending, first ending a torn last line.
    pub fn open(path: &Path) -> Result<Writer, Error> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        }
        let mut file = OpenOptions::new()
            .create(true)
            .append(true)
            .read(true)
            .open(path)
            .map_err(|e| Error::io(path, e))?;
        if ends_without_newline(&mut file).map_err(|e| Error::io(path, e))? {
            file.write_all(b"\n").map_err(|e| Error::io(path, e))?;
        }
        Ok(Writer {
            path: path.to_path_buf(),
            file,
        })
    }

    /// Appends one record as one line, in one write.
    pub fn append<T: Serialize>(&mut self, record: &T) -> Result<(), Error> {
        let mut line = serde_json::to_vec(record).map_err(|source| Error::Serialize {
            path: self.path.clone(),
            source,
        })?;
        line.push(b'\n');
        self.file
            .write_all(&line)
            .map_err(|e| Error::io(&self.path, e))
    }

    /// Forces the appended records to disk.
    pub fn sync(&mut self) -> Result<(), Error> {
        self.file.sync_data().map_err(|e| Error::io(&self.path, e))
    }
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

/// A line that did not parse.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BadLine {
    /// 1-based line number.
    pub line: usize,
    /// What the JSON parser said.
    pub error: String,
}

/// The records of a log, and the lines that were skipped.
#[derive(Clone, Debug)]
pub struct Records<T> {
    /// Every record that parsed, in file order.
    pub records: Vec<T>,
    /// Records cut short by a kill mid-write (the last line, or a line a later writer ended).
    pub torn: Vec<BadLine>,
    /// Lines that are not a record cut short: damage or foreign content.
    pub corrupt: Vec<BadLine>,
}

impl<T> Records<T> {
    /// Lines skipped for either reason.
    pub fn skipped(&self) -> usize {
        self.torn.len() + self.corrupt.len()
    }

    /// Whether every line parsed.
    pub fn is_clean(&self) -> bool {
        self.skipped() == 0
    }
}

/// Parses the lines of a log (see [`read`]).
pub fn parse<T: DeserializeOwned>(text: &str) -> Records<T> {
    let mut out = Records {
        records: Vec::new(),
        torn: Vec::new(),
        corrupt: Vec::new(),
    };
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str(line) {
            Ok(r) => out.records.push(r),
            Err(e) => {
                let bad = BadLine {
                    line: i + 1,
                    error: e.to_string(),
                };
                if e.is_eof() {
                    out.torn.push(bad);
                } else {
                    out.corrupt.push(bad);
                }
            }
        }
    }
    out
}

/// Reads every record of a log. A missing file reads as empty, blank lines are ignored, and
/// lines that do not parse are reported in [`Records::torn`] or [`Records::corrupt`].
pub fn read<T: DeserializeOwned>(path: &Path) -> Result<Records<T>, Error> {
    let text = match crate::read_regular_file(path, crate::MAX_LOG_BYTES) {
        Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
        Err(e) if e.kind() == io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(Error::io(path, e)),
    };
    Ok(parse(&text))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Rec {
        generation: u32,
        name: String,
    }

    fn rec(generation: u32) -> Rec {
        Rec {
            generation,
            name: format!("gen-{generation:04}"),
        }
    }

    #[test]
    fn a_torn_last_line_is_reported_and_not_glued_to_the_next_record() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/ratings.jsonl");
        append(&path, &rec(1)).unwrap();
        // A kill mid-write: a prefix of the second record, no newline.
        let full = serde_json::to_string(&rec(2)).unwrap();
        let mut f = OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(&full.as_bytes()[..full.len() / 2]).unwrap();
        drop(f);
        let r = read::<Rec>(&path).unwrap();
        assert_eq!(r.records, [rec(1)]);
        assert_eq!(r.torn.len(), 1);
        assert_eq!(r.torn[0].line, 2);
        assert!(r.corrupt.is_empty());
        // The next session appends: its record is readable, the fragment stays a torn line.
        append(&path, &rec(3)).unwrap();
        let r = read::<Rec>(&path).unwrap();
        assert_eq!(r.records, [rec(1), rec(3)]);
        assert_eq!((r.torn.len(), r.corrupt.len()), (1, 0));
    }

    #[test]
    fn damage_is_told_apart_from_a_torn_line() {
        let text = "{\"generation\":1,\"name\":\"a\"}\n\
                    {\"generation\":2,\"name\":\"b\"}}\n\
                    not json at all\n\
                    \n\
                    {\"generation\":\"three\",\"name\":\"c\"}\n\
                    {\"generation\":4,\"na";
        let r = parse::<Rec>(text);
        assert_eq!(r.records.len(), 1);
        let corrupt: Vec<usize> = r.corrupt.iter().map(|b| b.line).collect();
        assert_eq!(corrupt, [2, 3, 5]);
        assert_eq!(r.torn.iter().map(|b| b.line).collect::<Vec<_>>(), [6]);
        assert_eq!(r.skipped(), 4);
        assert!(!r.is_clean());
    }

    #[test]
    fn a_missing_file_reads_empty_and_a_writer_repairs_on_open() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("metrics.jsonl");
        assert!(read::<Rec>(&path).unwrap().records.is_empty());
        std::fs::write(&path, "{\"generation\":1,\"name\":\"a\"}\n{\"gen").unwrap();
        let mut w = Writer::open(&path).unwrap();
        w.append(&rec(5)).unwrap();
        w.append(&rec(6)).unwrap();
        w.sync().unwrap();
        let r = read::<Rec>(&path).unwrap();
        assert_eq!(r.records.len(), 3);
        assert_eq!(r.torn.len(), 1);
        assert!(std::fs::read_to_string(&path).unwrap().ends_with("}\n"));
    }
}
