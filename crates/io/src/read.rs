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
