//! A run's config (`configs/*.toml`): the `[run]`, `[gate]` and `[rating]` sections defined
//! here, and the self-play and training sections of their crates.
//!
//! There is one source of defaults: `configs/default.toml`, compiled in as [`DEFAULT_CONFIG`].
//! A config file is laid over it key by key before it is parsed, so a file without `[gate]`
//! (or with only some of its keys) gets exactly the default run's values, and the `Default`
//! impls of the sections here are the parsed built-in config too. A field missing from both
//! is an error rather than a second, silently different default.

use std::path::Path;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use yari_arena::PlayerSpec;
use yari_selfplay::SelfplayConfig;
use yari_train::TrainConfig;

use crate::LoopError;

/// The built-in default config: `configs/default.toml`, compiled in.
pub const DEFAULT_CONFIG: &str = include_str!("../../../configs/default.toml");

/// `[run]`: the budget and shape of the loop.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunSection {
    /// Directory name under `data/runs/`.
    pub name: String,
    /// Stop after this many generations (0: no limit).
    pub generations: u32,
    /// Stop starting new generations after this many hours of this run's wall time in total,
    /// resumed sessions included (0: no limit).
    pub max_hours: f64,
    /// Self-play games per generation.
    pub games_per_generation: usize,
    /// Share of the previous candidate's weights in each new candidate, in [0, 1): the
    /// network self-play and the gate use is then an exponential moving average of the
    /// trained weights over generations (0: the trained weights as they are). Training goes
    /// on from its own weights either way.
    pub candidate_ema: f64,
}

impl RunSection {
    /// How far a run is through its budget, 0 to 1, after `elapsed_s` seconds of wall time
    /// at `generation`: the time against `max_hours` when there is one, else the generation
    /// against `generations`. The learner and every worker read it from the same state, so
    /// their progressive simulation budgets agree.
    pub fn progress(&self, elapsed_s: f64, generation: u32) -> f64 {
        let p = if self.max_hours > 0.0 {
            elapsed_s / (self.max_hours * 3600.0)
        } else if self.generations > 1 {
            generation.saturating_sub(1) as f64 / (self.generations - 1) as f64
        } else {
            0.0
        };
        p.clamp(0.0, 1.0)
    }

    /// The previous candidate's share in generation `g`'s candidate: `candidate_ema`, but
    /// at most (g − 1) / g, so the first generations take the plain mean of the trained
    /// weights so far rather than leaning on the random generation 0 (0 for generation 1).
    pub fn candidate_share(&self, g: u32) -> f64 {
        if g <= 1 {
            return 0.0;
        }
        self.candidate_ema.min((g - 1) as f64 / g as f64)
    }
}

/// `[gate]`: how a candidate is judged against the best.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GateSection {
    /// Games of the gating match at most (SPRT may stop sooner); 0 promotes every candidate
    /// without a match.
    pub games: usize,
    /// Simulations per move for both networks.
    pub simulations: u32,
    /// Score (0–1) the candidate needs over all games when the SPRT did not decide.
    pub threshold: f64,
    /// Refuse a candidate that did not win more games than it lost (false: a non-regression
    /// gate, which with a threshold below 0.5 promotes every candidate not shown to be worse).
    pub require_edge: bool,
    /// SPRT bounds in Elo; elo1 <= elo0 disables the SPRT.
    pub sprt_elo0: f64,
    /// Upper SPRT bound in Elo.
    pub sprt_elo1: f64,
    /// SPRT error rate of accepting a worse candidate.
    pub sprt_alpha: f64,
    /// SPRT error rate of refusing a better one.
    pub sprt_beta: f64,
    /// Random plies from the start position before the players take over, so that the
    /// deterministic searches do not replay one game.
    pub opening_plies: usize,
    /// Plies after which an arena game is a draw by adjudication.
    pub ply_cap: usize,
}

/// `[rating]`: the best network against fixed baselines after each generation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RatingSection {
    /// Games against each baseline (0: no rating).
    pub games: usize,
    /// Simulations per move for the network.
    pub simulations: u32,
    /// Baseline players (arena specs), e.g. `random`, `alphabeta:2`.
    pub baselines: Vec<String>,
    /// Rungs of an outside engine (arena specs such as `fsf[nodes=100]`), played like the
    /// baselines when the engine starts. Our own baselines are too low a ladder to judge a
    /// run by; an engine that is not installed is skipped, said once, and the run goes on.
    pub outside: Vec<String>,
    /// Simulations per move for the network against the outside rungs (0: `simulations`).
    pub outside_simulations: u32,
    /// Rate every this many generations (and always at the last one).
    pub every: u32,
    /// Rate only generations whose candidate was promoted: an unchanged best network was
    /// already rated, and arena time is time not spent on self-play.
    pub only_promoted: bool,
}

impl RatingSection {
    /// Whether generation `g` gets rating games: every `every` generations (only those that
    /// promoted a candidate when `only_promoted`), and always at the run's last generation.
    pub fn due(&self, g: u32, promoted: bool, last: bool) -> bool {
        if self.games == 0 {
            return false;
        }
        last || (g.is_multiple_of(self.every) && (promoted || !self.only_promoted))
    }

    /// Simulations per move of the network against an outside rung.
    pub fn outside_sims(&self) -> u32 {
        if self.outside_simulations == 0 {
            self.simulations
        } else {
            self.outside_simulations
        }
    }
}

/// A whole run's config: `configs/*.toml`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunConfig {
    /// `[run]`.
    pub run: RunSection,
    /// `[selfplay]`.
    pub selfplay: SelfplayConfig,
    /// `[train]`.
    pub train: TrainConfig,
    /// `[gate]`.
    pub gate: GateSection,
    /// `[rating]`.
    pub rating: RatingSection,
}

/// The built-in config, parsed once.
fn builtin() -> &'static RunConfig {
    static BUILTIN: std::sync::OnceLock<RunConfig> = std::sync::OnceLock::new();
    BUILTIN.get_or_init(|| {
        let table: toml::Table = toml::from_str(DEFAULT_CONFIG).expect("built-in config is TOML");
        toml::Value::Table(table)
            .try_into()
            .expect("built-in config parses")
    })
}

impl Default for RunConfig {
    fn default() -> Self {
        builtin().clone()
    }
}

impl Default for RunSection {
    fn default() -> Self {
        builtin().run.clone()
    }
}

impl Default for GateSection {
    fn default() -> Self {
        builtin().gate.clone()
    }
}

impl Default for RatingSection {
    fn default() -> Self {
        builtin().rating.clone()
    }
}

/// Lays `over` onto `base`: tables merge key by key (recursively), anything else replaces.
fn overlay(base: &mut toml::Table, over: toml::Table) {
    for (key, value) in over {
        match (base.get_mut(&key), value) {
            (Some(toml::Value::Table(b)), toml::Value::Table(o)) => overlay(b, o),
            (_, value) => {
                base.insert(key, value);
            }
        }
    }
}

/// The value at a dotted path (`train.lr.schedule`) of a TOML table.
fn value_at<'t>(table: &'t toml::Table, path: &str) -> Option<&'t toml::Value> {
    let mut keys = path.split('.');
    let mut value = table.get(keys.next()?)?;
    for key in keys {
        value = value.as_table()?.get(key)?;
    }
    Some(value)
}

/// Refuses a key the file sets that would have no effect with the rest of the config, so
/// that an A/B of `c_puct` under Gumbel search, say, is not two identical runs. A key left at
/// its built-in value is accepted (the built-in file lists every key of every variant).
fn refuse_inactive_keys(user: &toml::Table, merged: &toml::Table) -> Result<(), String> {
    let defaults = default_table();
    let text = |path: &str| {
        value_at(merged, path)
            .and_then(|v| v.as_str())
            .unwrap_or_default()
            .to_string()
    };
    let gumbel = value_at(merged, "selfplay.search.gumbel")
        .and_then(|v| v.as_bool())
        .unwrap_or(true);
    let optimizer = text("train.optimizer");
    let schedule = text("train.lr.schedule");
    let resigns = value_at(merged, "selfplay.resign_threshold")
        .and_then(|v| v.as_float())
        .is_none_or(|t| t > -1.0);
    let handicaps = value_at(merged, "selfplay.handicap_fraction")
        .and_then(|v| v.as_float())
        .is_none_or(|f| f > 0.0);
    let puct = "PUCT's, and selfplay.search.gumbel = true searches with Gumbel";
    let gumbels = "Gumbel search's, and selfplay.search.gumbel = false searches with PUCT";
    let sgd = "SGD's, and train.optimizer is not \"sgd\"";
    let adamw = "AdamW's, and train.optimizer is not \"adamw\"";
    let rules = [
        ("selfplay.search.c_puct", gumbel, puct),
        ("selfplay.search.fpu_reduction", gumbel, puct),
        ("selfplay.search.dirichlet_alpha", gumbel, puct),
        ("selfplay.search.dirichlet_fraction", gumbel, puct),
        ("selfplay.search.gumbel_considered", !gumbel, gumbels),
        ("selfplay.search.gumbel_scale", !gumbel, gumbels),
        ("selfplay.search.gumbel_c_visit", !gumbel, gumbels),
        ("selfplay.search.gumbel_c_scale", !gumbel, gumbels),
        ("train.momentum", optimizer != "sgd", sgd),
        ("train.nesterov", optimizer != "sgd", sgd),
        ("train.adam_beta1", optimizer != "adamw", adamw),
        ("train.adam_beta2", optimizer != "adamw", adamw),
        ("train.adam_epsilon", optimizer != "adamw", adamw),
        (
            "train.lr.step_every",
            schedule != "step",
            "the step schedule's",
        ),
        (
            "train.lr.step_factor",
            schedule != "step",
            "the step schedule's",
        ),
        (
            "train.lr.cosine_steps",
            schedule != "cosine",
            "the cosine schedule's (run_cosine follows the run's progress)",
        ),
        (
            "train.lr.min_lr",
            schedule != "cosine" && schedule != "run_cosine",
            "the cosine schedules'",
        ),
        (
            "selfplay.resign_consecutive",
            !resigns,
            "resignation's, and selfplay.resign_threshold = -1 never resigns",
        ),
        (
            "selfplay.handicap_max_pieces",
            !handicaps,
            "handicap games', and selfplay.handicap_fraction = 0 plays none",
        ),
    ];
    for (path, inactive, whose) in rules {
        let Some(value) = value_at(user, path) else {
            continue;
        };
        if inactive && value_at(&defaults, path) != Some(value) {
            return Err(format!(
                "{path} = {value} has no effect: the key is {whose}; remove it or change what it depends on"
            ));
        }
    }
    if let Some(value) = value_at(user, "selfplay.search.ply_cap") {
        let used = value_at(merged, "selfplay.ply_cap");
        if used != Some(value) && value_at(&defaults, "selfplay.search.ply_cap") != Some(value) {
            return Err(format!(
                "selfplay.search.ply_cap = {value} has no effect: self-play searches with \
                 selfplay.ply_cap ({}); set that instead",
                used.map_or("unset".to_string(), |v| v.to_string())
            ));
        }
    }
    Ok(())
}

fn default_table() -> toml::Table {
    toml::from_str(DEFAULT_CONFIG).expect("built-in config is TOML")
}

impl RunConfig {
    /// Parses a config file's text over the built-in defaults and validates it. `origin`
    /// names the file in errors.
    pub fn parse(text: &str, origin: &str) -> Result<RunConfig, LoopError> {
        let bad = |what: String| LoopError::Config {
            origin: origin.to_string(),
            what,
        };
        let table: toml::Table = toml::from_str(text).map_err(|e| bad(e.to_string()))?;
        let user = table.clone();
        let mut merged = default_table();
        overlay(&mut merged, table);
        refuse_inactive_keys(&user, &merged).map_err(bad)?;
        let config: RunConfig = toml::Value::Table(merged)
            .try_into()
            .map_err(|e: toml::de::Error| bad(e.to_string()))?;
        config.validate().map_err(bad)?;
        Ok(config)
    }

    /// Reads and parses a config file; `None` is the built-in default.
    pub fn load(path: Option<&Path>) -> Result<RunConfig, LoopError> {
        match path {
            None => RunConfig::parse(DEFAULT_CONFIG, "(built-in default)"),
            Some(p) => {
                let text = yari_io::read_regular_text(p, yari_io::MAX_CONFIG_BYTES)
                    .map_err(|e| LoopError::io(p, e))?;
                RunConfig::parse(&text, &p.display().to_string())
            }
        }
    }

    /// Checks every field of the loop's own sections and of the crates' sections; the error
    /// names the field.
    pub fn validate(&self) -> Result<(), String> {
        let r = &self.run;
        let valid_name = !r.name.is_empty()
            && r.name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
            // "." and ".." name data/runs itself and data/.
            && r.name.chars().any(|c| c != '.');
        if !valid_name {
            return Err(format!(
                "run.name = {:?}: use letters, digits, '-', '_' or '.' (not only dots)",
                r.name
            ));
        }
        if !(r.max_hours.is_finite() && r.max_hours >= 0.0) {
            return Err(format!("run.max_hours = {}: must be >= 0", r.max_hours));
        }
        if r.generations == 0 && r.max_hours == 0.0 {
            return Err(
                "run.generations and run.max_hours are both 0: the run would never stop".into(),
            );
        }
        if r.games_per_generation == 0 {
            return Err("run.games_per_generation must be at least 1".into());
        }
        if !(r.candidate_ema.is_finite() && (0.0..1.0).contains(&r.candidate_ema)) {
            return Err(format!(
                "run.candidate_ema = {}: must be in [0, 1) (the previous candidate's share)",
                r.candidate_ema
            ));
        }
        self.selfplay.validate().map_err(|e| e.to_string())?;
        self.train.validate().map_err(|e| e.to_string())?;
        let g = &self.gate;
        if g.games > 0 && g.simulations == 0 {
            return Err("gate.simulations must be at least 1".into());
        }
        if !(0.0..=1.0).contains(&g.threshold) {
            return Err(format!(
                "gate.threshold = {}: must be in [0, 1]",
                g.threshold
            ));
        }
        for (name, v) in [
            ("gate.sprt_elo0", g.sprt_elo0),
            ("gate.sprt_elo1", g.sprt_elo1),
        ] {
            if !(-1000.0..=1000.0).contains(&v) {
                return Err(format!(
                    "{name} = {v}: must be an Elo difference in [-1000, 1000]"
                ));
            }
        }
        for (name, v) in [
            ("gate.sprt_alpha", g.sprt_alpha),
            ("gate.sprt_beta", g.sprt_beta),
        ] {
            if !(v > 0.0 && v < 0.5) {
                return Err(format!("{name} = {v}: must be in (0, 0.5)"));
            }
        }
        if g.ply_cap < 10 {
            return Err(format!("gate.ply_cap = {}: must be at least 10", g.ply_cap));
        }
        let rt = &self.rating;
        if rt.games > 0 && rt.simulations == 0 {
            return Err("rating.simulations must be at least 1".into());
        }
        if rt.every == 0 {
            return Err("rating.every must be at least 1".into());
        }
        for b in &rt.baselines {
            PlayerSpec::parse(b).map_err(|e| format!("rating.baselines: {b:?}: {e}"))?;
        }
        for b in &rt.outside {
            PlayerSpec::parse(b).map_err(|e| format!("rating.outside: {b:?}: {e}"))?;
        }
        if rt.outside_simulations > 1_000_000 {
            return Err(format!(
                "rating.outside_simulations = {}: at most 1000000",
                rt.outside_simulations
            ));
        }
        Ok(())
    }
}

/// Reads one section of a config file: either a file holding just that section's fields, or a
/// whole run config (then its `[name]` section). Either way the built-in defaults fill the
/// rest, and a whole config is validated like a run's.
pub fn section_from_file<T: DeserializeOwned>(path: &Path, name: &str) -> Result<T, LoopError> {
    let origin = path.display().to_string();
    let bad = |what: String| LoopError::Config {
        origin: origin.clone(),
        what,
    };
    let text = yari_io::read_regular_text(path, yari_io::MAX_CONFIG_BYTES)
        .map_err(|e| LoopError::io(path, e))?;
    let table: toml::Table = toml::from_str(&text).map_err(|e| bad(e.to_string()))?;
    let whole = ["run", "selfplay", "train", "gate", "rating"]
        .iter()
        .any(|k| table.contains_key(*k));
    let section = if whole {
        let config = RunConfig::parse(&text, &origin)?;
        match name {
            "selfplay" => toml::Value::try_from(&config.selfplay),
            "train" => toml::Value::try_from(&config.train),
            "gate" => toml::Value::try_from(&config.gate),
            "rating" => toml::Value::try_from(&config.rating),
            _ => toml::Value::try_from(&config.run),
        }
        .map_err(|e| bad(e.to_string()))?
    } else {
        let mut base = match default_table().remove(name) {
            Some(toml::Value::Table(t)) => t,
            _ => toml::Table::new(),
        };
        overlay(&mut base, table);
        toml::Value::Table(base)
    };
    section
        .try_into()
        .map_err(|e: toml::de::Error| bad(format!("[{name}]: {e}")))
}
