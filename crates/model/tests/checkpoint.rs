//! Checkpoint round trips and every way a checkpoint is refused.

use burn::module::Module;
use burn::tensor::{Device, Distribution, Tensor};
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
            assert_eq!(found, tiny());
            assert_eq!(e, expected);
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
            Err(CheckpointError::Truncated { expected, actual }) => {
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
        Err(CheckpointError::TrailingData { extra: 4 })
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
    assert!(matches!(flip(0, 0), Err(CheckpointError::BadMagic { .. })));
    assert!(matches!(
        flip(4, 1),
        Err(CheckpointError::UnsupportedFormat { found }) if found == FORMAT_VERSION ^ 2
    ));
    // Metadata, weights and the checksum itself: the checksum catches them.
    for at in [25, bytes.len() / 2, bytes.len() - 10, bytes.len() - 1] {
        for bit in [0, 7] {
            assert!(
                matches!(flip(at, bit), Err(CheckpointError::ChecksumMismatch { .. })),
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
