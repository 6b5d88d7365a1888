//! Search and self-play settings.
//!
//! Both structs deserialize from TOML with every field optional (missing fields keep their
//! defaults), so a config file only names what it changes; `validate` then rejects values
//! that would make search misbehave silently rather than fail loudly.

use serde::{Deserialize, Serialize};
use thiserror::Error;
use yari_rules::{DEFAULT_PLY_CAP, MAX_MOVES};

/// A setting outside the range search or self-play can work with.
#[derive(Debug, Clone, PartialEq, Error)]
#[error("invalid config: `{field}` = {value}: {reason}")]
pub struct ConfigError {
    /// The offending field, dotted for nested tables (`search.c_puct`).
    pub field: &'static str,
    /// The value as given.
    pub value: String,
    /// What the field needs.
    pub reason: &'static str,
}

fn check(
    ok: bool,
    field: &'static str,
    value: impl ToString,
    reason: &'static str,
) -> Result<(), ConfigError> {
    if ok {
        Ok(())
    } else {
        Err(ConfigError {
            field,
            value: value.to_string(),
            reason,
        })
    }
}

/// PUCT settings (AlphaZero's selection rule, visit counts as the policy target).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PuctConfig {
    /// Exploration constant: weight of prior over value when choosing a child.
    pub c_puct: f32,
    /// First-play urgency: an unvisited child is valued at the parent's value minus this
    /// times the square root of the prior mass already visited, so search widens only when
    /// the visited moves disappoint.
    pub fpu_reduction: f32,
    /// Concentration of the Dirichlet noise mixed into the root priors (roughly 10 over the
    /// typical number of legal moves).
    pub dirichlet_alpha: f32,
    /// Weight of the Dirichlet noise at the root of self-play searches (0 disables it); it
    /// makes sure every move is tried now and then, whatever the net thinks of it.
    pub dirichlet_fraction: f32,
}

impl Default for PuctConfig {
    fn default() -> Self {
        Self {
            c_puct: 1.25,
            fpu_reduction: 0.25,
            dirichlet_alpha: 0.3,
            dirichlet_fraction: 0.25,
        }
    }
}

/// Gumbel settings (sequential halving at the root, completed-Q policy target).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GumbelConfig {
    /// Actions sampled (Gumbel top-k) for sequential halving at the root. Fewer actions give
    /// each one more simulations; more actions make it likelier that the best move is
    /// considered at all.
    pub considered: usize,
    /// Scale of the Gumbel noise at the root. 1 samples moves in self-play; 0 makes the
    /// search deterministic (arena, analysis).
    pub scale: f32,
    /// `c_visit` of the σ transform of Q (mctx default 50); larger trusts Q sooner.
    pub c_visit: f32,
    /// `c_scale` of the σ transform of Q (mctx default 0.1).
    pub c_scale: f32,
}

impl Default for GumbelConfig {
    fn default() -> Self {
        Self {
            considered: 16,
            scale: 1.0,
            c_visit: 50.0,
            c_scale: 0.1,
        }
    }
}

/// The search algorithm with its own settings: which child a simulation descends to, how the
/// root is perturbed, what the policy target is and which move is recommended. A type rather
/// than a flag, so that no variant's code can read the other's settings (mctx passes
/// `muzero_policy` or `gumbel_muzero_policy` the same way).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum SearchVariant {
    Puct(PuctConfig),
    Gumbel(GumbelConfig),
}

impl SearchVariant {
    /// Whether moves are chosen by the search itself (Gumbel: its root noise already samples)
    /// rather than sampled from visit counts afterwards.
    pub fn is_gumbel(&self) -> bool {
        matches!(self, SearchVariant::Gumbel(_))
    }
}

/// How one search chooses where to spend its simulations.
///
/// In TOML the variant's fields sit flat beside the shared ones, as they always have
/// (`gumbel = true`, `gumbel_considered = 8`, `c_puct = 1.25`, ...): `gumbel` picks the
/// variant and the other variant's fields are accepted and ignored, so that configs listing
/// both (as `configs/default.toml` does, and every run directory copied from it) keep loading.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(from = "SearchToml", into = "SearchToml")]
pub struct SearchConfig {
    /// PUCT or Gumbel, with their settings. Gumbel by default: it improves the policy even
    /// with a handful of simulations, which is what a CPU affords.
    pub variant: SearchVariant,
    /// Plies after which a game is adjudicated a draw (0: no cap). Search treats positions at
    /// the cap as drawn, so it sees the same ending the game will have.
    pub ply_cap: u32,
    /// Keep the subtree of the played move for the next search instead of starting afresh:
    /// simulations already spent there are not wasted.
    pub reuse_tree: bool,
    /// Plies of the mate search run at every position the search reaches, before the
    /// network is asked (0: none; 1: mate in one; 3: a mate by checks in up to three plies,
    /// as shogi engines' leaf mate searches do). A position with a forced mate is a proven
    /// win (value 1, never expanded) and at the root its mate is played. The search is exact
    /// and cheap beside a network call, and it turns the net's blind spots for short mates
    /// (missing one, or walking into one) into certainties the search and its training
    /// targets can use.
    pub mate_search_plies: u32,
    /// Softmax temperature applied to the network's priors when a node is expanded (each
    /// prior becomes p^(1/T), renormalised). Above 1 flattens a confident policy so search
    /// looks at the moves it rates low, where a small net's tactical misses hide; 1 keeps
    /// the priors as they are.
    pub policy_temperature: f32,
}

/// The file shape of [`SearchConfig`]: every field optional, the variants' fields flat.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct SearchToml {
    #[serde(skip_serializing_if = "Option::is_none")]
    gumbel: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    gumbel_considered: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    gumbel_scale: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    gumbel_c_visit: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    gumbel_c_scale: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    c_puct: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    fpu_reduction: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    dirichlet_alpha: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    dirichlet_fraction: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    ply_cap: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reuse_tree: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    mate_search_plies: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    policy_temperature: Option<f32>,
}

impl From<SearchToml> for SearchConfig {
    fn from(t: SearchToml) -> Self {
        let d = SearchConfig::default();
        let variant = if t.gumbel.unwrap_or(d.variant.is_gumbel()) {
            let g = GumbelConfig::default();
            SearchVariant::Gumbel(GumbelConfig {
                considered: t.gumbel_considered.unwrap_or(g.considered),
                scale: t.gumbel_scale.unwrap_or(g.scale),
                c_visit: t.gumbel_c_visit.unwrap_or(g.c_visit),
                c_scale: t.gumbel_c_scale.unwrap_or(g.c_scale),
            })
        } else {
            let p = PuctConfig::default();
            SearchVariant::Puct(PuctConfig {
                c_puct: t.c_puct.unwrap_or(p.c_puct),
                fpu_reduction: t.fpu_reduction.unwrap_or(p.fpu_reduction),
                dirichlet_alpha: t.dirichlet_alpha.unwrap_or(p.dirichlet_alpha),
                dirichlet_fraction: t.dirichlet_fraction.unwrap_or(p.dirichlet_fraction),
            })
        };
        SearchConfig {
            variant,
            ply_cap: t.ply_cap.unwrap_or(d.ply_cap),
            reuse_tree: t.reuse_tree.unwrap_or(d.reuse_tree),
            mate_search_plies: t.mate_search_plies.unwrap_or(d.mate_search_plies),
            policy_temperature: t.policy_temperature.unwrap_or(d.policy_temperature),
        }
    }
}

impl From<SearchConfig> for SearchToml {
    /// Only the active variant's fields, so that a config read back is the same config.
    fn from(c: SearchConfig) -> Self {
        let mut t = SearchToml {
            gumbel: Some(c.variant.is_gumbel()),
            ply_cap: Some(c.ply_cap),
            reuse_tree: Some(c.reuse_tree),
            mate_search_plies: Some(c.mate_search_plies),
            policy_temperature: Some(c.policy_temperature),
            ..SearchToml::default()
        };
        match c.variant {
            SearchVariant::Gumbel(g) => {
                t.gumbel_considered = Some(g.considered);
                t.gumbel_scale = Some(g.scale);
                t.gumbel_c_visit = Some(g.c_visit);
                t.gumbel_c_scale = Some(g.c_scale);
            }
            SearchVariant::Puct(p) => {
                t.c_puct = Some(p.c_puct);
                t.fpu_reduction = Some(p.fpu_reduction);
                t.dirichlet_alpha = Some(p.dirichlet_alpha);
                t.dirichlet_fraction = Some(p.dirichlet_fraction);
            }
        }
        t
    }
}

impl Default for SearchConfig {
    fn default() -> Self {
        Self {
            variant: SearchVariant::Gumbel(GumbelConfig::default()),
            ply_cap: DEFAULT_PLY_CAP as u32,
            reuse_tree: true,
            mate_search_plies: 3,
            policy_temperature: 1.0,
        }
    }
}

impl SearchConfig {
    /// Plain PUCT with visit-count targets and no noise: the usual setting for analysis.
    pub fn puct() -> Self {
        Self {
            variant: SearchVariant::Puct(PuctConfig {
                dirichlet_fraction: 0.0,
                ..PuctConfig::default()
            }),
            ..Self::default()
        }
    }

    /// Gumbel search with `considered` root actions and no root noise: deterministic, for
    /// evaluation and analysis.
    pub fn gumbel_deterministic(considered: usize) -> Self {
        Self {
            variant: SearchVariant::Gumbel(GumbelConfig {
                considered,
                scale: 0.0,
                ..GumbelConfig::default()
            }),
            ..Self::default()
        }
    }

    /// The ply cap as the rules crate takes it.
    pub fn ply_cap(&self) -> Option<usize> {
        (self.ply_cap > 0).then_some(self.ply_cap as usize)
    }

    /// Checks every field; see [`ConfigError`].
    pub fn validate(&self) -> Result<(), ConfigError> {
        let finite_nonneg = |v: f32| v.is_finite() && v >= 0.0;
        check(
            self.ply_cap <= 10_000,
            "search.ply_cap",
            self.ply_cap,
            "must be in 0..=10000 (0: no cap)",
        )?;
        match &self.variant {
            SearchVariant::Gumbel(g) => {
                check(
                    (1..=MAX_MOVES).contains(&g.considered),
                    "search.gumbel_considered",
                    g.considered,
                    "must be in 1..=1024",
                )?;
                check(
                    finite_nonneg(g.scale),
                    "search.gumbel_scale",
                    g.scale,
                    "must be finite and >= 0",
                )?;
                check(
                    finite_nonneg(g.c_visit),
                    "search.gumbel_c_visit",
                    g.c_visit,
                    "must be finite and >= 0",
                )?;
                check(
                    g.c_scale.is_finite() && g.c_scale > 0.0,
                    "search.gumbel_c_scale",
                    g.c_scale,
                    "must be finite and > 0",
                )?;
            }
            SearchVariant::Puct(p) => {
                check(
                    p.c_puct.is_finite() && p.c_puct > 0.0,
                    "search.c_puct",
                    p.c_puct,
                    "must be finite and > 0",
                )?;
                check(
                    finite_nonneg(p.fpu_reduction) && p.fpu_reduction <= 2.0,
                    "search.fpu_reduction",
                    p.fpu_reduction,
                    "must be in [0, 2]",
                )?;
                check(
                    p.dirichlet_alpha.is_finite() && p.dirichlet_alpha > 0.0,
                    "search.dirichlet_alpha",
                    p.dirichlet_alpha,
                    "must be finite and > 0",
                )?;
                check(
                    (0.0..=1.0).contains(&p.dirichlet_fraction),
                    "search.dirichlet_fraction",
                    p.dirichlet_fraction,
                    "must be in [0, 1]",
                )?;
            }
        }
        check(
            matches!(self.mate_search_plies, 0 | 1 | 3 | 5),
            "search.mate_search_plies",
            self.mate_search_plies,
            "must be 0, 1, 3 or 5",
        )?;
        check(
            (0.1..=10.0).contains(&self.policy_temperature),
            "search.policy_temperature",
            self.policy_temperature,
            "must be in [0.1, 10]",
        )?;
        Ok(())
    }
}

/// Everything a self-play run needs besides the network and the number of games.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SelfplayConfig {
    /// The search each move runs; its `ply_cap` is overridden by [`SelfplayConfig::ply_cap`].
    pub search: SearchConfig,
    /// Simulations of a full search, whose position becomes a training sample.
    pub full_simulations: u32,
    /// Simulations of a cheap search (playout cap randomization): it only picks the move and
    /// is not trained on, so games get longer for the same compute.
    pub cheap_simulations: u32,
    /// Fraction of moves that get a full search (1 trains on every move, as plain AlphaZero).
    pub full_search_fraction: f32,
    /// Progressive simulation budget (MiniZero), in [0, 1): a run's loop plays a generation at
    /// run progress `p` (0 at the start, 1 at the end of its budget) with both simulation
    /// counts scaled by `1 - r + 2 r p`, so early networks, whose priors a long search mostly
    /// overrules anyway, get more games, later ones deeper searches, and the run's total
    /// stays that of the fixed counts. 0 keeps the counts fixed. See [`Self::at_progress`].
    pub simulation_ramp: f32,
    /// Temperature of the first move. PUCT samples moves in proportion to visits^(1/T);
    /// Gumbel search multiplies its root Gumbel noise by T (capped at 1), which is what
    /// samples its moves.
    pub temperature_start: f32,
    /// Temperature once `temperature_plies` were played (0 plays the most visited move, or
    /// the noiseless Gumbel choice).
    pub temperature_end: f32,
    /// Plies over which the temperature falls linearly from start to end, so openings vary
    /// while the rest of the game is played to win: a blunder sampled late in a game decides
    /// its result, and so mislabels every position before it.
    pub temperature_plies: u32,
    /// A side resigns when its search value stays below this (in [-1, 1]); -1 never resigns.
    pub resign_threshold: f32,
    /// Consecutive own moves below the threshold before resigning, so one noisy cheap search
    /// does not end a game.
    pub resign_consecutive: u32,
    /// Fraction of games played out with resignation off, to measure how often resigning
    /// would have been wrong (the false-resign rate).
    pub resign_disabled_fraction: f32,
    /// Plies after which a game is a draw by adjudication; keeps shuffling games finite.
    pub ply_cap: u32,
    /// Fraction of games that start as handicap games: 1 to `handicap_max_pieces` pieces,
    /// chosen at random, taken from one side's start position. Between equally weak players
    /// material hardly decides games, so without them a value head learns little of it.
    pub handicap_fraction: f32,
    /// Most pieces a handicap game takes away.
    pub handicap_max_pieces: u32,
    /// Games in flight at once: their leaves form one network batch, so this is the batch size.
    pub concurrent_games: usize,
    /// Positions per network call: a round's batch (one leaf per game in flight) is split into
    /// chunks of this size, evaluated in parallel, which is how the network uses every core.
    pub eval_chunk: usize,
    /// Groups the games in flight are split into: while one group's batch is evaluated, the
    /// next group's searches run. 1 evaluates and searches in turn (a CPU wants its cores
    /// for the network); 2 keeps a GPU computing while the CPU searches. Each group's batch
    /// is `concurrent_games / pipeline_groups` positions.
    pub pipeline_groups: usize,
    /// Games per record shard file.
    pub games_per_shard: usize,
    /// Seed of everything random; game `i` uses its own stream derived from (seed, i), so
    /// results do not depend on thread count or scheduling.
    pub seed: u64,
}

impl Default for SelfplayConfig {
    /// Sized for a 2-core CPU and the default 6x64 net (about a thousand evaluations a
    /// second): Gumbel search with 64 simulations on a quarter of the moves and 16 on the
    /// rest averages 28 evaluations a move.
    fn default() -> Self {
        Self {
            search: SearchConfig::default(),
            full_simulations: 64,
            cheap_simulations: 16,
            full_search_fraction: 0.25,
            simulation_ramp: 0.0,
            temperature_start: 1.0,
            temperature_end: 0.1,
            temperature_plies: 30,
            resign_threshold: -0.95,
            resign_consecutive: 3,
            resign_disabled_fraction: 0.1,
            ply_cap: DEFAULT_PLY_CAP as u32,
            handicap_fraction: 0.0,
            handicap_max_pieces: 3,
            concurrent_games: 128,
            eval_chunk: 64,
            pipeline_groups: 1,
            games_per_shard: 100,
            seed: 0,
        }
    }
}

impl SelfplayConfig {
    /// The config a generation at run progress `progress` (clamped to [0, 1]) plays with:
    /// the simulation counts scaled by [`Self::simulation_ramp`], at least 1 each, the cheap
    /// count never above the full one.
    pub fn at_progress(&self, progress: f64) -> SelfplayConfig {
        let r = self.simulation_ramp as f64;
        if r == 0.0 {
            return self.clone();
        }
        let k = 1.0 - r + 2.0 * r * progress.clamp(0.0, 1.0);
        let scale = |n: u32| ((n as f64 * k).round() as u32).clamp(1, crate::mcts::MAX_SIMULATIONS);
        let full = scale(self.full_simulations);
        SelfplayConfig {
            full_simulations: full,
            cheap_simulations: scale(self.cheap_simulations).min(full),
            ..self.clone()
        }
    }

    /// The search settings with the self-play ply cap applied.
    pub fn effective_search(&self) -> SearchConfig {
        SearchConfig {
            ply_cap: self.ply_cap,
            ..self.search.clone()
        }
    }

    /// Checks every field, the nested search config included; see [`ConfigError`].
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.search.validate()?;
        let fraction = |v: f32| (0.0..=1.0).contains(&v);
        check(
            (1..=crate::mcts::MAX_SIMULATIONS).contains(&self.full_simulations),
            "full_simulations",
            self.full_simulations,
            "must be in 1..=10000000",
        )?;
        check(
            self.cheap_simulations <= self.full_simulations,
            "cheap_simulations",
            self.cheap_simulations,
            "must be at most full_simulations",
        )?;
        check(
            fraction(self.full_search_fraction),
            "full_search_fraction",
            self.full_search_fraction,
            "must be in [0, 1]",
        )?;
        check(
            (0.0..1.0).contains(&self.simulation_ramp),
            "simulation_ramp",
            self.simulation_ramp,
            "must be in [0, 1)",
        )?;
        check(
            (0.0..=100.0).contains(&self.temperature_start),
            "temperature_start",
            self.temperature_start,
            "must be in [0, 100]",
        )?;
        check(
            (0.0..=100.0).contains(&self.temperature_end),
            "temperature_end",
            self.temperature_end,
            "must be in [0, 100]",
        )?;
        check(
            (-1.0..=1.0).contains(&self.resign_threshold),
            "resign_threshold",
            self.resign_threshold,
            "must be in [-1, 1]",
        )?;
        check(
            self.resign_consecutive >= 1,
            "resign_consecutive",
            self.resign_consecutive,
            "must be at least 1",
        )?;
        check(
            fraction(self.resign_disabled_fraction),
            "resign_disabled_fraction",
            self.resign_disabled_fraction,
            "must be in [0, 1]",
        )?;
        check(
            (1..=10_000).contains(&self.ply_cap),
            "ply_cap",
            self.ply_cap,
            "must be in 1..=10000",
        )?;
        check(
            fraction(self.handicap_fraction),
            "handicap_fraction",
            self.handicap_fraction,
            "must be in [0, 1]",
        )?;
        check(
            (1..=13).contains(&self.handicap_max_pieces),
            "handicap_max_pieces",
            self.handicap_max_pieces,
            "must be in 1..=13 (a side has 13 pieces besides its General)",
        )?;
        check(
            (1..=65_536).contains(&self.concurrent_games),
            "concurrent_games",
            self.concurrent_games,
            "must be in 1..=65536",
        )?;
        check(
            (1..=65_536).contains(&self.eval_chunk),
            "eval_chunk",
            self.eval_chunk,
            "must be in 1..=65536",
        )?;
        check(
            (1..=8).contains(&self.pipeline_groups),
            "pipeline_groups",
            self.pipeline_groups,
            "must be in 1..=8",
        )?;
        check(
            self.pipeline_groups <= self.concurrent_games,
            "pipeline_groups",
            self.pipeline_groups,
            "must not exceed concurrent_games (every group needs a game)",
        )?;
        check(
            (1..=10_000).contains(&self.games_per_shard),
            "games_per_shard",
            self.games_per_shard,
            "must be in 1..=10000",
        )?;
        Ok(())
    }

    /// Temperature for the move at `ply`.
    pub fn temperature(&self, ply: usize) -> f32 {
        if self.temperature_plies == 0 || ply >= self.temperature_plies as usize {
            return self.temperature_end;
        }
        let t = ply as f32 / self.temperature_plies as f32;
        self.temperature_start + (self.temperature_end - self.temperature_start) * t
    }

    /// Whether resignation is possible at all with these settings.
    pub fn resign_enabled(&self) -> bool {
        self.resign_threshold > -1.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every bound names its field; huge values are refused here rather than aborting on
    /// allocation in the middle of a run.
    #[test]
    fn hostile_values_are_refused_by_field() {
        for (text, field) in [
            ("full_simulations = 4000000000", "full_simulations"),
            ("games_per_shard = 1000000000", "games_per_shard"),
            ("concurrent_games = 1000000000", "concurrent_games"),
            ("eval_chunk = 0", "eval_chunk"),
            ("pipeline_groups = 0", "pipeline_groups"),
            ("pipeline_groups = 9", "pipeline_groups"),
            (
                "concurrent_games = 2\npipeline_groups = 3",
                "pipeline_groups",
            ),
            ("temperature_start = nan", "temperature_start"),
            ("temperature_end = 1e30", "temperature_end"),
            ("resign_threshold = nan", "resign_threshold"),
            ("full_search_fraction = nan", "full_search_fraction"),
            ("ply_cap = 0", "ply_cap"),
            (
                "[search]\ngumbel_considered = 100000",
                "search.gumbel_considered",
            ),
            ("[search]\nply_cap = 4000000000", "search.ply_cap"),
            ("[search]\ngumbel = false\nc_puct = nan", "search.c_puct"),
            (
                "[search]\ngumbel = false\ndirichlet_fraction = nan",
                "search.dirichlet_fraction",
            ),
            (
                "[search]\npolicy_temperature = nan",
                "search.policy_temperature",
            ),
        ] {
            let c: SelfplayConfig = toml::from_str(text).expect(text);
            let e = c.validate().expect_err(text);
            assert_eq!(e.field, field, "{text}: {e}");
            assert!(e.to_string().contains(field), "{e}");
        }
    }

    #[test]
    fn the_default_ply_cap_is_the_shared_one() {
        let c = SelfplayConfig::default();
        assert_eq!(c.ply_cap as usize, DEFAULT_PLY_CAP);
        assert_eq!(c.effective_search().ply_cap(), Some(DEFAULT_PLY_CAP));
        c.validate().unwrap();
    }
}
