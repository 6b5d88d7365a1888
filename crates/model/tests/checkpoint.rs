//! Checkpoint round trips and every way a checkpoint is refused.

use burn::module::{Module, ModuleMapper, ModuleVisitor, Param};
use burn::tensor::{Device, Distribution, Tensor, TensorData};
use yari_io::frame::FrameError;
use yari_model::checkpoint::{self, to_bytes, FORMAT_VERSION};
use yari_model::{default_device, Checkpoint, CheckpointError, CheckpointMeta, Net, NetConfig};
use yari_rules::encoding::{ENCODING_VERSION, FILES, INPUT_PLANES, RANKS};

/// Small enough that the exhaustive bit-flip sweep below stays fast.
fn tiny() -> NetConfig {
    NetConfig {
        value_channels: 2,
        value_hidden: 8,
        ..NetConfig::new(1, 8)
    }
}

fn input(device: &Device) -> Tensor<4> {
    Tensor::random(
        [3, INPUT_PLANES, RANKS, FILES],
        Distribution::Uniform(0.0, 1.0),
        device,
    )
}

fn outputs(net: &Net, x: &Tensor<4>) -> (Vec<f32>, Vec<f32>) {
    let (p, v) = net.forward(x.clone());
    (
        p.into_data().try_into_vec::<f32>().unwrap(),
        v.into_data().try_into_vec::<f32>().unwrap(),
    )
}

/// A net whose batch-norm running statistics are no longer the initial 0/1, so a round trip
/// that dropped them would change the outputs.
fn trained_net(config: &NetConfig) -> Net {
    let ad = default_device().autodiff();
    let net = config.init(&ad);
    let x = Tensor::random(
        [4, INPUT_PLANES, RANKS, FILES],
        Distribution::Normal(2.0, 3.0),
        &ad,
    );
    let _ = net.forward(x);
    net.valid()
}

fn valid_bytes() -> Vec<u8> {
    let net = tiny().init(&default_device());
    to_bytes(&net, &CheckpointMeta::new(tiny())).unwrap()
}

#[test]
fn save_then_load_gives_bit_identical_outputs() {
    let device = default_device();
    let config = tiny();
    let net = trained_net(&config);
    let fresh = config.init(&device);
    let x = input(&device);
    let before = outputs(&net, &x);
    assert_ne!(
        before.1,
        outputs(&fresh, &x).1,
        "test needs a net that differs from a fresh one"
    );

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("net.yari");
    let mut meta = CheckpointMeta::new(config);
    meta.step = 1234;
    meta.generation = 7;
    meta.parent = Some("gen6.yari".into());
    checkpoint::save(&path, &net, &meta).unwrap();

    let (loaded, loaded_meta) = checkpoint::load(&path, &config, &device).unwrap();
    assert_eq!(loaded_meta, meta);
    let after = outputs(&loaded, &x);
    let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(&before.0), bits(&after.0));
    assert_eq!(bits(&before.1), bits(&after.1));

    // Only the checkpoint is left in the directory: the temp file was renamed, not copied.
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, vec![std::ffi::OsString::from("net.yari")]);
}

#[test]
fn saving_replaces_an_existing_checkpoint() {
    let device = default_device();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("latest.yari");
    let mut meta = CheckpointMeta::new(tiny());
    checkpoint::save(&path, &tiny().init(&device), &meta).unwrap();
    meta.step = 2;
    checkpoint::save(&path, &tiny().init(&device), &meta).unwrap();
    assert_eq!(Checkpoint::read(&path).unwrap().meta.step, 2);
}

#[test]
fn architecture_mismatch_is_rejected_with_the_differing_fields() {
    let device = default_device();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("net.yari");
    checkpoint::save(&path, &tiny().init(&device), &CheckpointMeta::new(tiny())).unwrap();
    let expected = NetConfig {
        channels: 16,
        ..tiny()
    };
    match checkpoint::load(&path, &expected, &device) {
        Err(CheckpointError::ArchitectureMismatch {
            found,
            expected: e,
            details,
        }) => {
            assert_eq!(*found, tiny());
            assert_eq!(*e, expected);
            assert_eq!(details, "channels is 8, expected 16");
        }
        other => panic!("expected ArchitectureMismatch, got {:?}", other.map(|_| ())),
    }
    // Taking whatever the file holds still works.
    let net = Checkpoint::read(&path)
        .unwrap()
        .into_net_any(&device)
        .unwrap();
    assert_eq!(net.num_params(), tiny().init(&device).num_params());
}

/// Issue 38: a checkpoint whose weights hold a NaN, under a valid checksum, loaded, played and
/// was gated and published. Every float tensor (batch-norm statistics included) is checked.
#[test]
fn non_finite_weights_are_refused_under_a_valid_checksum() {
    use burn::module::{ModuleMapper, Param};
    /// Replaces one float tensor (by visit order) with `value` everywhere.
    struct Poison {
        target: usize,
        seen: usize,
        value: f32,
    }
    impl ModuleMapper for Poison {
        fn map_float<const D: usize>(&mut self, param: Param<Tensor<D>>) -> Param<Tensor<D>> {
            let hit = self.seen == self.target;
            self.seen += 1;
            match hit {
                true => {
                    let value = self.value;
                    param.map(|t| t.zeros_like().add_scalar(value))
                }
                false => param,
            }
        }
    }
    let device = default_device();
    let net = tiny().init(&device);
    let mut count = Poison {
        target: usize::MAX,
        seen: 0,
        value: 0.0,
    };
    let tensors = {
        let _ = net.clone().map(&mut count);
        count.seen
    };
    assert!(tensors > 4, "{tensors} float tensors");
    for (target, value) in [(0, f32::NAN), (tensors - 1, f32::INFINITY), (2, f32::NAN)] {
        let mut poison = Poison {
            target,
            seen: 0,
            value,
        };
        let bad = net.clone().map(&mut poison);
        let bytes = to_bytes(&bad, &CheckpointMeta::new(tiny())).unwrap();
        let ckpt = Checkpoint::from_bytes(&bytes).expect("the checksum is valid");
        match ckpt.into_net_any(&device) {
            Err(CheckpointError::NonFinite { tensor, shape }) => {
                assert_eq!(tensor, target);
                assert!(!shape.is_empty());
            }
            other => panic!(
                "tensor {target}: expected NonFinite, got {:?}",
                other.map(|_| ())
            ),
        }
    }
    // The same network unpoisoned loads.
    let bytes = to_bytes(&net, &CheckpointMeta::new(tiny())).unwrap();
    assert!(Checkpoint::from_bytes(&bytes)
        .unwrap()
        .into_net_any(&device)
        .is_ok());
}

#[test]
fn encoding_version_mismatch_is_rejected() {
    let net = tiny().init(&default_device());
    let mut meta = CheckpointMeta::new(tiny());
    meta.encoding_version = ENCODING_VERSION + 1;
    let bytes = to_bytes(&net, &meta).unwrap();
    match Checkpoint::from_bytes(&bytes) {
        Err(CheckpointError::EncodingMismatch { found, expected }) => {
            assert_eq!(found, ENCODING_VERSION + 1);
            assert_eq!(expected, ENCODING_VERSION);
        }
        other => panic!("expected EncodingMismatch, got {other:?}"),
    }
}

#[test]
fn net_that_does_not_fit_the_encoding_is_rejected() {
    let mut config = tiny();
    config.input_planes = INPUT_PLANES + 2;
    let net = config.init(&default_device());
    let bytes = to_bytes(&net, &CheckpointMeta::new(config)).unwrap();
    match Checkpoint::from_bytes(&bytes) {
        Err(CheckpointError::ArchitectureMismatch { details, .. }) => {
            assert_eq!(
                details,
                format!(
                    "input_planes is {}, expected {INPUT_PLANES}",
                    INPUT_PLANES + 2
                )
            );
        }
        other => panic!("expected ArchitectureMismatch, got {other:?}"),
    }
}

#[test]
fn truncated_files_are_rejected_as_truncated() {
    let bytes = valid_bytes();
    for len in [0, 3, 19, 20, 100, bytes.len() / 2, bytes.len() - 1] {
        match Checkpoint::from_bytes(&bytes[..len]) {
            Err(CheckpointError::Frame(FrameError::Truncated { expected, actual })) => {
                assert_eq!(actual, len as u64);
                assert!(expected > actual);
            }
            other => panic!("length {len}: expected Truncated, got {other:?}"),
        }
    }
}

#[test]
fn trailing_bytes_are_rejected() {
    let mut bytes = valid_bytes();
    bytes.extend_from_slice(b"junk");
    assert!(matches!(
        Checkpoint::from_bytes(&bytes),
        Err(CheckpointError::Frame(FrameError::TrailingData {
            extra: 4
        }))
    ));
}

#[test]
fn flipped_bits_are_rejected() {
    let bytes = valid_bytes();
    assert!(Checkpoint::from_bytes(&bytes).is_ok());
    let flip = |at: usize, bit: u8| {
        let mut b = bytes.clone();
        b[at] ^= 1 << bit;
        Checkpoint::from_bytes(&b)
    };
    // Magic and format version are named as such.
    assert!(matches!(
        flip(0, 0),
        Err(CheckpointError::Frame(FrameError::BadMagic { .. }))
    ));
    assert!(matches!(
        flip(4, 1),
        Err(CheckpointError::Frame(FrameError::UnsupportedVersion { found, .. })) if found == FORMAT_VERSION ^ 2
    ));
    // Metadata, weights and the checksum itself: the checksum catches them.
    for at in [25, bytes.len() / 2, bytes.len() - 10, bytes.len() - 1] {
        for bit in [0, 7] {
            assert!(
                matches!(
                    flip(at, bit),
                    Err(CheckpointError::Frame(FrameError::ChecksumMismatch { .. }))
                ),
                "flip at {at} bit {bit}: {:?}",
                flip(at, bit)
            );
        }
    }
    // Every single-bit flip anywhere is an error, never a panic nor a silent success.
    for at in 0..bytes.len() {
        assert!(flip(at, (at % 8) as u8).is_err(), "flip at {at} accepted");
    }
}

#[test]
fn missing_file_is_an_io_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("absent.yari");
    assert!(matches!(
        Checkpoint::read(&path),
        Err(CheckpointError::Io { path: p, .. }) if p == path
    ));
}

/// `bytes` with its metadata JSON passed through `edit` and header and checksum rebuilt, as a
/// hand-crafted (or maliciously edited) file would be: every framing check passes.
fn with_meta(bytes: &[u8], edit: impl Fn(&str) -> String) -> Vec<u8> {
    let meta_len = u32::from_le_bytes(bytes[8..12].try_into().unwrap()) as usize;
    let meta = std::str::from_utf8(&bytes[20..20 + meta_len]).unwrap();
    let meta = edit(meta);
    let weights = &bytes[20 + meta_len..bytes.len() - 4];
    let mut out = bytes[..8].to_vec();
    out.extend_from_slice(&(meta.len() as u32).to_le_bytes());
    out.extend_from_slice(&(weights.len() as u64).to_le_bytes());
    out.extend_from_slice(meta.as_bytes());
    out.extend_from_slice(weights);
    let crc = crc32fast::hash(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

/// A header naming a net that cannot be built is refused by name, before burn sees it (a
/// zero-channel net once panicked inside burn, a zero-block one loaded).
#[test]
fn impossible_architectures_in_a_valid_file_are_refused_by_name() {
    let bytes = valid_bytes();
    assert!(Checkpoint::from_bytes(&with_meta(&bytes, str::to_string)).is_ok());
    for (from, to, field) in [
        ("\"channels\":8", "\"channels\":0", "channels"),
        ("\"blocks\":1", "\"blocks\":0", "blocks"),
        ("\"channels\":8", "\"channels\":100000", "channels"),
        ("\"blocks\":1", "\"blocks\":100000", "blocks"),
        (
            "\"value_channels\":2",
            "\"value_channels\":0",
            "value_channels",
        ),
        ("\"value_hidden\":8", "\"value_hidden\":0", "value_hidden"),
        (
            "\"value_hidden\":8",
            "\"value_hidden\":18446744073709551615",
            "value_hidden",
        ),
    ] {
        let edited = with_meta(&bytes, |m| {
            assert!(m.contains(from), "{m}");
            m.replace(from, to)
        });
        match Checkpoint::from_bytes(&edited) {
            Err(e @ CheckpointError::InvalidArchitecture(_)) => {
                assert!(e.to_string().contains(field), "{to}: {e}");
            }
            other => panic!("{to}: expected InvalidArchitecture, got {other:?}"),
        }
    }
}

/// Only regular files are read, and only up to a bound: `/dev/zero` once read until memory
/// ran out. The error names the path.
#[cfg(unix)]
#[test]
fn devices_and_directories_are_refused_naming_the_path() {
    let dir = tempfile::tempdir().unwrap();
    for path in [std::path::Path::new("/dev/zero"), dir.path()] {
        match Checkpoint::read(path) {
            Err(e @ CheckpointError::Io { .. }) => {
                let text = e.to_string();
                assert!(text.contains(&path.display().to_string()), "{text}");
                assert!(text.contains("not a regular file"), "{text}");
            }
            other => panic!("{}: expected an I/O error, got {other:?}", path.display()),
        }
    }
}

/// A net with the training-only heads (soft policy, short-term value) keeps them through a
/// checkpoint (their logits come back bit for bit), plays exactly like the same weights
/// without them (play never evaluates them), and the shipped network, written before the
/// heads existed, reads as having neither.
#[test]
fn the_auxiliary_heads_round_trip_and_do_not_change_play() {
    let device = default_device();
    let with = NetConfig {
        soft_policy_head: true,
        short_term_value_head: true,
        ..tiny()
    };
    let net = trained_net(&with);
    let x = input(&device);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("soft.yari");
    checkpoint::save(&path, &net, &CheckpointMeta::new(with)).unwrap();
    let (loaded, meta) = checkpoint::load(&path, &with, &device).unwrap();
    assert!(meta.config.soft_policy_head && meta.config.short_term_value_head);
    let aux = |n: &Net| {
        let heads = n.forward_heads(x.clone(), true);
        let soft = heads.soft_policy.expect("the soft policy head");
        let short = heads.short_term_wdl.expect("the short-term value head");
        assert_eq!(short.dims(), [3, yari_model::net::SHORT_TERM_WDL_SIZE]);
        [soft, short].map(|t| {
            t.into_data()
                .try_into_vec::<f32>()
                .unwrap()
                .into_iter()
                .map(f32::to_bits)
                .collect::<Vec<_>>()
        })
    };
    assert_eq!(aux(&net), aux(&loaded));
    let plain_heads = loaded.forward_heads(x.clone(), false);
    assert!(plain_heads.soft_policy.is_none() && plain_heads.short_term_wdl.is_none());

    // The same weights in a net without the heads (they are the last fields, so their four
    // tensors are the last in visit order): identical policy and value outputs.
    let mut tensors = Floats(Vec::new());
    loaded.visit(&mut tensors);
    let mut tensors = tensors.0;
    tensors.truncate(tensors.len() - 4);
    let plain = tiny().init(&device).map(&mut Fill(tensors.into_iter()));
    assert_eq!(outputs(&plain, &x), outputs(&loaded, &x));

    // Refused under the other architecture, by name.
    let err = checkpoint::load(&path, &tiny(), &device)
        .unwrap_err()
        .to_string();
    for name in ["soft_policy_head", "short_term_value_head"] {
        assert!(
            err.contains(&format!("{name} is true, expected false")),
            "{err}"
        );
    }
    let shipped = Checkpoint::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../data/models/default.yari"
    ))
    .unwrap();
    assert!(!shipped.meta.config.soft_policy_head);
    assert!(!shipped.meta.config.short_term_value_head);
}

/// A net with global pooling keeps it through a checkpoint (outputs bit for bit), the pooling
/// changes what it computes (the same weights with zeroed pooling layers give other outputs),
/// and it is refused under a config without pooling, by name; the shipped network, written
/// before pooling existed, reads as having none.
#[test]
fn global_pooling_round_trips_and_is_refused_under_a_config_without_it() {
    let device = default_device();
    let pooled = NetConfig {
        global_pooling: true,
        ..NetConfig::new(2, 8)
    };
    let net = trained_net(&pooled);
    let x = input(&device);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("pooled.yari");
    checkpoint::save(&path, &net, &CheckpointMeta::new(pooled)).unwrap();
    let (loaded, meta) = checkpoint::load(&path, &pooled, &device).unwrap();
    assert!(meta.config.global_pooling);
    let bits =
        |(p, v): (Vec<f32>, Vec<f32>)| p.into_iter().chain(v).map(f32::to_bits).collect::<Vec<_>>();
    assert_eq!(bits(outputs(&net, &x)), bits(outputs(&loaded, &x)));
    // Each block's pooling layer is a `[8, 8]` weight and an `[8]` bias after its batch
    // norms; zeroing the weights (shape `[8, 8]`: nothing else has it) changes the outputs.
    let mut zeroed = ZeroShape {
        shape: vec![8, 8],
        hits: 0,
    };
    let unpooled = loaded.clone().map(&mut zeroed);
    assert_eq!(zeroed.hits, 2, "one pooling weight per block");
    assert_ne!(outputs(&unpooled, &x), outputs(&loaded, &x));

    let err = checkpoint::load(&path, &NetConfig::new(2, 8), &device)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("global_pooling is true, expected false"),
        "{err}"
    );
    let shipped = Checkpoint::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../data/models/default.yari"
    ))
    .unwrap();
    assert!(!shipped.meta.config.global_pooling);
}

/// Zeroes every float tensor of one shape.
struct ZeroShape {
    shape: Vec<usize>,
    hits: usize,
}

impl ModuleMapper for ZeroShape {
    fn map_float<const D: usize>(&mut self, param: Param<Tensor<D>>) -> Param<Tensor<D>> {
        if param.val().dims().as_slice() != self.shape.as_slice() {
            return param;
        }
        self.hits += 1;
        let (id, tensor, mapper) = param.consume();
        Param::from_mapped_value(id, tensor.zeros_like(), mapper)
    }
}

/// Every float tensor of a module, in visit order.
struct Floats(Vec<Vec<f32>>);

impl ModuleVisitor for Floats {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        self.0
            .push(param.val().into_data().try_into_vec::<f32>().unwrap());
    }
}

/// Replaces a module's float tensors, in visit order, with the given values.
struct Fill(std::vec::IntoIter<Vec<f32>>);

impl ModuleMapper for Fill {
    fn map_float<const D: usize>(&mut self, param: Param<Tensor<D>>) -> Param<Tensor<D>> {
        let (id, tensor, mapper) = param.consume();
        let (shape, device) = (tensor.shape(), tensor.device());
        let values = self.0.next().expect("a tensor for every parameter");
        let tensor = Tensor::<D>::from_data(TensorData::new(values, shape), &device);
        Param::from_mapped_value(id, tensor, mapper)
    }
}
