//! Self-play settings.
//!
//! [`SelfplayConfig`] deserializes from TOML with every field optional (missing fields keep
//! their defaults), so a config file only names what it changes; `validate` then rejects
//! values that would make self-play misbehave silently rather than fail loudly.

use serde::{Deserialize, Serialize};
use yari_rules::DEFAULT_PLY_CAP;
use yari_search::config::check;
use yari_search::{ConfigError, SearchConfig};

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
    /// The default run's self-play, `[selfplay]` of `configs/default.toml` (a test in
    /// yari-loop holds the two equal): Gumbel search with 64 simulations on a quarter of the
    /// moves and 16 on the rest.
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
            resign_threshold: -1.0,
            resign_consecutive: 3,
            resign_disabled_fraction: 0.1,
            ply_cap: DEFAULT_PLY_CAP as u32,
            handicap_fraction: 0.0,
            handicap_max_pieces: 3,
            concurrent_games: 128,
            eval_chunk: 64,
            pipeline_groups: 1,
            games_per_shard: 40,
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
        let scale = |n: u32| ((n as f64 * k).round() as u32).clamp(1, yari_search::MAX_SIMULATIONS);
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
            (1..=yari_search::MAX_SIMULATIONS).contains(&self.full_simulations),
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
