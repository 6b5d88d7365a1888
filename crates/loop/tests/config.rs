//! The run config: one source of defaults, the shipped configs, sections read alone.

use std::path::Path;

use yari_loop::{section_from_file, RatingSection, RunConfig, DEFAULT_CONFIG};
use yari_selfplay::SelfplayConfig;
use yari_train::TrainConfig;

fn configs() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../configs")
}

#[test]
fn rating_is_due_every_n_generations_and_only_after_promotions_when_asked() {
    let mut rc = RatingSection {
        every: 2,
        only_promoted: false,
        ..RatingSection::default()
    };
    assert!(rc.due(2, false, false));
    assert!(!rc.due(3, true, false));
    assert!(
        rc.due(3, false, true),
        "the last generation is always rated"
    );
    rc.only_promoted = true;
    assert!(rc.due(4, true, false));
    assert!(!rc.due(4, false, false));
    assert!(rc.due(5, false, true));
    rc.games = 0;
    assert!(!rc.due(4, true, true), "no games, no rating");
}

#[test]
fn shipped_configs_load_and_validate() {
    for name in ["default", "smoke", "gpu"] {
        let path = configs().join(format!("{name}.toml"));
        let config = RunConfig::load(Some(&path)).unwrap();
        assert_eq!(config.run.name, name);
    }
    let builtin = RunConfig::load(None).unwrap();
    assert_eq!(
        builtin,
        RunConfig::load(Some(&configs().join("default.toml"))).unwrap()
    );
    assert_eq!(builtin, RunConfig::default());
    assert!(builtin.run.max_hours > 0.0);
}

/// Issue 23: a config without `[gate]` got 40 games at 0.55 with `require_edge = true`, the
/// built-in `Default`, instead of the default run's gate.
#[test]
fn a_missing_section_behaves_exactly_like_the_default_config() {
    let default = RunConfig::parse(DEFAULT_CONFIG, "default").unwrap();
    let bare = RunConfig::parse("[run]\nname = \"bare\"\n", "bare").unwrap();
    assert_eq!(bare.gate, default.gate);
    assert_eq!(bare.rating, default.rating);
    assert_eq!(bare.selfplay, default.selfplay);
    assert_eq!(bare.train, default.train);
    assert_eq!(
        bare.run.games_per_generation,
        default.run.games_per_generation
    );
    // Some keys of a section: the others are the default run's, not a struct's Default.
    let partial = RunConfig::parse("[gate]\ngames = 8\n[selfplay]\nseed = 7\n", "p").unwrap();
    assert_eq!(partial.gate.games, 8);
    assert_eq!(partial.gate.threshold, default.gate.threshold);
    assert_eq!(partial.gate.require_edge, default.gate.require_edge);
    assert_eq!(partial.gate.ply_cap, default.gate.ply_cap);
    assert_eq!(partial.selfplay.ply_cap, default.selfplay.ply_cap);
    assert_eq!(partial.selfplay.seed, 7);
}

#[test]
fn bad_fields_are_named() {
    for (text, field) in [
        ("[gate]\nsprt_elo0 = nan\n", "gate.sprt_elo0"),
        ("[gate]\nthreshold = 2.0\n", "gate.threshold"),
        ("[gate]\ngames = \"many\"\n", "games"),
        ("[gate]\ngamez = 3\n", "gamez"),
        ("[rating]\nevery = 0\n", "rating.every"),
        ("[run]\nname = \"a b\"\n", "run.name"),
        ("[run]\nname = \"..\"\n", "run.name"),
        ("[run]\nname = \".\"\n", "run.name"),
        ("[run]\ncandidate_ema = 1.0\n", "run.candidate_ema = 1"),
        ("[run]\ncandidate_ema = -0.5\n", "run.candidate_ema = -0.5"),
        ("[run]\ncandidate_ema = nan\n", "run.candidate_ema = NaN"),
        (
            "[train.window]\nmin_positions = 300000\n",
            "window.min_positions: 300000 is more than window.max_positions (250000)",
        ),
        // Keys that would do nothing with the rest of the config.
        (
            "[selfplay.search]\nc_puct = 2.0\n",
            "selfplay.search.c_puct = 2.0 has no effect",
        ),
        (
            "[selfplay.search]\ngumbel = false\ngumbel_considered = 4\n",
            "selfplay.search.gumbel_considered = 4 has no effect",
        ),
        (
            "[train]\nadam_beta1 = 0.8\n",
            "train.adam_beta1 = 0.8 has no effect",
        ),
        (
            "[train.lr]\nschedule = \"run_cosine\"\ncosine_steps = 5\n",
            "train.lr.cosine_steps = 5 has no effect",
        ),
        (
            "[train.lr]\nstep_every = 7\n",
            "train.lr.step_every = 7 has no effect",
        ),
        (
            "[selfplay.search]\nply_cap = 100\n",
            "selfplay.search.ply_cap = 100 has no effect",
        ),
        (
            "[selfplay]\nhandicap_max_pieces = 2\n",
            "selfplay.handicap_max_pieces = 2 has no effect",
        ),
    ] {
        let err = RunConfig::parse(text, "bad.toml").unwrap_err().to_string();
        assert!(
            err.contains("bad.toml") && err.contains(field),
            "{text}: {err}"
        );
    }
}

#[test]
fn sections_read_from_whole_or_partial_files() {
    let tmp = tempfile::tempdir().unwrap();
    let whole = configs().join("smoke.toml");
    let sp: SelfplayConfig = section_from_file(&whole, "selfplay").unwrap();
    assert_eq!(sp.full_simulations, 8);
    let tc: TrainConfig = section_from_file(&whole, "train").unwrap();
    assert_eq!(tc.net.channels, 8);
    let partial = tmp.path().join("sp.toml");
    std::fs::write(&partial, "full_simulations = 5\n").unwrap();
    let sp: SelfplayConfig = section_from_file(&partial, "selfplay").unwrap();
    assert_eq!(sp.full_simulations, 5);
    assert_eq!(sp.ply_cap, RunConfig::default().selfplay.ply_cap);
    std::fs::write(&partial, "full_simulation = 5\n").unwrap();
    assert!(section_from_file::<SelfplayConfig>(&partial, "selfplay").is_err());
}

#[test]
fn nan_and_huge_gate_bounds_are_refused() {
    for text in [
        "[gate]\nsprt_elo0 = nan",
        "[gate]\nsprt_elo1 = inf",
        "[gate]\nsprt_elo0 = 1e9",
    ] {
        let err = RunConfig::parse(text, "test").unwrap_err();
        assert!(
            format!("{err:#}").contains("gate.sprt_elo"),
            "{text}: {err:#}"
        );
    }
}

/// Issue 22: the progressive simulation budget scales both counts from (1 - r) to (1 + r)
/// of the configured ones over the run, and is off at 0.
#[test]
fn the_progressive_simulation_budget_ramps_over_the_run() {
    let mut sp = RunConfig::default().selfplay;
    assert_eq!(sp.simulation_ramp, 0.0, "off by default");
    assert_eq!(sp.at_progress(0.7), sp);
    sp.full_simulations = 64;
    sp.cheap_simulations = 16;
    sp.simulation_ramp = 0.5;
    let at = |sp: &SelfplayConfig, p: f64| {
        let c = sp.at_progress(p);
        (c.full_simulations, c.cheap_simulations)
    };
    assert_eq!(at(&sp, 0.0), (32, 8));
    assert_eq!(at(&sp, 0.5), (64, 16));
    assert_eq!(at(&sp, 1.0), (96, 24));
    assert_eq!(at(&sp, 7.0), (96, 24), "progress is clamped");
    sp.full_simulations = 1;
    sp.cheap_simulations = 1;
    assert_eq!(at(&sp, 0.0), (1, 1), "never below one simulation");
    let bad = RunConfig::parse("[selfplay]\nsimulation_ramp = 1.0\n", "test").unwrap_err();
    assert!(bad.to_string().contains("simulation_ramp"), "{bad}");
}

/// Gradient clipping can be turned off in a file: a key left out takes the built-in
/// default's 5.0, so 0 means "no clipping", and it survives a round trip.
#[test]
fn grad_clip_norm_zero_turns_clipping_off() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("noclip.toml");
    std::fs::write(&file, "[train]\ngrad_clip_norm = 0\n").unwrap();
    let off = RunConfig::load(Some(&file)).unwrap();
    assert_eq!(off.train.grad_clip_norm, None);
    off.train.validate().unwrap();
    assert_eq!(
        RunConfig::load(None).unwrap().train.grad_clip_norm,
        Some(5.0)
    );
    let text = toml::to_string(&off.train).unwrap();
    assert!(text.contains("grad_clip_norm = 0.0"), "{text}");
    let back: TrainConfig = toml::from_str(&text).unwrap();
    assert_eq!(back.grad_clip_norm, None);
}

/// A config "file" that is a device or a pipe is refused at once, naming it, instead of being
/// read until memory runs out (`/dev/zero`) or blocking for ever (a FIFO with no writer).
#[test]
fn a_config_that_is_not_a_regular_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("config.fifo");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success(), "mkfifo");
    for path in [Path::new("/dev/zero"), fifo.as_path()] {
        let err = RunConfig::load(Some(path)).unwrap_err().to_string();
        assert!(
            err.contains("not a regular file"),
            "{}: {err}",
            path.display()
        );
        let err = section_from_file::<TrainConfig>(path, "train")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("not a regular file"),
            "{}: {err}",
            path.display()
        );
    }
}

/// A key that acts under the rest of the config is accepted, and so is an inactive key left
/// at its built-in value (the built-in file lists every variant's keys).
#[test]
fn keys_that_act_are_accepted() {
    for text in [
        "[selfplay.search]\ngumbel = false\nc_puct = 2.0\n",
        "[selfplay.search]\ngumbel_considered = 4\n",
        "[train]\noptimizer = \"adamw\"\nadam_beta1 = 0.8\n",
        "[train.lr]\nschedule = \"cosine\"\ncosine_steps = 5\n",
        "[train.lr]\nschedule = \"run_cosine\"\nmin_lr = 0.001\n",
        "[selfplay]\nply_cap = 100\n[selfplay.search]\nply_cap = 100\n",
        "[selfplay.search]\nc_puct = 1.25\n",
        DEFAULT_CONFIG,
    ] {
        RunConfig::parse(text, "good.toml").unwrap_or_else(|e| panic!("{text}: {e}"));
    }
}

/// One source of defaults (issue 32): every section's Rust `Default`, which library users and
/// `yari bench` without `--config` get, is the built-in file's section.
#[test]
fn every_rust_default_is_the_built_in_files_section() {
    let file = RunConfig::parse(DEFAULT_CONFIG, "default").unwrap();
    assert_eq!(yari_selfplay::SelfplayConfig::default(), file.selfplay);
    assert_eq!(yari_search::SearchConfig::default(), file.selfplay.search);
    assert_eq!(yari_train::TrainConfig::default(), file.train);
    assert_eq!(yari_train::LrConfig::default(), file.train.lr);
    assert_eq!(yari_train::WindowConfig::default(), file.train.window);
    assert_eq!(yari_model::NetConfig::default(), file.train.net);
    assert_eq!(RunConfig::default(), file);
}

/// The moving average of candidates starts as the plain mean of the generations trained so
/// far, then keeps `candidate_ema` of the previous candidate.
#[test]
fn the_previous_candidates_share_is_the_running_mean_until_the_configured_share() {
    let config = RunConfig::parse("[run]\ncandidate_ema = 0.75\n", "test").unwrap();
    let shares: Vec<f64> = (1..=6).map(|g| config.run.candidate_share(g)).collect();
    assert_eq!(shares, [0.0, 0.5, 2.0 / 3.0, 0.75, 0.75, 0.75]);
    let off = RunConfig::default();
    assert_eq!(off.run.candidate_ema, 0.0);
    assert!((1..=6).all(|g| off.run.candidate_share(g) == 0.0));
}
