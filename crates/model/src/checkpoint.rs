//! One-file checkpoints: metadata and weights together, checksummed, written atomically.
//!
//! The container is [`yari_io::frame`]'s, shared with the game shards. Layout (all integers
//! little-endian):
//!
//! | bytes | content |
//! | --- | --- |
//! | 4 | magic `YARI` |
//! | 4 | format version (`u32`, currently [`FORMAT_VERSION`]) |
//! | 4 | metadata length `m` (`u32`) |
//! | 8 | weights length `w` (`u64`) |
//! | m | metadata, UTF-8 JSON ([`CheckpointMeta`]) |
//! | w | weights, a burnpack container (burn-store's native format) |
//! | 4 | CRC-32 (IEEE) of every preceding byte |
//!
//! Both lengths sit in the fixed header so a truncated file is recognised as such before
//! anything else is parsed, and the checksum covers the header too, so a flipped bit
//! anywhere is caught rather than turning into a wrong-but-loadable net. The metadata is
//! JSON so that a human (or `jq` after skipping 20 bytes) can read what a file is.

use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use burn::store::{BurnpackStore, ModuleSnapshot};
use burn::tensor::{Bytes, Device};
use serde::{Deserialize, Serialize};
use thiserror::Error;
use yari_io::frame::{Format, FrameError};
use yari_rules::encoding::{ENCODING_VERSION, INPUT_PLANES, POLICY_SIZE};

use crate::net::{Net, NetConfig, NetConfigError};

/// First four bytes of every checkpoint.
pub const MAGIC: [u8; 4] = *b"YARI";
/// Version of the container layout above (not of the weights or the encoding).
pub const FORMAT_VERSION: u32 = 1;
const FORMAT: Format = Format {
    magic: MAGIC,
    version: FORMAT_VERSION,
};
/// Refuse absurd metadata lengths before allocating; real metadata is a few hundred bytes.
const MAX_META_LEN: u32 = 1 << 20;
/// Largest file [`Checkpoint::read`] takes: the biggest net [`NetConfig::validate`] allows is
/// well under 1 GiB of weights. Bounds the read of something that is no checkpoint at all.
pub const MAX_CHECKPOINT_BYTES: u64 = 2 << 30;

/// Everything recorded about a checkpoint besides its weights.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckpointMeta {
    /// Shape of the net the weights belong to.
    pub config: NetConfig,
    /// Flat policy size the net was trained for; redundant with `config` but stated so a
    /// reader can check it against its own encoding without knowing the net's layout.
    pub policy_size: usize,
    /// `yari_rules::encoding::ENCODING_VERSION` the net was trained with.
    pub encoding_version: u32,
    /// Optimiser steps taken to produce these weights.
    pub step: u64,
    /// Self-play generation (how many times the net was promoted or retrained).
    pub generation: u32,
    /// Name or path of the checkpoint this one was trained from, if any.
    pub parent: Option<String>,
    /// Creation time, seconds since the Unix epoch.
    pub created_unix_s: u64,
    /// Free-form facts added later, such as the run and the ratings recorded by `yari export`.
    /// Absent in older files; readers that do not know a key ignore it.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub notes: std::collections::BTreeMap<String, serde_json::Value>,
}

impl CheckpointMeta {
    /// Metadata for a net of `config` under the current encoding, created now.
    pub fn new(config: NetConfig) -> Self {
        let created_unix_s = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        Self {
            config,
            policy_size: config.policy_size(),
            encoding_version: ENCODING_VERSION,
            step: 0,
            generation: 0,
            parent: None,
            created_unix_s,
            notes: Default::default(),
        }
    }
}

/// Why a checkpoint could not be written or read.
#[derive(Debug, Error)]
pub enum CheckpointError {
    /// The file system refused.
    #[error("checkpoint I/O on {path}: {source}")]
    Io {
        /// File being read or written.
        path: PathBuf,
        /// Underlying error.
        source: std::io::Error,
    },
    /// Not a whole, intact checkpoint container: not the format at all, another version of
    /// it, truncated, with trailing bytes, or failing its checksum (the reason says which).
    #[error("not a valid yari checkpoint: {0}")]
    Frame(#[from] FrameError),
    /// The weights hold a NaN or an infinity (a diverged training step, or a file edited by
    /// hand under a recomputed checksum): the network would play nonsense, so it is refused
    /// before it can be gated, published or played.
    #[error("checkpoint weights are not finite: tensor {tensor} (shape {shape:?}) holds a NaN or an infinity")]
    NonFinite {
        /// Index of the tensor in visit order.
        tensor: usize,
        /// Its shape.
        shape: Vec<usize>,
    },
    /// The metadata block is not the JSON this build expects.
    #[error("checkpoint metadata unreadable: {0}")]
    Metadata(#[from] serde_json::Error),
    /// Trained with another tensor encoding; its inputs and outputs would be misread.
    #[error("checkpoint uses encoding version {found}, this build uses {expected}")]
    EncodingMismatch {
        /// Encoding version in the file.
        found: u32,
        /// Encoding version expected.
        expected: u32,
    },
    /// The header names a net that cannot be built (a size of 0, or absurdly large).
    #[error("checkpoint describes an impossible net: {0}")]
    InvalidArchitecture(#[from] NetConfigError),
    /// The net in the file has another shape than the one asked for.
    #[error("checkpoint architecture mismatch: {details}")]
    ArchitectureMismatch {
        /// Architecture in the file (boxed: two configs inline would make every
        /// `Result<_, CheckpointError>` carry them).
        found: Box<NetConfig>,
        /// Architecture expected.
        expected: Box<NetConfig>,
        /// Human-readable list of the fields that differ.
        details: String,
    },
    /// The metadata passed the checks but the weights could not be encoded or applied.
    #[error("checkpoint weights: {0}")]
    Weights(String),
}

/// A checkpoint read into memory and verified (checksum, encoding), but not yet turned into a
/// net; useful to inspect metadata or to choose a device afterwards.
#[derive(Clone, Debug)]
pub struct Checkpoint {
    /// The checkpoint's metadata.
    pub meta: CheckpointMeta,
    weights: Vec<u8>,
}

impl Checkpoint {
    /// Parses and verifies checkpoint bytes.
    ///
    /// Checks, in order: length against the header, magic, format version, checksum, then the
    /// metadata's encoding version and input/policy sizes against this build's encoding.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, CheckpointError> {
        let frame = FORMAT
            .decode(bytes, |meta_len, weights_len| {
                (meta_len <= MAX_META_LEN).then(|| u64::from(meta_len).saturating_add(weights_len))
            })
            .map_err(CheckpointError::from)?;
        let meta_len = frame.word as usize;
        let meta: CheckpointMeta = serde_json::from_slice(&frame.body[..meta_len])?;
        if meta.encoding_version != ENCODING_VERSION {
            return Err(CheckpointError::EncodingMismatch {
                found: meta.encoding_version,
                expected: ENCODING_VERSION,
            });
        }
        // Nets whose inputs or outputs do not fit this build's encoding are unusable whatever
        // the caller expects, so they are rejected here rather than at the first forward pass.
        let ours = NetConfig {
            input_planes: INPUT_PLANES,
            policy_planes: POLICY_SIZE / crate::net::SQUARES,
            ..meta.config
        };
        let fits_encoding = meta.config.input_planes == INPUT_PLANES
            && meta.config.policy_size() == POLICY_SIZE
            && meta.policy_size == POLICY_SIZE;
        if !fits_encoding {
            return Err(architecture_mismatch(meta.config, ours));
        }
        meta.config.validate()?;
        Ok(Self {
            meta,
            weights: frame.body[meta_len..].to_vec(),
        })
    }

    /// Reads and verifies a checkpoint file.
    pub fn read(path: impl AsRef<Path>) -> Result<Self, CheckpointError> {
        let path = path.as_ref();
        let bytes = yari_io::read_regular_file(path, MAX_CHECKPOINT_BYTES).map_err(|source| {
            CheckpointError::Io {
                path: path.to_path_buf(),
                source,
            }
        })?;
        Self::from_bytes(&bytes)
    }

    /// The serialised weights, without header or metadata: two files hold the same network
    /// exactly when these are equal, whatever their notes say.
    pub fn weights(&self) -> &[u8] {
        &self.weights
    }

    /// Builds the net on `device`, first checking it has the `expected` architecture.
    ///
    /// Pass the caller's own config when the net must slot into something sized for it
    /// (training resumption); use [`Checkpoint::into_net_any`] to take whatever the file holds.
    pub fn into_net(self, expected: &NetConfig, device: &Device) -> Result<Net, CheckpointError> {
        if self.meta.config != *expected {
            return Err(architecture_mismatch(self.meta.config, *expected));
        }
        self.into_net_any(device)
    }

    /// Builds the net on `device` with the architecture recorded in the file.
    pub fn into_net_any(self, device: &Device) -> Result<Net, CheckpointError> {
        let mut net = self.meta.config.init(device);
        let mut store = BurnpackStore::from_bytes(Some(Bytes::from_bytes_vec(self.weights)));
        net.load_from(&mut store)
            .map_err(|e| CheckpointError::Weights(e.to_string()))?;
        let tensors = crate::average::collect(&net).map_err(CheckpointError::Weights)?;
        if let Some((tensor, (shape, _))) = tensors
            .into_iter()
            .enumerate()
            .find(|(_, (_, values))| values.iter().any(|v| !v.is_finite()))
        {
            return Err(CheckpointError::NonFinite { tensor, shape });
        }
        Ok(net)
    }
}

/// Serialises a net and its metadata into checkpoint bytes.
pub fn to_bytes(net: &Net, meta: &CheckpointMeta) -> Result<Vec<u8>, CheckpointError> {
    let mut store = BurnpackStore::from_bytes(None);
    net.save_into(&mut store)
        .map_err(|e| CheckpointError::Weights(e.to_string()))?;
    let weights = store
        .get_bytes()
        .map_err(|e| CheckpointError::Weights(e.to_string()))?;
    let meta_json = serde_json::to_vec(meta)?;
    let meta_len = u32::try_from(meta_json.len())
        .ok()
        .filter(|&l| l <= MAX_META_LEN)
        .ok_or_else(|| CheckpointError::Weights("metadata too large".into()))?;
    let mut body = meta_json;
    body.extend_from_slice(&weights);
    let out = FORMAT.encode(meta_len, weights.len() as u64, &body);
    Ok(out)
}

/// Writes a checkpoint atomically: readers see the old file or the complete new one, never a
/// partial write, even if the process dies mid-way (self-play workers poll for new nets).
pub fn save(
    path: impl AsRef<Path>,
    net: &Net,
    meta: &CheckpointMeta,
) -> Result<(), CheckpointError> {
    let path = path.as_ref();
    let bytes = to_bytes(net, meta)?;
    yari_io::write_atomic(path, &bytes).map_err(|e| CheckpointError::Io {
        path: e.path().to_path_buf(),
        source: e.into_io(),
    })
}

/// Reads a checkpoint and builds its net on `device`, checking it has the `expected`
/// architecture and this build's encoding version.
pub fn load(
    path: impl AsRef<Path>,
    expected: &NetConfig,
    device: &Device,
) -> Result<(Net, CheckpointMeta), CheckpointError> {
    let ckpt = Checkpoint::read(path)?;
    let meta = ckpt.meta.clone();
    Ok((ckpt.into_net(expected, device)?, meta))
}

fn architecture_mismatch(found: NetConfig, expected: NetConfig) -> CheckpointError {
    let mut diffs = Vec::new();
    let mut cmp = |name: &str, f: usize, e: usize| {
        if f != e {
            diffs.push(format!("{name} is {f}, expected {e}"));
        }
    };
    cmp("blocks", found.blocks, expected.blocks);
    cmp("channels", found.channels, expected.channels);
    cmp("input_planes", found.input_planes, expected.input_planes);
    cmp("policy_planes", found.policy_planes, expected.policy_planes);
    cmp(
        "value_channels",
        found.value_channels,
        expected.value_channels,
    );
    cmp("value_hidden", found.value_hidden, expected.value_hidden);
    for (name, f, e) in [
        (
            "soft_policy_head",
            found.soft_policy_head,
            expected.soft_policy_head,
        ),
        (
            "short_term_value_head",
            found.short_term_value_head,
            expected.short_term_value_head,
        ),
        (
            "global_pooling",
            found.global_pooling,
            expected.global_pooling,
        ),
    ] {
        if f != e {
            diffs.push(format!("{name} is {f}, expected {e}"));
        }
    }
    CheckpointError::ArchitectureMismatch {
        found: Box::new(found),
        expected: Box::new(expected),
        details: diffs.join(", "),
    }
}
