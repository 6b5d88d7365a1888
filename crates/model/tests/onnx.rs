//! The ONNX export run in ONNX Runtime (`scripts/onnx-check.py`, Python `onnxruntime`) against
//! the CPU forward pass on oracle positions: the logits must agree within the stated tolerance,
//! and the export of a network with one weight moved must not.

use std::path::{Path, PathBuf};
use std::process::Command;

use burn::module::{Module, ModuleMapper, Param};
use burn::tensor::{Distribution, Tensor, TensorData};
use serde_json::Value;
use yari_model::cpu::CpuPath;
use yari_model::{
    default_device, Checkpoint, CheckpointMeta, CpuNet, Net, NetConfig, NetEvaluator,
};
use yari_rules::encoding::{encode_batch, FILES, INPUT_PLANES, RANKS};
use yari_rules::Position;

/// Positions compared (the first oracle positions with legal moves).
const POSITIONS: usize = 256;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn positions() -> Vec<Position> {
    let text = std::fs::read_to_string(root().join("crates/rules/tests/data/dev_positions.jsonl"))
        .expect("oracle positions");
    let out: Vec<Position> = text
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).expect("a JSON line");
            Position::from_fen(v["fen"].as_str().expect("fen")).expect("a legal FEN")
        })
        .filter(|p| !p.legal_moves().is_empty())
        .take(POSITIONS)
        .collect();
    assert_eq!(out.len(), POSITIONS);
    out
}

fn write_f32(path: &Path, values: &[f32]) {
    let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    std::fs::write(path, bytes).unwrap();
}

/// Adds 0.1 to the first win/draw/loss bias (the only parameter of 3 values).
struct Bump(usize);

impl ModuleMapper for Bump {
    fn map_float<const D: usize>(&mut self, param: Param<Tensor<D>>) -> Param<Tensor<D>> {
        let t = param.val();
        let dims = t.dims();
        if dims.as_slice() != [3] {
            return param;
        }
        self.0 += 1;
        let delta =
            Tensor::<D>::from_data(TensorData::new(vec![0.1f32, 0.0, 0.0], dims), &t.device());
        Param::from_tensor(t + delta)
    }
}

/// Runs the checker on `model` against the reference outputs in `dir`; its output and status.
fn check(model: &Path, dir: &Path) -> (bool, String) {
    let python = std::env::var_os("YARI_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join(".venv/bin/python"));
    let out = Command::new(&python)
        .arg(root().join("scripts/onnx-check.py"))
        .arg(model)
        .arg(dir)
        .arg(POSITIONS.to_string())
        .output()
        .unwrap_or_else(|e| {
            panic!(
                "{}: {e} (python3 -m venv .venv && .venv/bin/pip install onnxruntime)",
                python.display()
            )
        });
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

/// Writes the f32 CPU forward pass's outputs on the oracle positions and `net`'s ONNX export
/// into `dir`, and checks that ONNX Runtime agrees with them.
fn export_and_check(net: &Net, meta: &CheckpointMeta, dir: &Path) {
    let reference = CpuNet::from_net_with_path(net, &meta.config, CpuPath::F32).expect("f32 path");
    let positions = positions();
    let refs: Vec<&Position> = positions.iter().collect();
    let planes = encode_batch(&refs);
    let (policy, wdl) = reference.forward(&planes, refs.len());
    write_f32(&dir.join("planes.f32"), &planes);
    write_f32(&dir.join("policy.f32"), &policy);
    write_f32(&dir.join("wdl.f32"), &wdl);

    let model = dir.join("net.onnx");
    std::fs::write(&model, yari_model::onnx::to_onnx(net, meta).unwrap()).unwrap();
    let (ok, text) = check(&model, dir);
    println!("{text}");
    assert!(
        ok,
        "ONNX Runtime disagrees with the CPU forward pass:\n{text}"
    );
}

#[test]
#[ignore = "needs Python's onnxruntime: .ci/run installs it into .venv and runs this test"]
fn the_onnx_export_agrees_with_the_cpu_forward_pass_in_onnx_runtime() {
    let path = root().join("data/models/default.yari");
    let meta = Checkpoint::read(&path).expect("shipped network").meta;
    let eval = NetEvaluator::from_checkpoint(&path, default_device()).expect("shipped network");
    let net: Net = eval.net().clone();
    let dir = tempfile::tempdir().unwrap();
    export_and_check(&net, &meta, dir.path());

    let mut bump = Bump(0);
    let perturbed = net.map(&mut bump);
    assert_eq!(bump.0, 1, "one bias moved");
    let moved = dir.path().join("moved.onnx");
    std::fs::write(
        &moved,
        yari_model::onnx::to_onnx(&perturbed, &meta).unwrap(),
    )
    .unwrap();
    let (ok, text) = check(&moved, dir.path());
    println!("{text}");
    assert!(
        !ok,
        "a network with a moved weight passed the check:\n{text}"
    );
}

/// A net with global pooling (random weights, batch-norm statistics moved by a few training
/// forward passes): its export, with GlobalAveragePool and a broadcast Add in each block,
/// computes what the CPU forward pass does.
#[test]
#[ignore = "needs Python's onnxruntime: .ci/run installs it into .venv and runs this test"]
fn the_onnx_export_of_a_net_with_global_pooling_agrees_in_onnx_runtime() {
    let config = NetConfig {
        global_pooling: true,
        ..NetConfig::new(2, 16)
    };
    let device = default_device().autodiff();
    let net = config.init(&device);
    for _ in 0..3 {
        let x = Tensor::<4>::random(
            [6, INPUT_PLANES, RANKS, FILES],
            Distribution::Normal(0.5, 2.0),
            &device,
        );
        let _ = net.forward(x);
    }
    let dir = tempfile::tempdir().unwrap();
    export_and_check(&net.valid(), &CheckpointMeta::new(config), dir.path());
}
