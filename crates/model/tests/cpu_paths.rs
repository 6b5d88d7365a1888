//! The bf16 forward pass against the f32 one on the shipped network over every oracle
//! position: policies over the legal moves (KL divergence) and values (W - L) must agree within
//! the tolerances below, and a slightly perturbed network must fail the same check.

use burn::module::{Module, ModuleMapper, Param};
use burn::tensor::{Tensor, TensorData};
use serde_json::Value;
use yari_model::cpu::CpuPath;
use yari_model::{default_device, CpuNet, Net, NetConfig, NetEvaluator};
use yari_rules::encoding::{encode_batch, index_of};
use yari_rules::Position;

/// Mean KL(f32 || bf16) of the policy over legal moves, in nats, that the test allows.
/// Measured on the shipped net over the 3,869 oracle positions with legal moves: mean KL
/// 1.06e-4, max KL 1.3e-3, max |delta value| 0.015, most likely move changed at 23 positions
/// (near-ties). The bounds leave about 2x of headroom for other CPUs' rounding.
const MEAN_KL: f64 = 2.5e-4;
/// Largest KL at any single position.
const MAX_KL: f64 = 3e-3;
/// Largest |value_f32 - value_bf16| (value = P(win) - P(loss), in [-1, 1]).
const MAX_DVALUE: f64 = 0.03;

fn oracle_positions() -> Vec<Position> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../rules/tests/data/dev_positions.jsonl"
    );
    let text = std::fs::read_to_string(path).expect("oracle positions");
    let out: Vec<Position> = text
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).expect("a JSON line");
            Position::from_fen(v["fen"].as_str().expect("fen")).expect("a legal FEN")
        })
        .filter(|p| !p.legal_moves().is_empty())
        .collect();
    assert!(out.len() > 3800, "only {} positions", out.len());
    out
}

fn shipped() -> (Net, NetConfig) {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../data/models/default.yari"
    );
    let eval = NetEvaluator::from_checkpoint(path, default_device()).expect("shipped network");
    (eval.net().clone(), *eval.config())
}

/// Policy over the legal moves and value, per position.
fn evaluate(net: &CpuNet, positions: &[Position]) -> Vec<(Vec<f64>, f64)> {
    let mut out = Vec::new();
    for chunk in positions.chunks(64) {
        let refs: Vec<&Position> = chunk.iter().collect();
        let (policy, wdl) = net.forward(&encode_batch(&refs), refs.len());
        let per = policy.len() / refs.len();
        for (i, pos) in refs.iter().enumerate() {
            let logits: Vec<f64> = pos
                .legal_moves()
                .iter()
                .map(|&m| policy[i * per + index_of(pos, m)] as f64)
                .collect();
            let w = softmax(
                &wdl[3 * i..3 * i + 3]
                    .iter()
                    .map(|&v| v as f64)
                    .collect::<Vec<_>>(),
            );
            out.push((softmax(&logits), w[0] - w[2]));
        }
    }
    out
}

fn softmax(v: &[f64]) -> Vec<f64> {
    let max = v.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let e: Vec<f64> = v.iter().map(|x| (x - max).exp()).collect();
    let s: f64 = e.iter().sum();
    e.iter().map(|x| x / s).collect()
}

#[derive(Debug)]
#[allow(dead_code)] // top1_changed and positions are read through Debug, in the messages.
struct Agreement {
    mean_kl: f64,
    max_kl: f64,
    max_dvalue: f64,
    /// Positions whose most likely move differs.
    top1_changed: usize,
    positions: usize,
}

impl Agreement {
    fn within_tolerance(&self) -> bool {
        self.mean_kl <= MEAN_KL && self.max_kl <= MAX_KL && self.max_dvalue <= MAX_DVALUE
    }
}

fn agreement(reference: &CpuNet, other: &CpuNet, positions: &[Position]) -> Agreement {
    let a = evaluate(reference, positions);
    let b = evaluate(other, positions);
    let (mut sum_kl, mut max_kl, mut max_dv, mut top1) = (0.0, 0.0f64, 0.0f64, 0);
    let argmax = |p: &[f64]| {
        (0..p.len())
            .max_by(|&i, &j| p[i].total_cmp(&p[j]))
            .expect("a legal move")
    };
    for ((pa, va), (pb, vb)) in a.iter().zip(&b) {
        let kl: f64 = pa
            .iter()
            .zip(pb)
            .map(|(&p, &q)| if p > 0.0 { p * (p / q).ln() } else { 0.0 })
            .sum();
        sum_kl += kl;
        max_kl = max_kl.max(kl);
        max_dv = max_dv.max((va - vb).abs());
        top1 += usize::from(argmax(pa) != argmax(pb));
    }
    Agreement {
        mean_kl: sum_kl / a.len() as f64,
        max_kl,
        max_dvalue: max_dv,
        top1_changed: top1,
        positions: a.len(),
    }
}

#[test]
fn bf16_path_agrees_with_f32_on_the_shipped_network() {
    let (net, config) = shipped();
    let f32_net = CpuNet::from_net_with_path(&net, &config, CpuPath::F32).expect("f32 path");
    assert_eq!(f32_net.path(), CpuPath::F32);
    if !CpuPath::bf16_supported() {
        // Without the CPU feature the fast path must refuse, and detection must fall back.
        assert!(CpuNet::from_net_with_path(&net, &config, CpuPath::Bf16).is_err());
        assert_eq!(CpuPath::best_supported(), CpuPath::F32);
        return;
    }
    let fast = CpuNet::from_net_with_path(&net, &config, CpuPath::Bf16).expect("bf16 path");
    assert_eq!(fast.path(), CpuPath::Bf16);
    let positions = oracle_positions();
    let a = agreement(&f32_net, &fast, &positions);
    eprintln!("f32 vs bf16 over the oracle positions: {a:?}");
    assert!(a.within_tolerance(), "bf16 disagrees with f32: {a:?}");
}

/// Adds 0.1 to the first WDL bias and to the bias of policy plane 0: the only parameters of
/// the shipped net's shape with 3 and 62 values.
struct Bump {
    hits: usize,
}

impl ModuleMapper for Bump {
    fn map_float<const D: usize>(&mut self, param: Param<Tensor<D>>) -> Param<Tensor<D>> {
        let t = param.val();
        let dims = t.dims();
        let at = match dims.as_slice() {
            [3] => 0,
            [62] => 0,
            _ => return param,
        };
        self.hits += 1;
        let mut delta = vec![0.0f32; dims[0]];
        delta[at] = 0.1;
        let delta = Tensor::<D>::from_data(TensorData::new(delta, dims), &t.device());
        Param::from_tensor(t + delta)
    }
}

/// The same check fails for a network whose win logit moved by 0.1 and one policy plane's
/// logits by 0.1 (both on the f32 path, so only the perturbation differs): the
/// tolerances are tight enough to notice a real change.
#[test]
fn the_agreement_check_fails_on_a_perturbed_network() {
    let (net, config) = shipped();
    let reference = CpuNet::from_net_with_path(&net, &config, CpuPath::F32).expect("f32 path");
    let mut bump = Bump { hits: 0 };
    let perturbed = net.clone().map(&mut bump);
    assert_eq!(bump.hits, 2, "the two biases");
    let other =
        CpuNet::from_net_with_path(&perturbed, &config, CpuPath::F32).expect("perturbed net");
    let a = agreement(&reference, &other, &oracle_positions());
    eprintln!("f32 vs perturbed: {a:?}");
    assert!(!a.within_tolerance(), "a perturbed net passed: {a:?}");
}

#[test]
fn the_path_names_parse_and_unknown_ones_are_refused() {
    assert_eq!("f32".parse::<CpuPath>().unwrap(), CpuPath::F32);
    assert_eq!("bf16".parse::<CpuPath>().is_ok(), CpuPath::bf16_supported());
    let err = "fp8".parse::<CpuPath>().unwrap_err().to_string();
    assert!(
        err.contains("\"fp8\"") && err.contains("f32 or bf16"),
        "{err}"
    );
}

/// Batch size does not change a position's result on the bf16 path either (blocks of 8 are
/// cut differently for 1, 5 and 13 positions).
#[test]
fn bf16_results_do_not_depend_on_the_batch() {
    let (net, config) = shipped();
    let cpu = CpuNet::from_net_with_path(&net, &config, CpuPath::best_supported()).unwrap();
    let positions = oracle_positions();
    let refs: Vec<&Position> = positions[..13].iter().collect();
    let (all_p, all_w) = cpu.forward(&encode_batch(&refs), 13);
    let per = all_p.len() / 13;
    for n in [1, 5] {
        let (p, w) = cpu.forward(&encode_batch(&refs[..n]), n);
        // The value head's f32 gemm may sum in another order for another row count.
        let close = |a: &[f32], b: &[f32]| a.iter().zip(b).all(|(x, y)| (x - y).abs() <= 1e-5);
        assert!(close(&p, &all_p[..n * per]), "policy of {n} positions");
        assert!(close(&w, &all_w[..n * 3]), "wdl of {n} positions");
    }
}
