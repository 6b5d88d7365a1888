//! The checksummed container shared by network checkpoints and game shards.
//!
//! Layout (all integers little-endian):
//!
//! | bytes | content |
//! | --- | --- |
//! | 4 | magic (`YARI` for checkpoints, `YSPR` for shards) |
//! | 4 | format version, `u32` |
//! | 4 | a `u32` the format defines (checkpoint: metadata length; shard: number of games) |
//! | 8 | a `u64` the format defines (checkpoint: weights length; shard: payload length) |
//! | n | body; its length `n` follows from the two fields above |
//! | 4 | CRC-32 (IEEE) of every preceding byte |
//!
//! The lengths sit in the fixed header so that a truncated file is recognised as such before
//! anything is parsed, and a hostile length is caught by comparing it with the file's size
//! rather than by allocating it; the checksum covers the header too, so a flipped bit anywhere
//! is an error rather than a wrong-but-loadable file.

use thiserror::Error;

/// Bytes before the body.
pub const HEADER_LEN: usize = 20;
/// Bytes after the body.
pub const CRC_LEN: usize = 4;

/// Why bytes are not a valid frame of the expected format.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum FrameError {
    /// Shorter than its header says: an interrupted copy, a partial download.
    #[error("truncated: {actual} bytes, header promises {expected}")]
    Truncated {
        /// Length the header implies.
        expected: u64,
        /// Length found.
        actual: u64,
    },
    /// Not this format at all (or its first bytes are damaged).
    #[error("magic bytes {found:?}, expected {expected:?}")]
    BadMagic {
        /// The first four bytes found (zero-padded when the file is shorter).
        found: [u8; 4],
        /// The format's magic.
        expected: [u8; 4],
    },
    /// Written by another version of the format.
    #[error("format version {found}, this build reads {supported}")]
    UnsupportedVersion {
        /// Version in the file.
        found: u32,
        /// Version this build reads.
        supported: u32,
    },
    /// Longer than its header says.
    #[error("{extra} unexpected trailing bytes")]
    TrailingData {
        /// Bytes after the checksum.
        extra: u64,
    },
    /// The content does not match its checksum.
    #[error("checksum mismatch: stored {stored:#010x}, computed {computed:#010x}")]
    ChecksumMismatch {
        /// CRC-32 stored in the file.
        stored: u32,
        /// CRC-32 of the content.
        computed: u32,
    },
}

/// One container format: its magic and the version this build reads and writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Format {
    /// First four bytes of every file.
    pub magic: [u8; 4],
    /// Version this build reads and writes.
    pub version: u32,
}

/// The two format-defined header fields and the verified body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Frame<'a> {
    /// The header's `u32` field.
    pub word: u32,
    /// The header's `u64` field.
    pub len: u64,
    /// The bytes between header and checksum.
    pub body: &'a [u8],
}

impl Format {
    /// The bytes of a frame holding `body`, with the format's two header fields.
    pub fn encode(&self, word: u32, len: u64, body: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(HEADER_LEN + body.len() + CRC_LEN);
        out.extend_from_slice(&self.magic);
        out.extend_from_slice(&self.version.to_le_bytes());
        out.extend_from_slice(&word.to_le_bytes());
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(body);
        let crc = crc32fast::hash(&out);
        out.extend_from_slice(&crc.to_le_bytes());
        out
    }

    /// Verifies `bytes` and returns its frame. `body_len` gives the body's length from the two
    /// header fields, or `None` for a header no writer produces (an absurd length), which is
    /// reported as the checksum mismatch it must be rather than as a truncation the user might
    /// try to repair.
    ///
    /// Checks, in order: magic (of as many bytes as there are), length against the header,
    /// version, trailing bytes, checksum.
    pub fn decode<'a>(
        &self,
        bytes: &'a [u8],
        body_len: impl FnOnce(u32, u64) -> Option<u64>,
    ) -> Result<Frame<'a>, FrameError> {
        let actual = bytes.len() as u64;
        let n = bytes.len().min(4);
        if bytes[..n] != self.magic[..n] {
            let mut found = [0u8; 4];
            found[..n].copy_from_slice(&bytes[..n]);
            return Err(FrameError::BadMagic {
                found,
                expected: self.magic,
            });
        }
        if bytes.len() < HEADER_LEN + CRC_LEN {
            return Err(FrameError::Truncated {
                expected: (HEADER_LEN + CRC_LEN) as u64,
                actual,
            });
        }
        let version = u32::from_le_bytes(bytes[4..8].try_into().expect("4 bytes"));
        if version != self.version {
            return Err(FrameError::UnsupportedVersion {
                found: version,
                supported: self.version,
            });
        }
        let word = u32::from_le_bytes(bytes[8..12].try_into().expect("4 bytes"));
        let len = u64::from_le_bytes(bytes[12..20].try_into().expect("8 bytes"));
        let Some(body) = body_len(word, len) else {
            return Err(checksum_error(bytes));
        };
        let expected = body.saturating_add((HEADER_LEN + CRC_LEN) as u64);
        if actual < expected {
            return Err(FrameError::Truncated { expected, actual });
        }
        if actual > expected {
            return Err(FrameError::TrailingData {
                extra: actual - expected,
            });
        }
        let body_end = bytes.len() - CRC_LEN;
        let stored = u32::from_le_bytes(bytes[body_end..].try_into().expect("4 bytes"));
        let computed = crc32fast::hash(&bytes[..body_end]);
        if stored != computed {
            return Err(FrameError::ChecksumMismatch { stored, computed });
        }
        Ok(Frame {
            word,
            len,
            body: &bytes[HEADER_LEN..body_end],
        })
    }
}

fn checksum_error(bytes: &[u8]) -> FrameError {
    let body_end = bytes.len().saturating_sub(CRC_LEN);
    let stored = u32::from_le_bytes(bytes[body_end..].try_into().unwrap_or([0; 4]));
    FrameError::ChecksumMismatch {
        stored,
        computed: crc32fast::hash(&bytes[..body_end]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const F: Format = Format {
        magic: *b"TEST",
        version: 3,
    };

    fn whole(_: u32, len: u64) -> Option<u64> {
        Some(len)
    }

    #[test]
    fn round_trips_and_rejects_every_kind_of_damage() {
        let bytes = F.encode(7, 5, b"hello");
        let frame = F.decode(&bytes, whole).unwrap();
        assert_eq!((frame.word, frame.len, frame.body), (7, 5, &b"hello"[..]));

        let err = F.decode(&bytes[..bytes.len() - 1], whole).unwrap_err();
        assert_eq!(
            err,
            FrameError::Truncated {
                expected: 29,
                actual: 28
            }
        );
        assert!(matches!(
            F.decode(&bytes[..3], whole),
            Err(FrameError::Truncated { .. })
        ));
        assert!(matches!(
            F.decode(b"", whole),
            Err(FrameError::Truncated { .. })
        ));
        assert!(matches!(
            F.decode(b"XY", whole),
            Err(FrameError::BadMagic { .. })
        ));
        let mut longer = bytes.clone();
        longer.push(0);
        assert_eq!(
            F.decode(&longer, whole),
            Err(FrameError::TrailingData { extra: 1 })
        );
        let mut flipped = bytes.clone();
        flipped[21] ^= 1;
        assert!(matches!(
            F.decode(&flipped, whole),
            Err(FrameError::ChecksumMismatch { .. })
        ));
        let v4 = Format { version: 4, ..F }.encode(7, 5, b"hello");
        assert_eq!(
            F.decode(&v4, whole),
            Err(FrameError::UnsupportedVersion {
                found: 4,
                supported: 3
            })
        );
    }

    #[test]
    fn hostile_lengths_are_refused_without_allocating_them() {
        let mut bytes = F.encode(0, 5, b"hello");
        bytes[12..20].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(matches!(
            F.decode(&bytes, whole),
            Err(FrameError::Truncated { .. })
        ));
        let bytes = F.encode(u32::MAX, 5, b"hello");
        let refused = F.decode(&bytes, |word, len| (word < 100).then_some(len));
        assert!(matches!(refused, Err(FrameError::ChecksumMismatch { .. })));
    }
}
