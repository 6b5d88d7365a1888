//! The trainer's configuration: everything that decides what a training run computes.
//!
//! Every field has a default, so a config file only names what it changes. Unknown fields are
//! refused, because a misspelt key silently falling back to its default is the kind of mistake
//! that costs a whole run.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use yari_model::NetConfig;
use yari_rules::encoding::{INPUT_PLANES, POLICY_SIZE};

use crate::error::TrainError;

/// Largest `batch_size`: a batch is encoded in memory whole (23 KB a position: 30 input and
/// 62 policy-target planes of 63 f32), so 16,384 is already 380 MB a batch, times the
/// prefetched ones; far beyond it is a typo that would abort on allocation.
pub const MAX_BATCH_SIZE: usize = 16_384;
/// Most batches prepared ahead: each is a whole encoded batch in memory.
pub const MAX_PREFETCH_BATCHES: usize = 64;
/// Longest `window.search_value_horizon`, in plies: far past any game's length, where the
/// target is the game's result.
pub const MAX_SEARCH_VALUE_HORIZON: f32 = 1_000.0;

/// Which optimizer updates the weights.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OptimizerKind {
    /// Stochastic gradient descent with (optionally Nesterov) momentum and L2 weight decay:
    /// what AlphaZero and KataGo use, robust to the non-stationary targets of self-play.
    Sgd,
    /// Adam with decoupled weight decay: converges faster on small runs and needs less lr
    /// tuning, at the price of two moment buffers per weight.
    AdamW,
}

/// Shape of the learning rate over optimizer steps (after warm-up).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LrScheduleKind {
    /// `lr` for ever.
    Constant,
    /// `lr * step_factor^(step / step_every)`.
    Step,
    /// Cosine decay from `lr` to `min_lr` over `cosine_steps`, then `min_lr`.
    Cosine,
    /// Cosine decay from `lr` to `min_lr` over the run's progress (the fraction of its wall
    /// time or generations spent), so a run on a faster or slower machine gets the same
    /// shape; a schedule in steps sized to one day's speed left run 9 at `min_lr` for 138
    /// of its 238 generations.
    #[serde(rename = "run_cosine")]
    RunCosine,
}

/// Learning-rate schedule. A pure function of the step and the run's progress, so resuming
/// needs no scheduler state.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LrConfig {
    /// Schedule after warm-up.
    pub schedule: LrScheduleKind,
    /// Peak learning rate, reached at the end of warm-up.
    pub lr: f64,
    /// Steps of linear warm-up from `lr / warmup_steps` to `lr`; 0 for none. Warm-up keeps the
    /// first updates of a fresh net (and of fresh AdamW moments) from overshooting.
    pub warmup_steps: u64,
    /// `step` schedule: the lr is multiplied by `step_factor` every `step_every` steps.
    pub step_every: u64,
    /// `step` schedule: multiplier applied every `step_every` steps, in (0, 1].
    pub step_factor: f64,
    /// `cosine` schedule: steps (counted after warm-up) over which the lr decays to `min_lr`.
    pub cosine_steps: u64,
    /// `cosine` schedule: the floor the lr decays to.
    pub min_lr: f64,
}

/// `[train.lr]` of `configs/default.toml` (a test in yari-loop holds the two equal).
impl Default for LrConfig {
    fn default() -> Self {
        Self {
            schedule: LrScheduleKind::RunCosine,
            lr: 0.02,
            warmup_steps: 100,
            step_every: 100_000,
            step_factor: 0.1,
            cosine_steps: 8_000,
            min_lr: 0.002,
        }
    }
}

impl LrConfig {
    /// The learning rate for optimizer step `step` (0-based: the first update uses step 0)
    /// at `run_progress` (0 at the start of the run, 1 at its end; only `run_cosine` reads it).
    pub fn lr_at(&self, step: u64, run_progress: f64) -> f64 {
        if step < self.warmup_steps {
            return self.lr * (step + 1) as f64 / self.warmup_steps as f64;
        }
        let t = step - self.warmup_steps;
        match self.schedule {
            LrScheduleKind::Constant => self.lr,
            LrScheduleKind::Step => {
                let drops = (t / self.step_every.max(1)).min(i32::MAX as u64) as i32;
                self.lr * self.step_factor.powi(drops)
            }
            LrScheduleKind::Cosine => {
                let progress = (t as f64 / self.cosine_steps.max(1) as f64).min(1.0);
                self.cosine(progress)
            }
            LrScheduleKind::RunCosine => {
                let progress = if run_progress.is_finite() {
                    run_progress.clamp(0.0, 1.0)
                } else {
                    0.0
                };
                self.cosine(progress)
            }
        }
    }

    fn cosine(&self, progress: f64) -> f64 {
        let cos = 0.5 * (1.0 + (std::f64::consts::PI * progress).cos());
        self.min_lr + (self.lr - self.min_lr) * cos
    }
}

/// Which positions make up the replay window that batches are drawn from.
///
/// The window is the newest `window_size(total)` training positions over all generations,
/// where `total` is the number of positions in every shard on disk. With a taper the window
/// grows sub-linearly with the run (KataGo's scheme): early generations, whose play is poor,
/// drop out quickly while the window is small, and late in a run the window still grows, so
/// the net does not overfit the last few generations.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WindowConfig {
    /// Upper bound on the window, in positions.
    pub max_positions: usize,
    /// Taper: below `taper_base` positions the window is everything; above it, the window is
    /// `c * (1 + beta * ((total / c)^alpha - 1) / alpha)` with `c = taper_base`. 0 disables
    /// the taper (the window is then `min(total, max_positions)`).
    pub taper_base: usize,
    /// Taper exponent `alpha` in (0, 1]: smaller grows the window more slowly.
    pub taper_alpha: f64,
    /// Taper slope `beta` > 0: the window's growth rate just after `taper_base`.
    pub taper_beta: f64,
    /// Training refuses to start with fewer positions than this in the window: a handful of
    /// games would be memorised, not learned from.
    pub min_positions: usize,
    /// Weight in [0, 1] of the search's root value in each WDL target, the rest being the
    /// game result (Leela's "q ratio"). Every position of a game shares one result, so with
    /// a few hundred games per generation a value head trained on results alone memorises
    /// the games; the search value differs per position and carries far less noise.
    /// Positions of games stopped at the ply cap always take the search value alone: an
    /// adjudicated draw is no result.
    pub search_value_weight: f32,
    /// How far ahead, in plies, the search value in the WDL targets looks (KataGo's
    /// short-term value targets, folded into the one value head): 0 takes the sample's own
    /// root value; `h >= 1` the exponentially weighted average, weight falling by `1 - 1/h` a
    /// ply, of the root values the game's searches found from this ply on (each held until
    /// the next full search), with the game's result taking the weight past its end. Later
    /// searches saw more of the game than this one, so the average is a less myopic target
    /// than one search and a far less noisy one than the result.
    #[serde(default)]
    pub search_value_horizon: f32,
    /// Policy surprise weighting (KataGo), in [0, 1]: this fraction of each game's sampling
    /// weight is shared among its positions in proportion to their surprise (the KL of the
    /// search target from the network's prior), the rest evenly. 0 samples every position
    /// alike; the positions where the search overruled the prior are the ones the policy
    /// has most to learn from.
    #[serde(default)]
    pub surprise_weight: f32,
}

/// `[train.window]` of `configs/default.toml` (a test in yari-loop holds the two equal).
impl Default for WindowConfig {
    fn default() -> Self {
        Self {
            max_positions: 250_000,
            taper_base: 20_000,
            taper_alpha: 0.75,
            taper_beta: 0.4,
            min_positions: 1_000,
            search_value_weight: 0.5,
            search_value_horizon: 0.0,
            surprise_weight: 0.5,
        }
    }
}

impl WindowConfig {
    /// Window size in positions when `total` positions exist.
    pub fn window_size(&self, total: usize) -> usize {
        let base = self.taper_base;
        let tapered = if base == 0 || total <= base {
            total
        } else {
            let c = base as f64;
            let a = self.taper_alpha;
            let w = c * (1.0 + self.taper_beta * ((total as f64 / c).powf(a) - 1.0) / a);
            (w.max(0.0) as usize).min(total)
        };
        tapered.min(self.max_positions)
    }
}

/// An optional positive number written as a plain one, 0 standing for `None`.
mod zero_is_none {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(value: &Option<f64>, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(value.unwrap_or(0.0))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
        let x = f64::deserialize(d)?;
        Ok((x != 0.0).then_some(x))
    }
}

/// Everything that decides what a training run computes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TrainConfig {
    /// Network architecture. A run's checkpoints must match it; changing it needs a fresh run
    /// (resuming refuses a checkpoint of another shape). In a file, `[net]` may name only
    /// some fields (`blocks = 2`, `channels = 32`); the rest default to `NetConfig::new`'s.
    #[serde(with = "net_serde")]
    pub net: NetConfig,
    /// Positions per optimizer step.
    pub batch_size: usize,
    /// Optimizer steps per generation: what `yari train` runs when no `--steps` is given, and
    /// what the `yari run` loop runs between self-play rounds.
    pub steps_per_generation: u64,
    /// Optimizer.
    pub optimizer: OptimizerKind,
    /// Learning-rate schedule.
    pub lr: LrConfig,
    /// SGD momentum (the velocity's decay), in [0, 1). Ignored by AdamW.
    pub momentum: f64,
    /// SGD: use Nesterov momentum.
    pub nesterov: bool,
    /// AdamW first-moment decay, in [0, 1).
    pub adam_beta1: f64,
    /// AdamW second-moment decay, in [0, 1).
    pub adam_beta2: f64,
    /// AdamW epsilon, > 0.
    pub adam_epsilon: f64,
    /// Weight decay. SGD: L2 penalty added to the gradient (`grad += wd * w`); AdamW:
    /// decoupled decay (`w -= lr * wd * w`). It applies to every parameter, batch-norm scales
    /// included, as in AlphaZero.
    pub weight_decay: f64,
    /// Clip the gradient to this global L2 norm (over all parameters together) before the
    /// optimizer sees it; `None` disables clipping. Global rather than per-tensor clipping
    /// keeps the update's direction. In a file, 0 is `None`: a key left out takes the
    /// built-in default's value, so "off" needs a value of its own.
    #[serde(with = "zero_is_none")]
    pub grad_clip_norm: Option<f64>,
    /// Weight of the value (WDL) loss relative to the policy loss.
    pub value_loss_weight: f64,
    /// Weight of the soft policy loss: the cross-entropy of the soft policy head (`[net]
    /// soft_policy_head = true`) against the policy target to the power 1/4, normalised
    /// (KataGo's auxiliary soft policy, weight 8 there). 0 with no head; each without the
    /// other is refused, as it would do nothing.
    pub soft_policy_weight: f64,
    /// Weight of the short-term value loss: the WDL cross-entropy of the short-term value head
    /// (`[net] short_term_value_head = true`), averaged over its horizons, against the value
    /// of the searches that follow each position (KataGo's short-term value targets). 0 with
    /// no head; each without the other is refused, as for the soft policy.
    pub short_term_value_weight: f64,
    /// Replay window.
    pub window: WindowConfig,
    /// Write a resumable checkpoint every this many steps (and always at the end of a call to
    /// `train_steps`), bounding the work lost to a crash.
    pub checkpoint_interval: u64,
    /// Seed of the weight initialisation and of the batch sampler. Batch `s` is drawn with an
    /// RNG seeded from `(seed, s)`, so a resumed run draws the same batches as an uninterrupted
    /// one.
    pub seed: u64,
    /// Directory of the self-play shards, relative to the run directory unless absolute.
    /// Shards (`*.yshard`) are found in it and in its immediate subdirectories.
    pub games_dir: PathBuf,
    /// Batches prepared ahead of the training step by the background producer.
    pub prefetch_batches: usize,
}

/// `[train]` of `configs/default.toml` (a test in yari-loop holds the two equal).
impl Default for TrainConfig {
    fn default() -> Self {
        Self {
            net: NetConfig::default(),
            batch_size: 256,
            steps_per_generation: 120,
            optimizer: OptimizerKind::Sgd,
            lr: LrConfig::default(),
            momentum: 0.9,
            nesterov: true,
            adam_beta1: 0.9,
            adam_beta2: 0.999,
            adam_epsilon: 1e-8,
            weight_decay: 1e-4,
            grad_clip_norm: Some(5.0),
            value_loss_weight: 1.0,
            soft_policy_weight: 0.0,
            short_term_value_weight: 1.0,
            window: WindowConfig::default(),
            checkpoint_interval: 50,
            seed: 0,
            games_dir: PathBuf::from("games"),
            prefetch_batches: 4,
        }
    }
}

impl TrainConfig {
    /// The games directory for the run in `run_dir`.
    pub fn games_dir_in(&self, run_dir: &Path) -> PathBuf {
        if self.games_dir.is_absolute() {
            self.games_dir.clone()
        } else {
            run_dir.join(&self.games_dir)
        }
    }

    /// Checks every field, naming the first one that is out of range.
    pub fn validate(&self) -> Result<(), TrainError> {
        let bad = |field: &str, why: String| Err(TrainError::Config(format!("{field}: {why}")));
        let n = &self.net;
        if let Err(e) = n.validate() {
            return bad(&format!("net.{}", e.field), e.to_string());
        }
        if n.input_planes != INPUT_PLANES || n.policy_size() != POLICY_SIZE {
            return bad(
                "net",
                format!(
                    "input_planes {} / policy size {} do not fit this build's encoding ({INPUT_PLANES} / {POLICY_SIZE})",
                    n.input_planes,
                    n.policy_size()
                ),
            );
        }
        if !(1..=MAX_BATCH_SIZE).contains(&self.batch_size) {
            return bad(
                "batch_size",
                format!("must be in 1..={MAX_BATCH_SIZE}, got {}", self.batch_size),
            );
        }
        if self.steps_per_generation == 0 {
            return bad("steps_per_generation", "must be at least 1".into());
        }
        let lr = &self.lr;
        if !(lr.lr.is_finite() && lr.lr > 0.0) {
            return bad("lr.lr", format!("must be a positive number, got {}", lr.lr));
        }
        // Checked whatever the schedule: a NaN left in an unused field would surface the day
        // someone switches schedules, far from the line that put it there.
        if !(lr.min_lr.is_finite() && lr.min_lr >= 0.0) {
            return bad(
                "lr.min_lr",
                format!("must be a number >= 0, got {}", lr.min_lr),
            );
        }
        if !(lr.step_factor.is_finite() && lr.step_factor > 0.0) {
            return bad(
                "lr.step_factor",
                format!("must be a positive number, got {}", lr.step_factor),
            );
        }
        match lr.schedule {
            LrScheduleKind::Constant => {}
            LrScheduleKind::Step => {
                if lr.step_every == 0 {
                    return bad(
                        "lr.step_every",
                        "must be at least 1 for the step schedule".into(),
                    );
                }
                if !(lr.step_factor > 0.0 && lr.step_factor <= 1.0) {
                    return bad(
                        "lr.step_factor",
                        format!("must be in (0, 1], got {}", lr.step_factor),
                    );
                }
            }
            LrScheduleKind::Cosine | LrScheduleKind::RunCosine => {
                if lr.schedule == LrScheduleKind::Cosine && lr.cosine_steps == 0 {
                    return bad(
                        "lr.cosine_steps",
                        "must be at least 1 for the cosine schedule".into(),
                    );
                }
                if !(lr.min_lr.is_finite() && lr.min_lr >= 0.0 && lr.min_lr <= lr.lr) {
                    return bad(
                        "lr.min_lr",
                        format!("must be in [0, lr], got {}", lr.min_lr),
                    );
                }
            }
        }
        let unit = |v: f64| v.is_finite() && (0.0..1.0).contains(&v);
        if !unit(self.momentum) {
            return bad(
                "momentum",
                format!("must be in [0, 1), got {}", self.momentum),
            );
        }
        if !unit(self.adam_beta1) {
            return bad(
                "adam_beta1",
                format!("must be in [0, 1), got {}", self.adam_beta1),
            );
        }
        if !unit(self.adam_beta2) {
            return bad(
                "adam_beta2",
                format!("must be in [0, 1), got {}", self.adam_beta2),
            );
        }
        if !(self.adam_epsilon.is_finite() && self.adam_epsilon > 0.0) {
            return bad(
                "adam_epsilon",
                format!("must be positive, got {}", self.adam_epsilon),
            );
        }
        if !(self.weight_decay.is_finite() && self.weight_decay >= 0.0) {
            return bad(
                "weight_decay",
                format!("must be >= 0, got {}", self.weight_decay),
            );
        }
        if let Some(c) = self.grad_clip_norm {
            if !(c.is_finite() && c > 0.0) {
                return bad(
                    "grad_clip_norm",
                    format!("must be positive (0 disables clipping), got {c}"),
                );
            }
        }
        if !(self.value_loss_weight.is_finite() && self.value_loss_weight >= 0.0) {
            return bad(
                "value_loss_weight",
                format!("must be >= 0, got {}", self.value_loss_weight),
            );
        }
        // An auxiliary head and its loss weight come together: either alone does nothing.
        for (head_field, head, weight_field, weight) in [
            (
                "net.soft_policy_head",
                self.net.soft_policy_head,
                "soft_policy_weight",
                self.soft_policy_weight,
            ),
            (
                "net.short_term_value_head",
                self.net.short_term_value_head,
                "short_term_value_weight",
                self.short_term_value_weight,
            ),
        ] {
            if !(weight.is_finite() && weight >= 0.0) {
                return bad(weight_field, format!("must be >= 0, got {weight}"));
            }
            match (head, weight > 0.0) {
                (true, false) => {
                    return bad(
                        head_field,
                        format!(
                            "is true but {weight_field} is 0: the head would never be trained \
                             (give it a weight, or leave the head out)"
                        ),
                    )
                }
                (false, true) => {
                    let key = head_field.trim_start_matches("net.");
                    return bad(
                        weight_field,
                        format!(
                            "is {weight} but [train.net] has no {key} = true: there is no head \
                             for it to train"
                        ),
                    );
                }
                _ => {}
            }
        }
        let w = &self.window;
        if w.max_positions == 0 {
            return bad("window.max_positions", "must be at least 1".into());
        }
        if w.min_positions > w.max_positions {
            return bad(
                "window.min_positions",
                format!(
                    "{} is more than window.max_positions ({}): the window could never hold \
                     enough positions to train on",
                    w.min_positions, w.max_positions
                ),
            );
        }
        if w.taper_base > 0 {
            if !(w.taper_alpha > 0.0 && w.taper_alpha <= 1.0) {
                return bad(
                    "window.taper_alpha",
                    format!("must be in (0, 1], got {}", w.taper_alpha),
                );
            }
            if !(w.taper_beta.is_finite() && w.taper_beta > 0.0) {
                return bad(
                    "window.taper_beta",
                    format!("must be positive, got {}", w.taper_beta),
                );
            }
        }
        if !(0.0..=1.0).contains(&w.search_value_weight) {
            return bad(
                "window.search_value_weight",
                format!("must be in [0, 1], got {}", w.search_value_weight),
            );
        }
        if !(w.search_value_horizon == 0.0
            || (1.0..=MAX_SEARCH_VALUE_HORIZON).contains(&w.search_value_horizon))
        {
            return bad(
                "window.search_value_horizon",
                format!(
                    "must be 0 or in [1, {MAX_SEARCH_VALUE_HORIZON}] plies, got {}",
                    w.search_value_horizon
                ),
            );
        }
        if !(0.0..=1.0).contains(&w.surprise_weight) {
            return bad(
                "window.surprise_weight",
                format!("must be in [0, 1], got {}", w.surprise_weight),
            );
        }
        if self.checkpoint_interval == 0 {
            return bad("checkpoint_interval", "must be at least 1".into());
        }
        if !(1..=MAX_PREFETCH_BATCHES).contains(&self.prefetch_batches) {
            return bad(
                "prefetch_batches",
                format!(
                    "must be in 1..={MAX_PREFETCH_BATCHES}, got {}",
                    self.prefetch_batches
                ),
            );
        }
        Ok(())
    }
}

/// `NetConfig` with every field optional on input, so a config file can say just
/// `blocks`/`channels`; the model crate's own serde impl requires all six.
mod net_serde {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};
    use yari_model::NetConfig;

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Partial {
        blocks: Option<usize>,
        channels: Option<usize>,
        input_planes: Option<usize>,
        policy_planes: Option<usize>,
        value_channels: Option<usize>,
        value_hidden: Option<usize>,
        soft_policy_head: Option<bool>,
        short_term_value_head: Option<bool>,
        global_pooling: Option<bool>,
    }

    pub fn serialize<S: Serializer>(net: &NetConfig, s: S) -> Result<S::Ok, S::Error> {
        net.serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<NetConfig, D::Error> {
        let p = Partial::deserialize(d)?;
        let default = NetConfig::default();
        let base = NetConfig::new(
            p.blocks.unwrap_or(default.blocks),
            p.channels.unwrap_or(default.channels),
        );
        Ok(NetConfig {
            input_planes: p.input_planes.unwrap_or(base.input_planes),
            policy_planes: p.policy_planes.unwrap_or(base.policy_planes),
            value_channels: p.value_channels.unwrap_or(base.value_channels),
            value_hidden: p.value_hidden.unwrap_or(base.value_hidden),
            // The training-only heads follow the default net, not the bare `NetConfig::new`.
            soft_policy_head: p.soft_policy_head.unwrap_or(default.soft_policy_head),
            short_term_value_head: p
                .short_term_value_head
                .unwrap_or(default.short_term_value_head),
            global_pooling: p.global_pooling.unwrap_or(default.global_pooling),
            ..base
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_is_valid_and_round_trips_through_toml() {
        let c = TrainConfig::default();
        c.validate().unwrap();
        let text = toml::to_string_pretty(&c).unwrap();
        let back: TrainConfig = toml::from_str(&text).unwrap();
        assert_eq!(back, c);
    }

    #[test]
    fn partial_toml_takes_defaults_and_unknown_keys_are_refused() {
        let c: TrainConfig =
            toml::from_str("batch_size = 64\n[lr]\nlr = 0.1\n[net]\nblocks = 2\n").unwrap();
        assert_eq!(c.batch_size, 64);
        assert_eq!(
            c.net,
            NetConfig {
                blocks: 2,
                ..NetConfig::default()
            }
        );
        assert_eq!(c.lr.lr, 0.1);
        assert_eq!(c.lr.warmup_steps, LrConfig::default().warmup_steps);
        assert!(toml::from_str::<TrainConfig>("batch_sise = 64").is_err());
    }

    /// The soft policy head and its weight come together: a file may turn both on, and
    /// either without the other (or a negative weight) is refused by name.
    #[test]
    fn the_soft_policy_head_and_its_weight_come_together() {
        let both: TrainConfig =
            toml::from_str("soft_policy_weight = 8.0\n[net]\nsoft_policy_head = true\n").unwrap();
        assert!(both.net.soft_policy_head);
        both.validate().unwrap();
        for (text, field) in [
            ("soft_policy_weight = 8.0\n", "soft_policy_weight"),
            ("[net]\nsoft_policy_head = true\n", "net.soft_policy_head"),
            (
                "soft_policy_weight = -1.0\n[net]\nsoft_policy_head = true\n",
                "soft_policy_weight",
            ),
        ] {
            let c: TrainConfig = toml::from_str(text).unwrap();
            let e = c.validate().unwrap_err().to_string();
            assert!(
                e.starts_with(&format!("invalid training config: {field}:")),
                "{text:?}: {e}"
            );
        }
        assert!(!TrainConfig::default().net.soft_policy_head);
    }

    /// The same rule for the short-term value head, checked apart: both pairs share one loop.
    #[test]
    fn the_short_term_value_head_and_its_weight_come_together() {
        let both: TrainConfig =
            toml::from_str("short_term_value_weight = 1.0\n[net]\nshort_term_value_head = true\n")
                .unwrap();
        assert!(both.net.short_term_value_head && !both.net.soft_policy_head);
        both.validate().unwrap();
        for (text, field) in [
            (
                "short_term_value_weight = 1.0\n[net]\nshort_term_value_head = false\n",
                "short_term_value_weight",
            ),
            (
                "short_term_value_weight = 0.0\n",
                "net.short_term_value_head",
            ),
            (
                "short_term_value_weight = -0.5\n[net]\nshort_term_value_head = true\n",
                "short_term_value_weight",
            ),
        ] {
            let c: TrainConfig = toml::from_str(text).unwrap();
            let e = c.validate().unwrap_err().to_string();
            assert!(
                e.starts_with(&format!("invalid training config: {field}:")),
                "{text:?}: {e}"
            );
        }
        // On by default (session 23's A/B); a file turns it off with its weight.
        let default = TrainConfig::default();
        assert!(default.net.short_term_value_head && default.short_term_value_weight > 0.0);
        let off: TrainConfig =
            toml::from_str("short_term_value_weight = 0.0\n[net]\nshort_term_value_head = false\n")
                .unwrap();
        off.validate().unwrap();
    }

    #[test]
    fn global_pooling_is_read_from_the_net_section_and_off_by_default() {
        assert!(!TrainConfig::default().net.global_pooling);
        let on: TrainConfig = toml::from_str("[net]\nglobal_pooling = true\n").unwrap();
        on.validate().unwrap();
        assert!(on.net.global_pooling);
        // The rest of the net keeps the default's shape and heads.
        let default = TrainConfig::default().net;
        assert_eq!(
            on.net,
            yari_model::NetConfig {
                global_pooling: true,
                ..default
            }
        );
        let e = toml::from_str::<TrainConfig>("[net]\nglobal_pooling = 1\n").unwrap_err();
        assert!(e.to_string().contains("global_pooling"), "{e}");
    }

    #[test]
    fn validate_names_the_field() {
        let c = TrainConfig {
            momentum: 1.5,
            ..TrainConfig::default()
        };
        let e = c.validate().unwrap_err().to_string();
        assert!(e.contains("momentum"), "{e}");
        let mut c = TrainConfig::default();
        c.net.input_planes += 1;
        assert!(c.validate().unwrap_err().to_string().contains("net"));
    }

    /// Out-of-range and non-finite values are refused by field name, whatever the schedule
    /// (`min_lr = nan` once passed with the constant schedule, `batch_size` and the net's
    /// sizes had no upper bound and aborted on allocation).
    #[test]
    fn hostile_values_are_refused_by_field() {
        for (text, field) in [
            ("batch_size = 1000000000", "batch_size"),
            ("batch_size = 0", "batch_size"),
            ("prefetch_batches = 100000", "prefetch_batches"),
            ("[net]\nchannels = 100000", "net.channels"),
            ("[net]\nblocks = 100000", "net.blocks"),
            ("[net]\nblocks = 0", "net.blocks"),
            ("[net]\nvalue_hidden = 0", "net.value_hidden"),
            ("[lr]\nmin_lr = nan", "lr.min_lr"),
            ("[lr]\nmin_lr = -1.0", "lr.min_lr"),
            ("[lr]\nmin_lr = inf", "lr.min_lr"),
            ("[lr]\nstep_factor = nan", "lr.step_factor"),
            ("[lr]\nlr = nan", "lr.lr"),
            ("momentum = nan", "momentum"),
            ("weight_decay = inf", "weight_decay"),
            ("grad_clip_norm = nan", "grad_clip_norm"),
            ("grad_clip_norm = -1.0", "grad_clip_norm"),
            ("value_loss_weight = nan", "value_loss_weight"),
            (
                "[window]\nsearch_value_weight = nan",
                "window.search_value_weight",
            ),
            ("[window]\ntaper_alpha = nan", "window.taper_alpha"),
            (
                "[window]\nsearch_value_horizon = 0.5",
                "window.search_value_horizon",
            ),
            (
                "[window]\nsearch_value_horizon = nan",
                "window.search_value_horizon",
            ),
            (
                "[window]\nsearch_value_horizon = 1e9",
                "window.search_value_horizon",
            ),
        ] {
            let c: TrainConfig = toml::from_str(text).expect(text);
            let e = c.validate().expect_err(text).to_string();
            assert!(e.contains(&format!("{field}:")), "{text}: {e}");
        }
    }

    #[test]
    fn schedules() {
        let mut lr = LrConfig {
            schedule: LrScheduleKind::Constant,
            warmup_steps: 10,
            min_lr: 0.0002,
            ..LrConfig::default()
        };
        assert!((lr.lr_at(0, 0.0) - 0.002).abs() < 1e-12);
        assert_eq!(lr.lr_at(9, 0.0), 0.02);
        assert_eq!(lr.lr_at(1000, 0.0), 0.02);
        lr.schedule = LrScheduleKind::Step;
        lr.step_every = 100;
        assert!((lr.lr_at(10 + 250, 0.0) - 0.0002).abs() < 1e-12);
        lr.schedule = LrScheduleKind::Cosine;
        lr.cosine_steps = 100;
        assert_eq!(lr.lr_at(10, 0.0), 0.02);
        assert!((lr.lr_at(60, 0.0) - (0.0002 + 0.0198 * 0.5)).abs() < 1e-9);
        assert!((lr.lr_at(10_000, 0.0) - 0.0002).abs() < 1e-12);
        // The step schedules do not read the run's progress.
        assert_eq!(lr.lr_at(60, 0.9), lr.lr_at(60, 0.1));
    }

    #[test]
    fn the_run_cosine_follows_the_runs_progress_not_its_steps() {
        let lr = LrConfig {
            schedule: LrScheduleKind::RunCosine,
            warmup_steps: 10,
            lr: 0.02,
            min_lr: 0.002,
            ..LrConfig::default()
        };
        // Warm-up is still counted in steps.
        assert!((lr.lr_at(0, 0.5) - 0.002).abs() < 1e-12);
        // Past it, the step does not matter: only how far the run is.
        for step in [10, 1_000, 1_000_000] {
            assert!((lr.lr_at(step, 0.0) - 0.02).abs() < 1e-12);
            assert!((lr.lr_at(step, 0.5) - 0.011).abs() < 1e-12);
            assert!((lr.lr_at(step, 1.0) - 0.002).abs() < 1e-12);
        }
        assert!(lr.lr_at(20, 0.25) > lr.lr_at(20, 0.5));
        // Out-of-range progress is clamped, never extrapolated.
        assert_eq!(lr.lr_at(20, 7.0), lr.lr_at(20, 1.0));
        assert_eq!(lr.lr_at(20, -1.0), lr.lr_at(20, 0.0));
        assert_eq!(lr.lr_at(20, f64::NAN), lr.lr_at(20, 0.0));
    }

    #[test]
    fn tapered_window_grows_sublinearly() {
        let w = WindowConfig {
            max_positions: 10_000_000,
            taper_base: 1000,
            ..WindowConfig::default()
        };
        assert_eq!(w.window_size(500), 500);
        assert_eq!(w.window_size(1000), 1000);
        let a = w.window_size(10_000);
        let b = w.window_size(100_000);
        assert!(a > 1000 && a < 10_000);
        assert!(b > a && b < 100_000 && (b - 1000) < 10 * (a - 1000));
        let fixed = WindowConfig {
            taper_base: 0,
            max_positions: 300,
            ..WindowConfig::default()
        };
        assert_eq!(fixed.window_size(100), 100);
        assert_eq!(fixed.window_size(10_000), 300);
    }
}
