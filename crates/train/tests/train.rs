//! End-to-end behaviour of the trainer on small nets: learning, resumption, refusal of a
//! foreign architecture, divergence handling, plots.

use std::path::{Path, PathBuf};

use burn::module::{Module, ModuleVisitor, Param};
use burn::tensor::Tensor;
use yari_model::checkpoint::{self, Checkpoint, CheckpointMeta};
use yari_model::{default_device, NetConfig};
use yari_search::UniformEvaluator;
use yari_selfplay::{run_selfplay, write_shard, RunOptions, SelfplayConfig, ShardWriter};
use yari_train::plot::{plot_run, RunRatings};
use yari_train::{
    random_games, read_metrics, OptimizerKind, StepMetrics, TrainConfig, TrainError, TrainPath,
    Trainer,
};

/// A config for tiny nets and tiny data, so each test takes seconds on two cores.
fn small_config(net: NetConfig) -> TrainConfig {
    let mut c = TrainConfig {
        net,
        batch_size: 16,
        checkpoint_interval: 3,
        ..TrainConfig::default()
    };
    c.window.min_positions = 1;
    c.lr.warmup_steps = 2;
    // The default net's short-term value head is on; these nets say for themselves.
    if !net.short_term_value_head {
        c.short_term_value_weight = 0.0;
    }
    // The targets and schedule these tests were written for (the default run's are
    // search-value and surprise weighted, with the lr over the run's progress).
    c.lr.schedule = yari_train::LrScheduleKind::Constant;
    c.window.search_value_weight = 0.0;
    c.window.surprise_weight = 0.0;
    c
}

fn write_random_games(run_dir: &Path, games: usize, seed: u64) {
    let dir = run_dir.join("games");
    std::fs::create_dir_all(&dir).unwrap();
    write_shard(
        dir.join("random-00000.yshard"),
        &random_games(games, 40, seed),
    )
    .unwrap();
}

/// Every float parameter and buffer of the checkpoint's net, flattened in visiting order.
fn weights_of(path: &Path) -> Vec<f32> {
    struct Collect(Vec<f32>);
    impl ModuleVisitor for Collect {
        fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
            self.0
                .extend(param.val().into_data().try_into_vec::<f32>().unwrap());
        }
    }
    let net = Checkpoint::read(path)
        .unwrap()
        .into_net_any(&default_device())
        .unwrap();
    let mut c = Collect(Vec::new());
    net.visit(&mut c);
    c.0
}

/// The L2 norm of `a - b`.
fn l2_distance(a: &[f32], b: &[f32]) -> f64 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .map(|(x, y)| f64::from(x - y).powi(2))
        .sum::<f64>()
        .sqrt()
}

fn max_abs_diff(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f32::max)
}

/// The loop learns: on a small fixed set of self-play positions (uniform-evaluator searches,
/// written as shards by the self-play crate) the total loss falls by at least 80%. Also checks
/// the metrics log and the plots of that run.
#[test]
fn overfits_a_small_set_of_selfplay_positions() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path();
    let sp = SelfplayConfig {
        full_simulations: 16,
        cheap_simulations: 8,
        full_search_fraction: 1.0,
        ply_cap: 24,
        concurrent_games: 4,
        games_per_shard: 2,
        seed: 7,
        ..SelfplayConfig::default()
    };
    let mut writer = ShardWriter::new(run.join("games"), "gen0000", sp.games_per_shard).unwrap();
    run_selfplay(&UniformEvaluator, &sp, 4, RunOptions::default(), |g| {
        writer.push(g)
    })
    .unwrap();
    writer.finish().unwrap();

    let mut config = small_config(NetConfig::new(1, 16));
    config.optimizer = OptimizerKind::AdamW;
    config.lr.lr = 3e-3;
    config.lr.warmup_steps = 10;
    config.weight_decay = 0.0;
    config.batch_size = 32;
    config.checkpoint_interval = 1000;
    let mut trainer = Trainer::open(run, config).unwrap();
    let summary = trainer.train_steps(300, false).unwrap();
    assert_eq!(summary.last_step, 300);
    assert!(summary.window > 50, "window {}", summary.window);

    let metrics = read_metrics(&run.join("metrics.jsonl")).unwrap();
    assert_eq!(metrics.len(), 300);
    let mean =
        |ms: &[yari_train::StepMetrics]| ms.iter().map(|m| m.loss).sum::<f64>() / ms.len() as f64;
    let first = mean(&metrics[..5]);
    let last = mean(&metrics[metrics.len() - 20..]);
    assert!(
        last < 0.2 * first,
        "total loss fell only from {first:.3} to {last:.3}"
    );
    assert!(metrics
        .iter()
        .all(|m| m.samples_per_s > 0.0 && m.grad_norm.is_finite()));

    // The losses plot from the metrics (the rating panel is the loop's: no ratings here).
    let files = plot_run(run, &RunRatings::default()).unwrap();
    assert_eq!(files.len(), 1);
    for f in &files {
        let bytes = std::fs::read(f).unwrap();
        assert!(
            bytes.len() > 1000,
            "{} is {} bytes",
            f.display(),
            bytes.len()
        );
        assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
    }
    if let Ok(keep) = std::env::var("YARI_KEEP_PLOTS") {
        for f in &files {
            std::fs::copy(f, Path::new(&keep).join(f.file_name().unwrap())).unwrap();
        }
    }
}

/// A 1x8 net's initial checkpoint in `dir` and a small config for it with `optimizer`, a
/// learning rate of 0.01 and `seed`: the set-up of the resume tests.
fn resumable_setup(dir: &Path, optimizer: OptimizerKind, seed: u64) -> (PathBuf, TrainConfig) {
    let (init, mut config) = initial_checkpoint(dir, NetConfig::new(1, 8));
    config.optimizer = optimizer;
    config.seed = seed;
    (init, config)
}

/// A fresh net of `net` saved as `dir/init.ckpt`, and a small config for it with a learning
/// rate of 0.01.
fn initial_checkpoint(dir: &Path, net: NetConfig) -> (PathBuf, TrainConfig) {
    let init = dir.join("init.ckpt");
    checkpoint::save(
        &init,
        &net.init(&default_device()),
        &CheckpointMeta::new(net),
    )
    .unwrap();
    let mut config = small_config(net);
    config.lr.lr = 0.01;
    (init, config)
}

/// A run killed after a checkpoint and resumed ends at the same step with the same weights as
/// an uninterrupted run with the same seed: weights, optimizer state (SGD momentum, AdamW
/// moments and step counts) and the sampler position all survive.
#[test]
fn resume_matches_an_uninterrupted_run() {
    for optimizer in [OptimizerKind::Sgd, OptimizerKind::AdamW] {
        let dir = tempfile::tempdir().unwrap();
        let (init, config) = resumable_setup(dir.path(), optimizer, 11);

        let straight = dir.path().join("straight");
        write_random_games(&straight, 6, 1);
        let mut t = Trainer::open_with(&straight, config.clone(), Some(&init)).unwrap();
        t.train_steps(10, false).unwrap();
        assert_eq!(t.step(), 10);
        let expected = weights_of(&t.latest_checkpoint_path());
        drop(t);

        let killed = dir.path().join("killed");
        write_random_games(&killed, 6, 1);
        let mut t = Trainer::open_with(&killed, config.clone(), Some(&init)).unwrap();
        t.train_steps(3, false).unwrap();
        // Snapshot the state directory as a kill at step 5 would leave it (last checkpoint at
        // step 3, metrics of steps 4 and 5 already appended), then go past it and "die".
        let saved = dir.path().join("saved-train");
        copy_dir(&killed.join("train"), &saved);
        t.train_steps(2, false).unwrap();
        drop(t);
        std::fs::remove_dir_all(killed.join("train")).unwrap();
        copy_dir(&saved, &killed.join("train"));

        let mut t = Trainer::open(&killed, config.clone()).unwrap();
        assert_eq!(t.step(), 3);
        t.train_steps(7, false).unwrap();
        assert_eq!(t.step(), 10);
        let resumed = weights_of(&t.latest_checkpoint_path());
        let diff = max_abs_diff(&expected, &resumed);
        assert!(
            diff <= 1e-6,
            "{optimizer:?}: resumed weights differ by {diff}"
        );
        // The metrics log has one record per step after de-duplication.
        let m = read_metrics(&killed.join("metrics.jsonl")).unwrap();
        assert_eq!(
            m.iter().map(|m| m.step).collect::<Vec<_>>(),
            (1..=10).collect::<Vec<_>>()
        );
    }
}

/// The two ways of computing gradients share weights, optimizer state and checkpoint format:
/// from a state written by either path, the next step on the other path lands where the next
/// step on the same path does, and a step that starts afresh from the same weights does not.
///
/// One step, not a run: the paths' gradients differ only in f32 rounding (`yari-model`'s
/// `tests/cpu_train.rs`), but that rounding now and then flips a ReLU whose input sits within
/// it of zero, and the weights that flip touches then differ by up to 1e-4 after one step (and
/// drift apart chaotically over more: two 10-step runs differed by up to 8e-3 in one run of
/// four). So the measure is the distance between the two steps' weights relative to the step's
/// own length (L2 norms over every weight): 1e-6 typically, 2e-4 at worst over 400 cases, where
/// a step with a fresh optimizer and sampler lands 0.17 (SGD) to 1.0 (AdamW) away.
#[test]
fn a_state_written_by_one_training_path_resumes_on_the_other() {
    for optimizer in [OptimizerKind::Sgd, OptimizerKind::AdamW] {
        let dir = tempfile::tempdir().unwrap();
        let (init, mut config) = resumable_setup(dir.path(), optimizer, 5);
        // AdamW divides each element's step by the root of its second moment, so a weight
        // whose gradient is rounding noise on both paths (a few 1e-9) still moves by a full
        // `lr` step, in the direction of the noise: with epsilon 1e-8 the two paths' weights
        // drifted 0.07 apart. An epsilon above the noise keeps those steps tiny; a lost moment
        // or step count on a path switch still moves real weights far beyond the tolerance.
        config.adam_epsilon = 1e-3;
        for first in [TrainPath::Burn, TrainPath::Cpu] {
            let written = dir.path().join(format!("{first:?}"));
            write_random_games(&written, 6, 1);
            let mut t = Trainer::open_with(&written, config.clone(), Some(&init)).unwrap();
            t.set_train_path(first).unwrap();
            t.train_steps(4, false).unwrap();
            let before_path = t.latest_checkpoint_path();
            let before = weights_of(&before_path);
            drop(t);
            let next_step = |second: TrainPath| {
                let run = dir.path().join(format!("{first:?}-then-{second:?}"));
                copy_dir(&written, &run);
                let mut t = Trainer::open(&run, config.clone()).unwrap();
                assert_eq!(t.step(), 4);
                t.set_train_path(second).unwrap();
                assert_eq!(t.train_path(), second);
                t.train_steps(1, false).unwrap();
                assert_eq!(t.step(), 5);
                weights_of(&t.latest_checkpoint_path())
            };
            let same = next_step(first);
            let other_path = if first == TrainPath::Burn {
                TrainPath::Cpu
            } else {
                TrainPath::Burn
            };
            let other = next_step(other_path);
            // The same step from the same weights with a fresh optimizer and sampler: what a
            // state the other path dropped or misread would look like.
            let fresh = {
                let run = dir.path().join(format!("{first:?}-fresh"));
                write_random_games(&run, 6, 1);
                let mut t = Trainer::open_with(&run, config.clone(), Some(&before_path)).unwrap();
                t.set_train_path(first).unwrap();
                t.train_steps(1, false).unwrap();
                weights_of(&t.latest_checkpoint_path())
            };
            let step = l2_distance(&same, &before);
            let diff = l2_distance(&same, &other) / step;
            let lost = l2_distance(&same, &fresh) / step;
            eprintln!(
                "{optimizer:?} {first:?}: the other path's step {diff:e} of a step away, \
                 a fresh optimizer's {lost:e}"
            );
            assert!(
                step > 1e-2,
                "{optimizer:?} {first:?}: the step moved the weights by only {step}"
            );
            assert!(
                lost > 0.05,
                "{optimizer:?} {first:?}: a step with a fresh optimizer landed only {lost} of a \
                 step away: the test cannot tell a lost state"
            );
            assert!(
                diff <= 1e-2,
                "{optimizer:?}: a state written by {first:?}, stepped on {other_path:?}, landed \
                 {diff} of a step away from a step on {first:?}"
            );
        }
    }
}

/// Five steps from `init` on each training path over the same random games (`games_seed`),
/// in `dir/burn` and `dir/cpu`: checks that the two runs' weights agree, and returns the burn
/// run's weights, both runs' metrics and the CPU run's directory.
fn train_on_both_paths(
    dir: &Path,
    init: &Path,
    config: &TrainConfig,
    games_seed: u64,
) -> (Vec<f32>, Vec<StepMetrics>, Vec<StepMetrics>, PathBuf) {
    config.validate().unwrap();
    let train = |name: &str, path: TrainPath| {
        let run = dir.join(name);
        write_random_games(&run, 6, games_seed);
        let mut t = Trainer::open_with(&run, config.clone(), Some(init)).unwrap();
        t.set_train_path(path).unwrap();
        t.train_steps(5, false).unwrap();
        let metrics = read_metrics(&run.join("metrics.jsonl")).unwrap();
        (weights_of(&t.latest_checkpoint_path()), metrics, run)
    };
    let (burn, burn_metrics, _) = train("burn", TrainPath::Burn);
    let (cpu, cpu_metrics, cpu_run) = train("cpu", TrainPath::Cpu);
    let diff = max_abs_diff(&burn, &cpu);
    assert!(diff <= 1e-4, "weights differ by {diff}");
    (burn, burn_metrics, cpu_metrics, cpu_run)
}

/// A net with the soft policy head trains the same on both paths (the hand-written step's
/// soft head against burn's autodiff, through whole optimizer steps), the head's loss is
/// recorded, and every part of the net moves, the head included. A run without the head
/// does not record the loss, and resuming a run with the head on a config without it is
/// refused as a change of architecture.
#[test]
fn the_soft_policy_head_trains_alike_on_both_paths() {
    let dir = tempfile::tempdir().unwrap();
    let net = NetConfig {
        soft_policy_head: true,
        ..NetConfig::new(1, 8)
    };
    let (init, mut config) = initial_checkpoint(dir.path(), net);
    config.soft_policy_weight = 8.0;
    let (burn, burn_metrics, cpu_metrics, cpu_run) =
        train_on_both_paths(dir.path(), &init, &config, 3);
    for (a, b) in burn_metrics.iter().zip(&cpu_metrics) {
        assert!(a.soft_policy_ce > 0.0, "{a:?}");
        assert!(
            (a.soft_policy_ce - b.soft_policy_ce).abs() <= 1e-4 * a.soft_policy_ce,
            "soft policy loss: burn {} vs cpu {}",
            a.soft_policy_ce,
            b.soft_policy_ce
        );
        let expected = a.policy_loss + a.value_loss + 8.0 * a.soft_policy_ce;
        assert!((a.loss - expected).abs() <= 1e-6 * expected, "{a:?}");
    }
    // The head is the net's last field and has no batch norm: its weight `[planes, 8, 1, 1]`
    // and bias `[planes]` are the last values in visit order.
    let start = weights_of(&init);
    let planes = yari_rules::encoding::POLICY_PLANES;
    let tail = start.len() - (planes * 8 + planes);
    let moved = max_abs_diff(&burn[tail..], &start[tail..]);
    assert!(moved > 1e-3, "the soft head moved by only {moved}");

    // The same run without the head: no soft loss, and the head's checkpoint is refused.
    let plain = small_config(NetConfig::new(1, 8));
    let err = Trainer::open(&cpu_run, plain.clone())
        .err()
        .expect("a run with the head must not resume without it");
    assert!(
        err.to_string()
            .contains("soft_policy_head is true, expected false"),
        "{err}"
    );
    let run = dir.path().join("plain");
    write_random_games(&run, 6, 3);
    let mut t = Trainer::open(&run, plain).unwrap();
    t.train_steps(2, false).unwrap();
    let metrics = read_metrics(&run.join("metrics.jsonl")).unwrap();
    assert!(metrics.iter().all(|m| m.soft_policy_ce == 0.0));
}

/// The short-term value head the same way: both paths train it alike, its loss is recorded
/// and counted in the total, the head moves, and a run with it does not resume without it.
#[test]
fn the_short_term_value_head_trains_alike_on_both_paths() {
    let dir = tempfile::tempdir().unwrap();
    let net = NetConfig {
        short_term_value_head: true,
        ..NetConfig::new(1, 8)
    };
    let (init, mut config) = initial_checkpoint(dir.path(), net);
    config.short_term_value_weight = 1.5;
    let (burn, burn_metrics, cpu_metrics, cpu_run) =
        train_on_both_paths(dir.path(), &init, &config, 5);
    for (a, b) in burn_metrics.iter().zip(&cpu_metrics) {
        assert!(a.short_term_value_ce > 0.0, "{a:?}");
        assert_eq!(a.soft_policy_ce, 0.0, "{a:?}");
        assert!(
            (a.short_term_value_ce - b.short_term_value_ce).abs() <= 1e-4 * a.short_term_value_ce,
            "short-term value loss: burn {} vs cpu {}",
            a.short_term_value_ce,
            b.short_term_value_ce
        );
        let expected = a.policy_loss + a.value_loss + 1.5 * a.short_term_value_ce;
        assert!((a.loss - expected).abs() <= 1e-6 * expected, "{a:?}");
    }
    // The head is the net's last field: its weight `[hidden, 9]` and bias `[9]` are the last
    // values in visit order.
    let start = weights_of(&init);
    let width = yari_model::net::SHORT_TERM_WDL_SIZE;
    let tail = start.len() - (net.value_hidden * width + width);
    let moved = max_abs_diff(&burn[tail..], &start[tail..]);
    assert!(moved > 1e-3, "the short-term head moved by only {moved}");
    let err = Trainer::open(&cpu_run, small_config(NetConfig::new(1, 8)))
        .err()
        .expect("a run with the head must not resume without it");
    assert!(
        err.to_string()
            .contains("short_term_value_head is true, expected false"),
        "{err}"
    );
}

/// Copies `from` into `to`, subdirectories included.
fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &to.join(e.file_name()));
        } else {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

/// Resuming with another architecture, or initialising from a checkpoint of another one, is
/// refused with an error that says what differs.
#[test]
fn foreign_architecture_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    write_random_games(&run, 2, 2);
    let config = small_config(NetConfig::new(1, 8));
    drop(Trainer::open(&run, config.clone()).unwrap());

    let wider = small_config(NetConfig::new(1, 12));
    let err = Trainer::open(&run, wider.clone())
        .err()
        .expect("must refuse");
    let msg = err.to_string();
    assert!(matches!(err, TrainError::Checkpoint { .. }), "{msg}");
    assert!(
        msg.contains("architecture mismatch") && msg.contains("channels is 8, expected 12"),
        "{msg}"
    );

    let other = dir.path().join("other.ckpt");
    let net = NetConfig::new(2, 8);
    checkpoint::save(
        &other,
        &net.init(&default_device()),
        &CheckpointMeta::new(net),
    )
    .unwrap();
    let err = Trainer::open_with(&dir.path().join("fresh"), config, Some(&other))
        .err()
        .expect("must refuse");
    assert!(err.to_string().contains("blocks is 2, expected 1"), "{err}");

    // Resuming with another optimizer is refused too, rather than silently dropping state.
    let mut adam = small_config(NetConfig::new(1, 8));
    adam.optimizer = OptimizerKind::AdamW;
    let err = Trainer::open(&run, adam).err().expect("must refuse");
    assert!(err.to_string().contains("optimizer"), "{err}");
}

/// An absurd learning rate makes training diverge: the error names the step, nothing is
/// written for it, the last checkpoint still loads with finite weights, and a reopened trainer
/// resumes from it.
#[test]
fn divergence_stops_with_the_step_and_keeps_the_last_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path();
    write_random_games(run, 4, 3);
    let mut config = small_config(NetConfig::new(1, 8));
    config.lr.lr = 1e30;
    config.lr.warmup_steps = 0;
    config.grad_clip_norm = None;
    config.checkpoint_interval = 1;
    let mut t = Trainer::open(run, config.clone()).unwrap();
    let err = t.train_steps(50, false).expect_err("lr 1e30 must diverge");
    let TrainError::NonFinite {
        step,
        last_checkpoint_step,
        ..
    } = &err
    else {
        panic!("expected NonFinite, got {err}");
    };
    let msg = err.to_string();
    assert!(msg.contains(&format!("at step {step}")), "{msg}");
    assert_eq!(*last_checkpoint_step, step - 1);
    assert!(matches!(t.train_steps(1, false), Err(TrainError::Poisoned)));
    drop(t);

    let state = Trainer::read_state(run).unwrap().unwrap();
    assert_eq!(state.step, step - 1);
    let w = weights_of(&run.join("train").join(&state.checkpoint));
    assert!(w.iter().all(|x| x.is_finite()));
    let t = Trainer::open(run, config).unwrap();
    assert_eq!(t.step(), step - 1);
}

/// Too little data is a clear error, not a hang or a panic.
#[test]
fn empty_window_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = small_config(NetConfig::new(1, 8));
    config.window.min_positions = 10;
    let mut t = Trainer::open(dir.path(), config).unwrap();
    let err = t.train_steps(1, false).err().unwrap();
    assert!(
        matches!(
            err,
            TrainError::NotEnoughData {
                have: 0,
                need: 10,
                ..
            }
        ),
        "{err}"
    );
}
