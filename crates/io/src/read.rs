//! Bounded reads of whole files.

use std::fs::{self, File};
use std::io::Read;
use std::path::Path;

/// Reads a whole regular file of at most `max` bytes. Devices and pipes are refused before
/// they are opened (`--model /dev/zero` once read until memory ran out; a FIFO would block),
/// and the read stops past `max` even if the file grows meanwhile. Checkpoints and game
/// shards are read through it.
pub fn read_regular_file(path: &Path, max: u64) -> std::io::Result<Vec<u8>> {
    use std::io::{Error, ErrorKind};
    let check = |meta: fs::Metadata| {
        if !meta.is_file() {
            return Err(Error::new(ErrorKind::InvalidInput, "not a regular file"));
        }
        if meta.len() > max {
            let what = format!(
                "{} bytes, more than the {max} such a file can have",
                meta.len()
            );
            return Err(Error::new(ErrorKind::InvalidData, what));
        }
        Ok(meta.len())
    };
    check(fs::metadata(path)?)?;
    let file = File::open(path)?;
    let len = check(file.metadata()?)?;
    let mut bytes = Vec::with_capacity(len as usize);
    file.take(max + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max {
        let what = format!("grew past {max} bytes while being read");
        return Err(Error::new(ErrorKind::InvalidData, what));
    }
    Ok(bytes)
}

/// The most a config file (a run config, `--config`) may hold.
pub const MAX_CONFIG_BYTES: u64 = 1 << 20;

/// The most a run's JSON file (`state.json`, `summary.json`, the trainer's state) or one of its
/// JSON-lines logs may hold: far above what any run writes (a two-hour run's `metrics.jsonl`
/// is about 5 MB), far below a read that would exhaust memory.
pub const MAX_LOG_BYTES: u64 = 1 << 30;

/// [`read_regular_file`] as UTF-8 text; bytes that are not UTF-8 are an `InvalidData` error.
pub fn read_regular_text(path: &Path, max: u64) -> std::io::Result<String> {
    let bytes = read_regular_file(path, max)?;
    String::from_utf8(bytes).map_err(|e| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("not UTF-8 text: {e}"),
        )
    })
}
