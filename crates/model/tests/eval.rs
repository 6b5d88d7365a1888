//! The evaluation interface: legal-move masking, probabilities, batching.

use yari_model::{default_device, NetConfig, NetEvaluator};
use yari_rules::encoding::{index_of, move_at, POLICY_SIZE};
use yari_rules::Position;
use yari_search::{Evaluator, UniformEvaluator};

/// Positions with different move counts, reached by playing a few moves from the start.
fn positions() -> Vec<Position> {
    let mut out = vec![Position::startpos()];
    let mut pos = Position::startpos();
    for i in 0..12 {
        let moves = pos.legal_moves();
        if moves.is_empty() {
            break;
        }
        let mv = moves[(i * 7) % moves.len()];
        pos.play(mv);
        out.push(pos.clone());
    }
    out
}

fn net_evaluator() -> NetEvaluator {
    let device = default_device();
    let config = NetConfig {
        value_channels: 4,
        value_hidden: 16,
        ..NetConfig::new(1, 8)
    };
    NetEvaluator::new(config.init(&device), config, device)
}

#[test]
fn net_priors_are_a_distribution_over_the_legal_moves_in_order() {
    let eval = net_evaluator();
    let positions = positions();
    let refs: Vec<&Position> = positions.iter().collect();
    let evals = eval.evaluate(&refs);
    assert_eq!(evals.len(), positions.len());
    for (pos, e) in positions.iter().zip(&evals) {
        let legal = pos.legal_moves();
        let moves: Vec<_> = e.priors.iter().map(|&(m, _)| m).collect();
        assert_eq!(moves, legal.to_vec(), "priors follow legal_moves() order");
        let sum: f32 = e.priors.iter().map(|&(_, p)| p).sum();
        assert!((sum - 1.0).abs() < 1e-4, "priors sum to {sum}");
        assert!(e.priors.iter().all(|&(_, p)| p > 0.0 && p.is_finite()));
        let wdl_sum: f32 = e.wdl.iter().sum();
        assert!((wdl_sum - 1.0).abs() < 1e-5);
        assert!(e.value().abs() <= 1.0);
    }
}

/// The priors are exactly the softmax of the legal moves' own logits: the logits of illegal
/// moves (most of the 3906 outputs) must have no influence at all.
#[test]
fn illegal_moves_get_no_probability_mass() {
    let eval = net_evaluator();
    let positions = positions();
    let refs: Vec<&Position> = positions.iter().collect();
    let (logits, _) = eval.logits(&refs);
    let evals = eval.evaluate(&refs);
    for (i, (pos, e)) in positions.iter().zip(&evals).enumerate() {
        let row = &logits[i * POLICY_SIZE..(i + 1) * POLICY_SIZE];
        let legal: Vec<usize> = pos
            .legal_moves()
            .iter()
            .map(|&m| index_of(pos, m))
            .collect();
        // Legal indices are distinct and map back to their moves.
        for (&idx, &(mv, _)) in legal.iter().zip(&e.priors) {
            assert_eq!(move_at(pos, idx), Some(mv));
        }
        let max = legal
            .iter()
            .map(|&j| row[j])
            .fold(f32::NEG_INFINITY, f32::max);
        let z: f64 = legal.iter().map(|&j| f64::from(row[j] - max).exp()).sum();
        for (&j, &(_, p)) in legal.iter().zip(&e.priors) {
            let expected = (f64::from(row[j] - max).exp() / z) as f32;
            assert!((p - expected).abs() < 1e-5, "prior {p} vs {expected}");
        }
        // A softmax over all 3906 outputs would give the legal moves less than all the mass.
        let gmax = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        let all: f64 = row.iter().map(|&x| f64::from(x - gmax).exp()).sum();
        let legal_mass: f64 = legal.iter().map(|&j| f64::from(row[j] - gmax).exp()).sum();
        assert!(legal_mass / all < 0.5, "test net is not discriminating");
        assert!(
            (0..POLICY_SIZE)
                .filter(|j| move_at(pos, *j).is_some())
                .count()
                == legal.len(),
            "every index outside the legal set decodes to no legal move"
        );
    }
}

#[test]
fn batching_does_not_change_results() {
    let eval = net_evaluator();
    let positions = positions();
    let refs: Vec<&Position> = positions.iter().collect();
    let batched = eval.evaluate(&refs);
    for (pos, b) in refs.iter().zip(&batched) {
        let single = eval.evaluate(&[pos]);
        assert_eq!(single.len(), 1);
        assert_eq!(single[0].priors.len(), b.priors.len());
        for (s, t) in single[0].priors.iter().zip(&b.priors) {
            assert_eq!(s.0, t.0);
            assert!((s.1 - t.1).abs() < 1e-5);
        }
        for k in 0..3 {
            assert!((single[0].wdl[k] - b.wdl[k]).abs() < 1e-5);
        }
    }
    assert!(eval.evaluate(&[]).is_empty());
}

#[test]
fn uniform_evaluator_is_uniform_and_drawish() {
    let positions = positions();
    let refs: Vec<&Position> = positions.iter().collect();
    let evals = UniformEvaluator.evaluate(&refs);
    for (pos, e) in positions.iter().zip(&evals) {
        let n = pos.legal_moves().len();
        assert_eq!(e.priors.len(), n);
        for &(_, p) in &e.priors {
            assert!((p - 1.0 / n as f32).abs() < 1e-7);
        }
        assert_eq!(e.wdl, [0.0, 1.0, 0.0]);
    }
}

#[test]
fn evaluator_loaded_from_a_checkpoint_matches_the_original() {
    let original = net_evaluator();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("net.yari");
    let meta = yari_model::CheckpointMeta::new(*original.config());
    yari_model::checkpoint::save(&path, original.net(), &meta).unwrap();
    let loaded = NetEvaluator::from_checkpoint(&path, default_device()).unwrap();
    let positions = positions();
    let refs: Vec<&Position> = positions.iter().collect();
    assert_eq!(original.evaluate(&refs), loaded.evaluate(&refs));
}

/// Evaluators are shared across search threads.
#[test]
fn evaluators_are_send_and_sync() {
    fn check<T: Send + Sync>() {}
    check::<NetEvaluator>();
    check::<UniformEvaluator>();
    let boxed: Box<dyn Evaluator> = Box::new(net_evaluator());
    assert_eq!(boxed.evaluate(&[&Position::startpos()]).len(), 1);
}
