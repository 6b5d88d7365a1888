//! The CPU forward pass computes what burn's does: on the shipped (trained) network and on
//! small random nets whose batch norms have non-trivial statistics.

use burn::module::Module;
use burn::tensor::{Distribution, Tensor};
use yari_model::cpu::CpuPath;
use yari_model::{default_device, BurnEvaluator, CpuNet, Net, NetConfig, NetEvaluator};
use yari_rules::encoding::{encode_batch, FILES, INPUT_PLANES, RANKS};
use yari_rules::Position;

/// Positions with pieces in hand and promoted pieces: a game of pseudo-random legal moves,
/// preferring captures, sampled every few plies.
fn positions() -> Vec<Position> {
    let mut out = vec![Position::startpos()];
    let mut pos = Position::startpos();
    for ply in 0..120usize {
        let moves = pos.legal_moves();
        if moves.is_empty() || pos.outcome().is_some() {
            break;
        }
        let captures: Vec<_> = moves
            .iter()
            .copied()
            .filter(|m| m.to_string().contains('x') || pos.piece_at(m.to()).is_some())
            .collect();
        let pool = if captures.is_empty() {
            moves.to_vec()
        } else {
            captures
        };
        pos.play(pool[(ply * 7919) % pool.len()]);
        if ply % 6 == 5 {
            out.push(pos.clone());
        }
    }
    assert!(out.len() >= 8, "only {} positions", out.len());
    out
}

fn assert_close(a: &[f32], b: &[f32], tolerance: f32, what: &str) {
    assert_eq!(a.len(), b.len(), "{what}: lengths");
    let scale = b.iter().fold(1.0f32, |m, v| m.max(v.abs()));
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        assert!(
            (x - y).abs() <= tolerance * scale,
            "{what}[{i}]: cpu {x} vs burn {y} (scale {scale})"
        );
    }
}

/// Largest difference between the bf16 path's logits and burn's, relative to the largest
/// logit: bf16 keeps 8 bits of mantissa (relative rounding 2^-9) in every weight and
/// activation. Measured: largest absolute difference 0.11 on the shipped net's logits and
/// 5e-4 on the small random nets, far inside this bound relative to their scales;
/// `tests/cpu_paths.rs` bounds what matters, the policies and values.
const BF16_TOLERANCE: f32 = 3e-2;

fn compare(net: Net, config: NetConfig, positions: &[Position]) {
    let device = default_device();
    let refs: Vec<&Position> = positions.iter().collect();
    let cpu = NetEvaluator::new(net.clone(), config, device.clone());
    assert!(cpu.uses_cpu_forward(), "the default device is a CPU one");
    let burn = NetEvaluator::Burn(Box::new(BurnEvaluator::new(net.clone(), config, device)));
    assert!(!burn.uses_cpu_forward());
    let (bp, bw) = burn.logits(&refs);
    let input = encode_batch(&refs);
    let mut paths = vec![(CpuPath::F32, 1e-4)];
    if CpuPath::bf16_supported() {
        paths.push((CpuPath::Bf16, BF16_TOLERANCE));
    }
    for (path, tolerance) in paths {
        let cpu = CpuNet::from_net_with_path(&net, &config, path).expect("fold");
        let (cp, cw) = cpu.forward(&input, refs.len());
        let worst = cp
            .iter()
            .zip(&bp)
            .chain(cw.iter().zip(&bw))
            .map(|(x, y)| (x - y).abs())
            .fold(0.0f32, f32::max);
        eprintln!("{path}: largest |cpu - burn| {worst}");
        assert_close(&cp, &bp, tolerance, &format!("{path} policy logits"));
        assert_close(&cw, &bw, tolerance, &format!("{path} wdl logits"));
        // Batching does not change a position's result.
        let (one_p, one_w) = cpu.forward(&encode_batch(&refs[3..4]), 1);
        let n = one_p.len();
        assert_close(&one_p, &cp[3 * n..4 * n], 1e-5, "policy of one position");
        assert_close(&one_w, &cw[9..12], 1e-5, "wdl of one position");
    }
    // The evaluator runs the detected path.
    let (ep, _) = cpu.logits(&refs);
    assert_eq!(ep.len(), bp.len());
}

#[test]
fn matches_burn_on_the_shipped_network() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../data/models/default.yari"
    );
    let eval = NetEvaluator::from_checkpoint(path, default_device()).expect("shipped network");
    let config = *eval.config();
    compare(eval.net().clone(), config, &positions());
}

/// A net after a few training-mode forward passes: its batch-norm running statistics have
/// moved away from (0, 1), so the folding is exercised, with odd sizes throughout.
#[test]
fn matches_burn_on_random_nets_with_batch_statistics() {
    for (blocks, channels, value_channels, hidden, global_pooling) in [
        (1, 8, 4, 16, false),
        (2, 12, 3, 10, false),
        (0, 5, 2, 7, false),
        (2, 12, 3, 10, true),
        (3, 40, 4, 16, true),
    ] {
        let config = NetConfig {
            value_channels,
            value_hidden: hidden,
            global_pooling,
            ..NetConfig::new(blocks, channels)
        };
        let train_device = default_device().autodiff();
        let net = config.init(&train_device);
        for _ in 0..3 {
            let x = Tensor::<4>::random(
                [6, INPUT_PLANES, RANKS, FILES],
                Distribution::Normal(0.5, 2.0),
                &train_device,
            );
            let _ = net.forward(x);
        }
        compare(net.valid(), config, &positions());
    }
}

#[test]
fn rejects_an_input_of_the_wrong_size_by_panicking_not_misreading() {
    let config = NetConfig::new(1, 4);
    let net = config.init(&default_device());
    let cpu = CpuNet::from_net(&net, &config).expect("fold");
    let pos = Position::startpos();
    let input = encode_batch(&[&pos]);
    let (p, w) = cpu.forward(&input, 1);
    assert_eq!(p.len(), config.policy_size());
    assert_eq!(w.len(), 3);
    let result = std::panic::catch_unwind(|| cpu.forward(&input[1..], 1));
    assert!(result.is_err());
}
