//! The loop's phases run without the binary, each resumed the way a kill would leave it.

use std::path::Path;
use yari_model::cpu::CpuPath;
use yari_model::Backend;
use yari_rules::encoding::{FILES, INPUT_PLANES, RANKS};

use yari_loop::{check_run, phases, Loop, LoopError, Phase, PlayerKey, RunConfig, RunDir};

fn quiet(_: &str) {}

fn smoke() -> RunConfig {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../configs/smoke.toml");
    RunConfig::load(Some(&path)).unwrap()
}

/// A new smoke run in `root`, stepped until the state's phase is `until` in generation 1.
fn run_until(root: &Path, config: &RunConfig, until: Phase) -> Loop {
    run_until_in(root, config, 1, until)
}

/// A new smoke run in `root`, stepped until the state is at phase `until` of `generation`.
fn run_until_in(root: &Path, config: &RunConfig, generation: u32, until: Phase) -> Loop {
    let mut run = Loop::open(RunDir::new(root), config.clone(), Backend::cpu(), quiet).unwrap();
    while (run.state().generation, run.state().phase) != (generation, until) {
        run.step().unwrap();
    }
    run
}

fn lines(path: &Path) -> usize {
    std::fs::read_to_string(path)
        .map(|t| t.lines().count())
        .unwrap_or(0)
}

#[test]
fn each_phase_moves_the_state_on_and_a_generation_closes() {
    let tmp = tempfile::tempdir().unwrap();
    let config = smoke();
    let mut run = Loop::open(
        RunDir::new(tmp.path()),
        config.clone(),
        Backend::cpu(),
        quiet,
    )
    .unwrap();
    let dir = run.dir().clone();
    assert_eq!(dir.require_state().unwrap().phase, Phase::Selfplay);
    assert_eq!(run.step().unwrap(), Phase::Selfplay);
    assert_eq!(
        phases::count_games(&dir.paths().generation_games_dir(1)).unwrap(),
        config.run.games_per_generation
    );
    assert_eq!(dir.require_state().unwrap().phase, Phase::Train);
    assert_eq!(run.step().unwrap(), Phase::Train);
    let state = dir.require_state().unwrap();
    assert_eq!(state.train_target, Some(config.train.steps_per_generation));
    assert!(dir.paths().model_file(1).is_file());
    assert_eq!(run.step().unwrap(), Phase::Gate);
    assert_eq!(lines(&dir.paths().ledger_file()), 1);
    assert_eq!(run.step().unwrap(), Phase::Rate);
    let state = dir.require_state().unwrap();
    assert_eq!((state.generation, state.phase), (2, Phase::Selfplay));
    let summaries = dir.read_summaries().unwrap();
    assert_eq!(summaries.len(), 1);
    assert_eq!(summaries[0].ratings.len(), config.rating.baselines.len());
    assert_eq!(summaries[0].ratings[0].player, state.best_key());
    let report = check_run(tmp.path());
    assert!(!report.is_damaged(), "{:?}", report.findings);

    // The plot's rating panel: the rating list of `yari ratings` split into the run's networks
    // and the outside players, the gate decision as a mark, each rung's score with its interval.
    let ratings = yari_loop::plot::run_ratings(&dir).unwrap();
    assert_eq!(ratings.anchor, "random");
    let best_generation = state.best_key().generation_of().unwrap();
    assert!(
        ratings
            .networks
            .iter()
            .any(|n| n.generation == best_generation && n.error > 0.0),
        "{ratings:?}"
    );
    let random = ratings.references.iter().find(|r| r.name == "random");
    assert_eq!(random.map(|r| (r.elo, r.error)), Some((0.0, 0.0)));
    assert_eq!(ratings.gates.len(), 1);
    assert_eq!(ratings.gates[0].generation, 1);
    assert_eq!(ratings.gates[0].promoted, summaries[0].promoted);
    assert_eq!(ratings.scores.len(), config.rating.baselines.len());
    for curve in &ratings.scores {
        let p = curve.points[0];
        assert!(
            p.low <= p.score && p.score <= p.high && p.high > p.low,
            "{curve:?}"
        );
    }
    assert!(dir.paths().plots_dir().join("elo.png").is_file());
}

/// Issue 38: a generation whose training was killed halfway reported the mean loss of the
/// resumed steps alone.
#[test]
fn a_resumed_generation_reports_the_losses_of_all_its_steps() {
    let tmp = tempfile::tempdir().unwrap();
    let config = smoke();
    let run = run_until(tmp.path(), &config, Phase::Train);
    let dir = run.dir().clone();
    let best = run.state().best.clone();
    drop(run);
    let target = phases::train_target(&dir, &config).unwrap();
    let half = target / 2;
    assert!(half > 0);
    // The killed session's steps, then the resumed session's.
    phases::train(&Backend::cpu(), &dir, &config, 1, &best, half, 0.0, quiet).unwrap();
    let resumed =
        phases::train(&Backend::cpu(), &dir, &config, 1, &best, target, 0.0, quiet).unwrap();
    let metrics = yari_train::read_metrics(&dir.paths().metrics_file()).unwrap();
    let steps: Vec<u64> = metrics.iter().map(|m| m.step).collect();
    assert_eq!(steps, (1..=target).collect::<Vec<_>>());
    let mean = metrics.iter().map(|m| m.loss).sum::<f64>() / metrics.len() as f64;
    let reported = resumed.loss.unwrap();
    assert!((reported - mean).abs() < 1e-9, "{reported} vs {mean}");
    let second_half =
        metrics[half as usize..].iter().map(|m| m.loss).sum::<f64>() / (target - half) as f64;
    assert!(
        (reported - second_half).abs() > 1e-12,
        "not the resumed steps alone"
    );
}

/// A `min_positions` more than one generation's games yield made every resume fail on the
/// same error: the generation plays more games instead, and says why.
#[test]
fn a_window_short_of_min_positions_plays_more_games() {
    let tmp = tempfile::tempdir().unwrap();
    let mut config = smoke();
    config.train.window.min_positions = 200_000;
    let per_generation = config.run.games_per_generation;
    static LOG: std::sync::Mutex<String> = std::sync::Mutex::new(String::new());
    fn record_min(line: &str) {
        let mut log = LOG.lock().unwrap();
        log.push_str(line);
        log.push('\n');
    }
    let mut run = Loop::open(
        RunDir::new(tmp.path()),
        config.clone(),
        Backend::cpu(),
        record_min,
    )
    .unwrap();
    let dir = run.dir().clone();
    let games = || phases::count_games(&dir.paths().generation_games_dir(1)).unwrap();
    assert_eq!(run.step().unwrap(), Phase::Selfplay);
    assert_eq!(games(), per_generation);
    assert_eq!(run.step().unwrap(), Phase::Train);
    let state = dir.require_state().unwrap();
    assert_eq!((state.generation, state.phase), (1, Phase::Selfplay));
    assert_eq!(state.games_target, Some(2 * per_generation as u64));
    let log = LOG.lock().unwrap().clone();
    assert!(
        log.contains("training needs 200000 (train.window.min_positions)"),
        "{log}"
    );
    // A resumed run keeps the larger target and plays only the games still missing.
    drop(run);
    let mut resumed = Loop::open(RunDir::new(tmp.path()), config, Backend::cpu(), quiet).unwrap();
    assert_eq!(resumed.step().unwrap(), Phase::Selfplay);
    assert_eq!(games(), 2 * per_generation);
    assert_eq!(resumed.step().unwrap(), Phase::Train);
    assert_eq!(
        dir.require_state().unwrap().games_target,
        Some(3 * per_generation as u64)
    );
}

/// Issue 23: a kill between appending to ratings.jsonl and saving state.json duplicated the
/// generation's ratings on resume.
#[test]
fn a_rating_phase_resumed_after_a_kill_records_each_rating_once() {
    let tmp = tempfile::tempdir().unwrap();
    let config = smoke();
    let run = run_until(tmp.path(), &config, Phase::Rate);
    let dir = run.dir().clone();
    let best = run.state().best.clone();
    // The rating phase runs, then the process dies before the state is saved.
    phases::rate(&Backend::cpu(), &dir, &config, 1, &best, quiet).unwrap();
    drop(run);
    assert_eq!(lines(&dir.paths().ratings_file()), 2);
    let mut resumed = Loop::open(
        RunDir::new(tmp.path()),
        config.clone(),
        Backend::cpu(),
        quiet,
    )
    .unwrap();
    assert_eq!(resumed.state().phase, Phase::Rate);
    resumed.step().unwrap();
    assert_eq!(
        lines(&dir.paths().ratings_file()),
        2,
        "no rating recorded twice"
    );
    assert_eq!(dir.read_summaries().unwrap()[0].ratings.len(), 2);
}

/// Issue 23: the ledger named players by a path as typed, so resuming with `./x` after `x`
/// played the gate again and appended a second decision.
#[test]
fn the_gate_is_not_replayed_when_the_run_dir_is_spelled_differently() {
    let tmp = tempfile::tempdir().unwrap();
    let config = smoke();
    let root = tmp.path().join("x");
    let run = run_until(&root, &config, Phase::Gate);
    let state_before_gate = run.state().clone();
    let mut run = run;
    run.step().unwrap();
    let dir = run.dir().clone();
    assert_eq!(lines(&dir.paths().ledger_file()), 1);
    // A kill after the ledger line but before state.json moved on.
    dir.save_state(&state_before_gate).unwrap();
    drop(run);
    let spelled = tmp.path().join(".").join("x");
    let mut resumed =
        Loop::open(RunDir::new(&spelled), config.clone(), Backend::cpu(), quiet).unwrap();
    assert_eq!(resumed.step().unwrap(), Phase::Gate);
    assert_eq!(lines(&dir.paths().ledger_file()), 1, "the decision stands");
    let ledger = yari_arena::read_ledger(&dir.paths().ledger_file()).unwrap();
    assert_eq!(
        ledger.records[0].candidate,
        PlayerKey::generation(1).as_str()
    );
}

#[test]
fn a_run_whose_trainer_state_was_deleted_says_so() {
    let tmp = tempfile::tempdir().unwrap();
    let config = smoke();
    let run = run_until(tmp.path(), &config, Phase::Gate);
    drop(run);
    std::fs::remove_dir_all(tmp.path().join("train")).unwrap();
    let err = Loop::open(RunDir::new(tmp.path()), config, Backend::cpu(), quiet)
        .err()
        .expect("refused");
    assert!(matches!(err, LoopError::MissingTrainer { .. }), "{err}");
    assert!(err.to_string().contains("train"), "{err}");
}

/// A run directory whose state.json is gone is not a new run: starting one would overwrite its
/// networks and train on from its trainer. Refused, naming what is there; nothing is written.
#[test]
fn a_run_without_its_state_is_refused_not_restarted() {
    let tmp = tempfile::tempdir().unwrap();
    let config = smoke();
    let run = run_until(tmp.path(), &config, Phase::Gate);
    drop(run);
    let model = tmp.path().join("models/gen-0000.yari");
    let before = std::fs::read(&model).unwrap();
    std::fs::remove_file(tmp.path().join("state.json")).unwrap();
    let err = Loop::open(RunDir::new(tmp.path()), config, Backend::cpu(), quiet)
        .err()
        .expect("refused")
        .to_string();
    assert!(
        err.contains("state.json") && err.contains("models"),
        "{err}"
    );
    assert_eq!(
        std::fs::read(&model).unwrap(),
        before,
        "nothing overwritten"
    );
    assert!(!tmp.path().join("state.json").exists());
}

#[test]
fn a_damaged_best_network_falls_back_to_the_last_good_one() {
    let tmp = tempfile::tempdir().unwrap();
    let mut config = smoke();
    config.gate.games = 0; // every candidate is promoted: generation 1 is the best
    let mut run = run_until(tmp.path(), &config, Phase::Rate);
    run.step().unwrap();
    let dir = run.dir().clone();
    drop(run);
    assert_eq!(dir.require_state().unwrap().best, "models/gen-0001.yari");
    let best = dir.paths().model_file(1);
    let mut bytes = std::fs::read(&best).unwrap();
    let n = bytes.len();
    bytes[n / 2] ^= 0xff;
    std::fs::write(&best, &bytes).unwrap();
    let report = check_run(tmp.path());
    assert!(report.is_damaged());
    assert!(report
        .findings
        .iter()
        .any(|f| f.path == best && f.what.contains("checksum")));
    let run = Loop::open(RunDir::new(tmp.path()), config, Backend::cpu(), quiet).unwrap();
    assert_eq!(run.state().best, "models/gen-0000.yari");
    assert_eq!(dir.require_state().unwrap().best, "models/gen-0000.yari");
    assert_eq!(
        std::fs::read(&best).unwrap(),
        bytes,
        "the damaged file is kept"
    );
}

#[test]
fn a_corrupt_state_file_stops_the_run_with_the_file_named() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("state.json"), b"{\"generation\": ").unwrap();
    let err = Loop::open(RunDir::new(tmp.path()), smoke(), Backend::cpu(), quiet)
        .err()
        .expect("refused")
        .to_string();
    assert!(
        err.contains("state.json") && err.contains("corrupt"),
        "{err}"
    );
    assert_eq!(
        std::fs::read(tmp.path().join("state.json")).unwrap(),
        b"{\"generation\": ",
        "nothing overwritten"
    );
}

static RATING_LOG: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

fn record(line: &str) {
    RATING_LOG.lock().unwrap().push(line.to_string());
}

/// Issue 22: an outside engine's rung is played like a baseline when the engine starts, and an
/// engine that does not start skips its rung with one message for the whole run.
#[test]
fn outside_rungs_are_rated_when_their_engine_starts_and_skipped_once_otherwise() {
    let tmp = tempfile::tempdir().unwrap();
    let mut config = smoke();
    let fake = Path::new(env!("CARGO_MANIFEST_DIR")).join("../arena/tests/fixtures/fake_uci.sh");
    let fake = format!("uci[name=fake]:bash {} legal", fake.display());
    let missing = "uci:/nonexistent/yari-test-engine".to_string();
    config.rating.outside = vec![missing.clone(), fake.clone()];
    config.rating.outside_simulations = 2;
    let run = run_until(tmp.path(), &config, Phase::Rate);
    let dir = run.dir().clone();
    let best = run.state().best.clone();
    let rated = phases::rate(&Backend::cpu(), &dir, &config, 1, &best, record).unwrap();
    let opponents: Vec<&str> = rated.iter().map(|r| r.opponent.as_str()).collect();
    assert_eq!(opponents, ["random", "alphabeta:1", fake.as_str()]);
    assert_eq!(rated[2].wins + rated[2].draws + rated[2].losses, 2);
    // The next generation's rating probes no engine again and says nothing more.
    phases::rate(&Backend::cpu(), &dir, &config, 2, &best, record).unwrap();
    let log = RATING_LOG.lock().unwrap();
    let skips: Vec<&String> = log.iter().filter(|l| l.contains("skipped")).collect();
    assert_eq!(skips.len(), 1, "{log:?}");
    assert!(skips[0].contains(&missing), "{}", skips[0]);
    assert!(
        log.iter()
            .any(|l| l.contains("(2 simulations) against uci[name=fake]")),
        "{log:?}"
    );
    let recorded = dir.read_ratings().unwrap().records;
    assert_eq!(recorded.len(), 6);
    assert!(recorded.iter().all(|r| r.opponent != missing));
}

static RAMP_LOG: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

fn record_ramp(line: &str) {
    RAMP_LOG.lock().unwrap().push(line.to_string());
}

/// Issue 22: the loop plays each generation's self-play at the ramped simulation budget.
#[test]
fn self_play_runs_at_the_progressive_budget_of_the_run_progress() {
    let tmp = tempfile::tempdir().unwrap();
    let mut config = smoke();
    config.run.max_hours = 0.0;
    config.run.generations = 3;
    config.selfplay.simulation_ramp = 0.5;
    let (full, cheap) = (
        config.selfplay.full_simulations,
        config.selfplay.cheap_simulations,
    );
    let mut run = Loop::open(
        RunDir::new(tmp.path()),
        config.clone(),
        Backend::cpu(),
        record_ramp,
    )
    .unwrap();
    assert_eq!(run.progress(), 0.0);
    run.step().unwrap();
    let expect = format!(
        "generation 1: progressive budget at 0% of the run: {}/{} simulations",
        config.selfplay.at_progress(0.0).full_simulations,
        config.selfplay.at_progress(0.0).cheap_simulations
    );
    let log = RAMP_LOG.lock().unwrap().clone();
    assert!(
        log.iter().any(|l| l == &expect),
        "{expect:?} not in {log:?}"
    );
    assert!(config.selfplay.at_progress(0.0).full_simulations < full);
    assert!(config.selfplay.at_progress(0.0).cheap_simulations <= cheap);
    while run.state().generation < 2 {
        run.step().unwrap();
    }
    assert_eq!(run.progress(), 0.5);
}

/// A damaged shard does not stop training (it once stopped every resume of `yari run`): it is
/// left out, reported, and moved into `rejected/`, and the generation trains on the others.
#[test]
fn a_damaged_shard_is_set_aside_and_training_goes_on() {
    let tmp = tempfile::tempdir().unwrap();
    let config = smoke();
    let mut run = run_until(tmp.path(), &config, Phase::Train);
    let dir = run.dir().clone();
    let shards = yari_selfplay::list_shards(dir.paths().generation_games_dir(1)).unwrap();
    assert!(shards.len() >= 2, "{shards:?}");
    let damaged = shards[0].clone();
    let mut bytes = std::fs::read(&damaged).unwrap();
    let n = bytes.len();
    bytes[n / 2] ^= 0xff;
    std::fs::write(&damaged, &bytes).unwrap();
    assert_eq!(run.step().unwrap(), Phase::Train);
    assert_eq!(run.state().phase, Phase::Gate, "training finished");
    assert!(!damaged.exists(), "the damaged shard was moved");
    let rejected: Vec<_> = std::fs::read_dir(dir.root().join("rejected"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    let name = damaged.file_name().unwrap().to_string_lossy().into_owned();
    assert_eq!(rejected, vec![format!("gen-0001-{name}")]);
}

/// With `run.candidate_ema` the candidate self-play uses is the blend of the previous
/// candidate and the trained weights, and training goes on from its own weights.
#[test]
fn a_candidate_with_the_moving_average_blends_the_previous_candidate_and_the_trained_weights() {
    let tmp = tempfile::tempdir().unwrap();
    let mut config = smoke();
    config.run.candidate_ema = 0.5;
    let dir = run_until_in(tmp.path(), &config, 2, Phase::Gate)
        .dir()
        .clone();
    let read = |path: &Path| yari_model::checkpoint::Checkpoint::read(path).unwrap();
    let state = yari_train::Trainer::read_state(tmp.path())
        .unwrap()
        .unwrap();
    let trained_path = tmp
        .path()
        .join(yari_train::TRAIN_DIR)
        .join(&state.checkpoint);
    let (gen1, gen2) = (
        read(&dir.paths().model_file(1)),
        read(&dir.paths().model_file(2)),
    );
    assert_ne!(
        gen2.weights(),
        read(&trained_path).weights(),
        "generation 2's candidate is the trained weights as they are"
    );
    // The candidate plays as the blend computed here (a few of its values differ from this
    // blend's in the last bit, so it is compared by what it plays, not byte for byte).
    let device = Backend::cpu().device().clone();
    let net = |c: yari_model::Checkpoint| c.into_net_any(&device).unwrap();
    let trained = net(read(&trained_path));
    let expected =
        yari_model::average::blend(&net(gen1), &trained, config.run.candidate_share(2) as f32)
            .unwrap();
    let n = 4;
    let size = INPUT_PLANES * RANKS * FILES;
    let input: Vec<f32> = (0..n * size)
        .map(|i| ((i * 7919) % 13) as f32 / 13.0)
        .collect();
    let play = |net: &yari_model::Net| {
        let cpu = yari_model::CpuNet::from_net_with_path(net, &config.train.net, CpuPath::F32);
        let (policy, value) = cpu.unwrap().forward(&input, n);
        policy.into_iter().chain(value).collect::<Vec<f32>>()
    };
    let max_diff = |a: &[f32], b: &[f32]| {
        assert_eq!(a.len(), b.len());
        a.iter()
            .zip(b)
            .map(|(x, y)| (x - y).abs())
            .fold(0.0f32, f32::max)
    };
    let candidate = play(&net(gen2));
    assert!(max_diff(&candidate, &play(&expected)) < 1e-4);
    assert!(
        max_diff(&candidate, &play(&trained)) > 1e-3,
        "the candidate plays as the trained weights"
    );
}
