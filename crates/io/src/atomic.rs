//! Whole-file replacement that a kill cannot tear.
//!
//! The bytes go to a temporary file in the target's own directory (so the rename cannot cross
//! file systems), which is synced, renamed over the target, and then the directory is synced so
//! that the rename itself survives a power cut. The temporary name is unique per process and
//! per call, so two writers of one path (a worker and a learner, two threads) never write into
//! each other's temporary file; the last rename wins whole.

use std::ffi::OsString;
use std::fs::{self, File};
use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::Error;

/// Suffix of every temporary file [`write_atomic`] creates (dot-prefixed, so directory listings
/// of shards and checkpoints skip them).
pub const TEMP_SUFFIX: &str = ".tmp";

static COUNTER: AtomicU64 = AtomicU64::new(0);

/// Replaces `path` with `bytes` atomically: readers see the old file or the complete new one.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), Error> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let name = path.file_name().ok_or_else(|| {
        Error::io(
            path,
            std::io::Error::new(std::io::ErrorKind::InvalidInput, "no file name"),
        )
    })?;
    let mut tmp_name = OsString::from(".");
    tmp_name.push(name);
    tmp_name.push(format!(
        ".{}-{}{TEMP_SUFFIX}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    let tmp = dir.join(tmp_name);
    let write = || -> Result<(), Error> {
        let mut f = File::create(&tmp).map_err(|e| Error::io(&tmp, e))?;
        f.write_all(bytes).map_err(|e| Error::io(&tmp, e))?;
        f.sync_all().map_err(|e| Error::io(&tmp, e))?;
        drop(f);
        fs::rename(&tmp, path).map_err(|e| Error::io(path, e))
    };
    if let Err(e) = write() {
        let _ = fs::remove_file(&tmp);
        return Err(e);
    }
    sync_dir(dir);
    Ok(())
}

/// Persists renames and new entries of `dir`. Best effort: not every platform lets a directory
/// be opened, and the data itself is already synced.
pub fn sync_dir(dir: &Path) {
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
}

/// Whether `file_name` is a temporary file of an atomic write (this module's, or one of the
/// writers this crate replaced: `x.tmp`, `.x.tmp1234`, `.x.1234.tmp`). One left behind means a
/// writer died between creating it and renaming it; its target was never replaced.
pub fn is_temp_name(file_name: &str) -> bool {
    if file_name.ends_with(TEMP_SUFFIX) {
        return true;
    }
    match file_name.rfind(TEMP_SUFFIX) {
        Some(i) => {
            let rest = &file_name[i + TEMP_SUFFIX.len()..];
            !rest.is_empty() && rest.bytes().all(|b| b.is_ascii_digit())
        }
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_whole_files_and_leaves_no_temporary_behind() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.json");
        write_atomic(&path, b"one").unwrap();
        write_atomic(&path, b"two, longer").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"two, longer");
        let names: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert_eq!(names, ["state.json"]);
    }

    #[test]
    fn a_failed_write_names_the_path_and_keeps_the_old_file() {
        let dir = tempfile::tempdir().unwrap();
        // A directory where the file should go: the rename fails.
        let path = dir.path().join("taken");
        fs::create_dir(&path).unwrap();
        fs::write(path.join("inside"), b"kept").unwrap();
        let err = write_atomic(&path, b"new").unwrap_err();
        assert!(err.to_string().contains("taken"), "{err}");
        assert_eq!(fs::read(path.join("inside")).unwrap(), b"kept");
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
        let missing = dir.path().join("no/such/dir/file");
        let err = write_atomic(&missing, b"x").unwrap_err();
        assert!(err.to_string().contains("no/such/dir"), "{err}");
    }

    #[test]
    fn temporary_names_are_recognised() {
        for name in [
            ".state.json.77-0.tmp",
            "state.tmp",
            ".gen-0001.yari.tmp4242",
            ".g-00000.yshard.99.tmp",
        ] {
            assert!(is_temp_name(name), "{name}");
        }
        for name in [
            "state.json",
            "gen-0001.yari",
            "tmpfile",
            "x.tmpl",
            "a.tmp.json",
        ] {
            assert!(!is_temp_name(name), "{name}");
        }
    }
}
