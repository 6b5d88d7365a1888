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

/// The target's file name and the writer's process id in the name of a temporary file of
/// [`write_atomic`] (`.NAME.PID-N.tmp`, or `.NAME.PID.tmp` as older versions wrote them).
pub fn temp_file_owner(file_name: &str) -> Option<(&str, u32)> {
    let rest = file_name.strip_prefix('.')?.strip_suffix(TEMP_SUFFIX)?;
    let (target, tag) = rest.rsplit_once('.')?;
    let pid = tag.split_once('-').map_or(tag, |(pid, _)| pid);
    Some((target, pid.parse().ok()?))
}

/// Whether the temporary file of process `pid` may still be written to. Our own process id
/// counts as dead: a file of ours found before we write into a directory was left by an
/// earlier process that had the same id (containers reuse small ids). Without `/proc`, every
/// other process is assumed alive, so nothing a live writer needs is ever removed.
fn writer_alive(pid: u32) -> bool {
    if pid == std::process::id() {
        return false;
    }
    let proc = Path::new("/proc");
    !proc.is_dir() || proc.join(pid.to_string()).exists()
}

/// Removes the temporary files in `dir` whose writer is gone and whose target name passes
/// `targets` (a kill between writing and renaming leaves one: 1 MB for a checkpoint), and
/// returns them. What they held never replaced its target, so nothing finished is lost.
pub fn remove_stale_temp_files(
    dir: &Path,
    targets: impl Fn(&str) -> bool,
) -> Result<Vec<std::path::PathBuf>, Error> {
    let mut removed = Vec::new();
    for entry in fs::read_dir(dir).map_err(|e| Error::io(dir, e))? {
        let path = entry.map_err(|e| Error::io(dir, e))?.path();
        let stale = path
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(temp_file_owner)
            .is_some_and(|(target, pid)| targets(target) && !writer_alive(pid));
        // Only plain files: never a link or a directory that happens to have such a name.
        let plain = fs::symlink_metadata(&path).is_ok_and(|m| m.is_file());
        if stale && plain {
            match fs::remove_file(&path) {
                Ok(()) => removed.push(path),
                // Another process cleaning the same directory got there first.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(Error::io(&path, e)),
            }
        }
    }
    removed.sort();
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The id of a process that has exited.
    fn dead_pid() -> u32 {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        pid
    }

    #[test]
    fn stale_temporary_files_of_dead_writers_are_removed() {
        let dir = tempfile::tempdir().unwrap();
        let dead = dead_pid();
        let alive = 1; // init
        for name in [
            format!(".out.yari.{dead}-0.tmp"),
            format!(".out.yari.{dead}.tmp"),
            format!(".out.yari.{alive}-0.tmp"),
            format!(".other.yari.{dead}-3.tmp"),
            "out.yari".to_string(),
        ] {
            fs::write(dir.path().join(name), b"x").unwrap();
        }
        let removed = remove_stale_temp_files(dir.path(), |t| t == "out.yari").unwrap();
        let names: Vec<_> = removed
            .iter()
            .map(|p| p.file_name().unwrap().to_str().unwrap().to_string())
            .collect();
        assert_eq!(
            names,
            [
                format!(".out.yari.{dead}-0.tmp"),
                format!(".out.yari.{dead}.tmp")
            ]
        );
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 3);
        assert_eq!(
            temp_file_owner(".a.b.yshard.12-7.tmp"),
            Some(("a.b.yshard", 12))
        );
        assert_eq!(temp_file_owner(".state.json.x-1.tmp"), None);
        assert_eq!(temp_file_owner("state.json"), None);
    }

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
