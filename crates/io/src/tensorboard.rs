//! TensorBoard event files: the run's scalars where the ML ecosystem looks for them.
//!
//! TensorBoard reads a directory of `events.out.tfevents.*` files. Each file is a sequence of
//! TFRecords (a little-endian `u64` length, the masked CRC-32C of those 8 bytes, the payload,
//! the masked CRC-32C of the payload), and each payload is an `Event` protocol buffer: the first
//! one says the file version, the others carry a wall time, a step and a `Summary` of scalars.
//! The few fields needed are written by hand here (a protobuf library for four message fields
//! would outweigh the writer).
//!
//! Every writer opens a new file (named by time, host and process, as TensorBoard's own writers
//! do), so no file is ever appended by two processes or after a kill; a kill mid-record leaves
//! a torn last record, which TensorBoard's reader stops at, keeping all before it. TensorBoard
//! reads every file of the folder.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::proto::{bytes_field, double_field, float_field, varint_field};
use crate::Error;

/// Prefix of every event file's name; TensorBoard looks for it.
pub const EVENT_FILE_PREFIX: &str = "events.out.tfevents";

/// Appends scalar events to one new event file.
#[derive(Debug)]
pub struct EventWriter {
    file: File,
    path: PathBuf,
}

impl EventWriter {
    /// Creates `dir` if needed and a new event file in it, named
    /// `events.out.tfevents.SECONDS.HOST.PID.N` (N counts the writers of this process), and
    /// writes the file-version event.
    pub fn create(dir: &Path, host: &str, wall_time: f64) -> Result<EventWriter, Error> {
        static OPENED: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |source| Error::Io { path, source }
        };
        std::fs::create_dir_all(dir).map_err(io(dir))?;
        let host = crate::layout::name_part(host, &['-']);
        let n = OPENED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let name = format!(
            "{EVENT_FILE_PREFIX}.{}.{host}.{}.{n}",
            wall_time.max(0.0) as u64,
            std::process::id()
        );
        let path = dir.join(name);
        let file = OpenOptions::new()
            .create_new(true)
            .append(true)
            .open(&path)
            .map_err(io(&path))?;
        let mut writer = EventWriter { file, path };
        let mut event = Vec::new();
        double_field(&mut event, 1, wall_time);
        bytes_field(&mut event, 3, b"brain.Event:2");
        writer.record(&event)?;
        Ok(writer)
    }

    /// The event file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// One event at `step` holding every `(tag, value)` scalar; non-finite values are left
    /// out (TensorBoard would draw them as gaps anyway, and a NaN loss is in `metrics.jsonl`).
    pub fn scalars(
        &mut self,
        step: u64,
        wall_time: f64,
        values: &[(&str, f64)],
    ) -> Result<(), Error> {
        let mut summary = Vec::new();
        for &(tag, value) in values {
            if !value.is_finite() {
                continue;
            }
            let mut v = Vec::new();
            bytes_field(&mut v, 1, tag.as_bytes());
            float_field(&mut v, 2, value as f32);
            bytes_field(&mut summary, 1, &v);
        }
        if summary.is_empty() {
            return Ok(());
        }
        let mut event = Vec::new();
        double_field(&mut event, 1, wall_time);
        varint_field(&mut event, 2, step);
        bytes_field(&mut event, 5, &summary);
        self.record(&event)
    }

    /// Writes one TFRecord and hands it to the OS, so a reader polling the file sees it.
    fn record(&mut self, payload: &[u8]) -> Result<(), Error> {
        let len = (payload.len() as u64).to_le_bytes();
        let mut out = Vec::with_capacity(payload.len() + 16);
        out.extend_from_slice(&len);
        out.extend_from_slice(&masked_crc32c(&len).to_le_bytes());
        out.extend_from_slice(payload);
        out.extend_from_slice(&masked_crc32c(payload).to_le_bytes());
        self.file.write_all(&out).map_err(|source| Error::Io {
            path: self.path.clone(),
            source,
        })
    }
}

/// One record of an event file, read back: the step, wall time and scalars of an event (the
/// file-version event has none).
#[derive(Clone, Debug, PartialEq)]
pub struct ScalarEvent {
    pub wall_time: f64,
    pub step: u64,
    pub values: Vec<(String, f32)>,
}

/// Why an event file could not be read back.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum EventFileError {
    #[error("record at byte {0}: torn (the file ends inside it)")]
    Torn(usize),
    #[error("record at byte {0}: checksum mismatch")]
    Checksum(usize),
    #[error("record at byte {0}: not an event this writer writes")]
    Malformed(usize),
}

/// Reads the events of a file this module wrote (the check of the tests and of `yari check`;
/// TensorBoard has its own reader). Stops with an error at the first bad record.
pub fn read_events(bytes: &[u8]) -> Result<Vec<ScalarEvent>, EventFileError> {
    let mut events = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let start = at;
        let header = bytes.get(at..at + 12).ok_or(EventFileError::Torn(start))?;
        let len_bytes: [u8; 8] = header[..8].try_into().expect("8 bytes");
        let len_crc = u32::from_le_bytes(header[8..12].try_into().expect("4 bytes"));
        if masked_crc32c(&len_bytes) != len_crc {
            return Err(EventFileError::Checksum(start));
        }
        let len = usize::try_from(u64::from_le_bytes(len_bytes))
            .map_err(|_| EventFileError::Malformed(start))?;
        let end = (at + 12)
            .checked_add(len)
            .and_then(|e| e.checked_add(4))
            .ok_or(EventFileError::Malformed(start))?;
        let body = bytes.get(at + 12..end).ok_or(EventFileError::Torn(start))?;
        let (payload, crc) = body.split_at(len);
        if masked_crc32c(payload) != u32::from_le_bytes(crc.try_into().expect("4 bytes")) {
            return Err(EventFileError::Checksum(start));
        }
        events.push(parse_event(payload).ok_or(EventFileError::Malformed(start))?);
        at = end;
    }
    Ok(events)
}

fn parse_event(mut p: &[u8]) -> Option<ScalarEvent> {
    let mut event = ScalarEvent {
        wall_time: 0.0,
        step: 0,
        values: Vec::new(),
    };
    while !p.is_empty() {
        let key = take_varint(&mut p)?;
        match (key >> 3, key & 7) {
            (1, 1) => event.wall_time = f64::from_le_bytes(take(&mut p, 8)?.try_into().ok()?),
            (2, 0) => event.step = take_varint(&mut p)?,
            (3, 2) => {
                let len = take_varint(&mut p)? as usize;
                take(&mut p, len)?;
            }
            (5, 2) => {
                let len = take_varint(&mut p)? as usize;
                let mut summary = take(&mut p, len)?;
                while !summary.is_empty() {
                    if take_varint(&mut summary)? != (1 << 3) | 2 {
                        return None;
                    }
                    let len = take_varint(&mut summary)? as usize;
                    let mut value = take(&mut summary, len)?;
                    let (mut tag, mut simple) = (None, None);
                    while !value.is_empty() {
                        match take_varint(&mut value)? {
                            k if k == (1 << 3) | 2 => {
                                let len = take_varint(&mut value)? as usize;
                                tag =
                                    Some(String::from_utf8(take(&mut value, len)?.to_vec()).ok()?);
                            }
                            k if k == (2 << 3) | 5 => {
                                simple =
                                    Some(f32::from_le_bytes(take(&mut value, 4)?.try_into().ok()?));
                            }
                            _ => return None,
                        }
                    }
                    event.values.push((tag?, simple?));
                }
            }
            _ => return None,
        }
    }
    Some(event)
}

fn take<'a>(p: &mut &'a [u8], n: usize) -> Option<&'a [u8]> {
    if p.len() < n {
        return None;
    }
    let (head, rest) = p.split_at(n);
    *p = rest;
    Some(head)
}

fn take_varint(p: &mut &[u8]) -> Option<u64> {
    let mut value = 0u64;
    for shift in (0..64).step_by(7) {
        let (&byte, rest) = p.split_first()?;
        *p = rest;
        value |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Some(value);
        }
    }
    None
}

/// CRC-32C (Castagnoli), the checksum of TFRecords.
fn crc32c(bytes: &[u8]) -> u32 {
    const TABLE: [u32; 256] = {
        let mut table = [0u32; 256];
        let mut i = 0;
        while i < 256 {
            let mut c = i as u32;
            let mut k = 0;
            while k < 8 {
                c = if c & 1 != 0 {
                    0x82f6_3b78 ^ (c >> 1)
                } else {
                    c >> 1
                };
                k += 1;
            }
            table[i] = c;
            i += 1;
        }
        table
    };
    let mut crc = !0u32;
    for &b in bytes {
        crc = TABLE[((crc ^ u32::from(b)) & 0xff) as usize] ^ (crc >> 8);
    }
    !crc
}

/// TFRecord's masking of a CRC (so that a CRC of data holding CRCs is not degenerate).
fn masked_crc32c(bytes: &[u8]) -> u32 {
    let crc = crc32c(bytes);
    crc.rotate_right(15).wrapping_add(0xa282_ead8)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc32c_matches_the_standard_check_value() {
        // The check value of CRC-32C (RFC 3720, and every CRC catalogue).
        assert_eq!(crc32c(b"123456789"), 0xe306_9283);
        assert_eq!(crc32c(b""), 0);
    }

    #[test]
    fn events_read_back_and_damage_is_caught() {
        let dir = tempfile::tempdir().unwrap();
        let mut w =
            EventWriter::create(&dir.path().join("tb"), "host.name", 1_700_000_000.5).unwrap();
        w.scalars(
            3,
            1_700_000_001.0,
            &[("train/loss", 2.5), ("train/lr", 0.02), ("nan", f64::NAN)],
        )
        .unwrap();
        w.scalars(4, 1_700_000_002.0, &[]).unwrap();
        w.scalars(5, 1_700_000_003.0, &[("train/loss", 2.25)])
            .unwrap();
        let name = w.path().file_name().unwrap().to_string_lossy().into_owned();
        assert!(
            name.starts_with("events.out.tfevents.1700000000.host_name."),
            "{name}"
        );
        let bytes = std::fs::read(w.path()).unwrap();
        let events = read_events(&bytes).unwrap();
        assert_eq!(events.len(), 3, "the version event and two with scalars");
        assert!(events[0].values.is_empty());
        assert_eq!(events[0].wall_time, 1_700_000_000.5);
        assert_eq!(events[1].step, 3);
        assert_eq!(
            events[1].values,
            vec![
                ("train/loss".to_string(), 2.5),
                ("train/lr".to_string(), 0.02f32)
            ]
        );
        assert_eq!(events[2].step, 5);
        // A kill mid-record, and a flipped bit.
        assert_eq!(
            read_events(&bytes[..bytes.len() - 3]),
            Err(EventFileError::Torn(events_start(&bytes, 2)))
        );
        let mut flipped = bytes.clone();
        let n = flipped.len();
        flipped[n - 6] ^= 1;
        assert!(matches!(
            read_events(&flipped),
            Err(EventFileError::Checksum(_))
        ));
        // A second writer of the same process never reuses the file.
        let other =
            EventWriter::create(&dir.path().join("tb"), "host.name", 1_700_000_000.5).unwrap();
        assert_ne!(other.path(), w.path());
    }

    /// Byte offset of record `k`.
    fn events_start(bytes: &[u8], k: usize) -> usize {
        let mut at = 0;
        for _ in 0..k {
            let len = u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap()) as usize;
            at += 12 + len + 4;
        }
        at
    }
}
