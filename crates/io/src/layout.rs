//! Where each file of a run directory lives: the one list of names, so that the crates that
//! write a run (self-play, training, the arena, the loop) and those that read it (`yari check`,
//! `ratings`, `export`, the plots) cannot disagree. Typed access to the files' contents is
//! `yari_loop::RunDir`'s; this is only the map, low enough in the dependency order for every
//! crate to use.

use std::path::{Path, PathBuf};

/// The run's config, fixed at creation (a resumed run uses it).
pub const CONFIG_FILE: &str = "config.toml";
/// The loop's progress: generation, phase, best network.
pub const STATE_FILE: &str = "state.json";
/// Networks, one per generation: `models/gen-NNNN.yari`.
pub const MODELS_DIR: &str = "models";
/// Self-play shards, one folder per generation: `games/gen-NNNN/*.yshard`.
pub const GAMES_DIR: &str = "games";
/// The trainer's resumable state.
pub const TRAIN_DIR: &str = "train";
/// The trainer's state pointer (step, checkpoint), inside [`TRAIN_DIR`].
pub const TRAIN_STATE_FILE: &str = "state.json";
/// The config of the trainer's latest opening, for the record, inside [`TRAIN_DIR`].
pub const TRAIN_CONFIG_FILE: &str = "config.json";
/// Position counts of the shards the trainer has seen, inside [`TRAIN_DIR`].
pub const SHARD_INDEX_FILE: &str = "shard-index.json";
/// Where workers drop their shards for the learner (`yari worker`, `yari learn`).
pub const INCOMING_DIR: &str = "incoming";
/// Where shards that fail verification are set aside, by the learner and by `yari run`.
pub const REJECTED_DIR: &str = "rejected";
/// The workers' status files, `workers/<id>.json`.
pub const WORKERS_DIR: &str = "workers";
/// The marker the learner writes when the run's budget is spent: workers stop.
pub const FINISHED_FILE: &str = "finished";
/// The trainer's per-step metrics (JSON lines).
pub const METRICS_FILE: &str = "metrics.jsonl";
/// Every arena game (gating and rating), one JSON-lines file per match.
pub const ARENA_DIR: &str = "arena";
/// Every gating decision (JSON lines).
pub const LEDGER_FILE: &str = "ledger.jsonl";
/// Every rating of a best network against a baseline (JSON lines).
pub const RATINGS_FILE: &str = "ratings.jsonl";
/// One entry per finished generation (a JSON array).
pub const SUMMARY_FILE: &str = "summary.json";
/// Plots refreshed after each generation.
pub const PLOTS_DIR: &str = "plots";
/// TensorBoard event files (`tensorboard --logdir RUN_DIR/tensorboard`): the training scalars
/// per step and the run's per generation.
pub const TENSORBOARD_DIR: &str = "tensorboard";
/// Held (an advisory lock) by the one process that writes the run: `yari run` or `yari learn`.
/// It says who holds it; a kill releases the lock, the file stays.
pub const WRITER_LOCK_FILE: &str = "writer.lock";
/// File extension of network checkpoints.
pub const MODEL_EXTENSION: &str = "yari";

/// `gen-NNNN`: the name of generation `g`'s network, games folder and matches, and the key
/// that identifies its network as a player.
pub fn generation_name(g: u32) -> String {
    format!("gen-{g:04}")
}

/// The generation of a `gen-NNNN` name (or a file stem like it), if it is one.
pub fn parse_generation_name(name: &str) -> Option<u32> {
    let digits = name.strip_prefix("gen-")?;
    if digits.len() < 4 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// `text` with every character but ASCII letters, digits and those in `keep` replaced by `_`:
/// a host name, an opponent spec or a game id made safe to put in a file name or a tag.
pub fn name_part(text: &str, keep: &[char]) -> String {
    text.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || keep.contains(&c) {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// The paths of one run directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunPaths {
    root: PathBuf,
}

impl RunPaths {
    /// The run directory at `root` (nothing is checked or created).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        RunPaths { root: root.into() }
    }

    /// The directory itself.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `root/rel`, for the relative paths the run's own files record.
    pub fn resolve(&self, rel: impl AsRef<Path>) -> PathBuf {
        self.root.join(rel)
    }

    /// See [`CONFIG_FILE`].
    pub fn config_file(&self) -> PathBuf {
        self.root.join(CONFIG_FILE)
    }

    /// See [`STATE_FILE`].
    pub fn state_file(&self) -> PathBuf {
        self.root.join(STATE_FILE)
    }

    /// See [`TENSORBOARD_DIR`].
    pub fn tensorboard_dir(&self) -> PathBuf {
        self.root.join(TENSORBOARD_DIR)
    }

    /// See [`WRITER_LOCK_FILE`].
    pub fn writer_lock_file(&self) -> PathBuf {
        self.root.join(WRITER_LOCK_FILE)
    }

    /// See [`MODELS_DIR`].
    pub fn models_dir(&self) -> PathBuf {
        self.root.join(MODELS_DIR)
    }

    /// `models/gen-NNNN.yari`, relative to the run directory, as `state.json` records it.
    pub fn model_rel(g: u32) -> String {
        format!("{MODELS_DIR}/{}.{MODEL_EXTENSION}", generation_name(g))
    }

    /// Generation `g`'s network.
    pub fn model_file(&self, g: u32) -> PathBuf {
        self.root.join(Self::model_rel(g))
    }

    /// See [`GAMES_DIR`].
    pub fn games_dir(&self) -> PathBuf {
        self.root.join(GAMES_DIR)
    }

    /// Generation `g`'s self-play shards.
    pub fn generation_games_dir(&self, g: u32) -> PathBuf {
        self.games_dir().join(generation_name(g))
    }

    /// See [`TRAIN_DIR`].
    pub fn train_dir(&self) -> PathBuf {
        self.root.join(TRAIN_DIR)
    }

    /// See [`TRAIN_STATE_FILE`].
    pub fn train_state_file(&self) -> PathBuf {
        self.train_dir().join(TRAIN_STATE_FILE)
    }

    /// See [`SHARD_INDEX_FILE`].
    pub fn shard_index_file(&self) -> PathBuf {
        self.train_dir().join(SHARD_INDEX_FILE)
    }

    /// See [`INCOMING_DIR`].
    pub fn incoming_dir(&self) -> PathBuf {
        self.root.join(INCOMING_DIR)
    }

    /// See [`REJECTED_DIR`].
    pub fn rejected_dir(&self) -> PathBuf {
        self.root.join(REJECTED_DIR)
    }

    /// See [`WORKERS_DIR`].
    pub fn workers_dir(&self) -> PathBuf {
        self.root.join(WORKERS_DIR)
    }

    /// See [`FINISHED_FILE`].
    pub fn finished_file(&self) -> PathBuf {
        self.root.join(FINISHED_FILE)
    }

    /// See [`METRICS_FILE`].
    pub fn metrics_file(&self) -> PathBuf {
        self.root.join(METRICS_FILE)
    }

    /// See [`ARENA_DIR`].
    pub fn arena_dir(&self) -> PathBuf {
        self.root.join(ARENA_DIR)
    }

    /// See [`LEDGER_FILE`].
    pub fn ledger_file(&self) -> PathBuf {
        self.root.join(LEDGER_FILE)
    }

    /// See [`RATINGS_FILE`].
    pub fn ratings_file(&self) -> PathBuf {
        self.root.join(RATINGS_FILE)
    }

    /// See [`SUMMARY_FILE`].
    pub fn summary_file(&self) -> PathBuf {
        self.root.join(SUMMARY_FILE)
    }

    /// See [`PLOTS_DIR`].
    pub fn plots_dir(&self) -> PathBuf {
        self.root.join(PLOTS_DIR)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generation_names_round_trip() {
        assert_eq!(generation_name(12), "gen-0012");
        assert_eq!(parse_generation_name("gen-0012"), Some(12));
        assert_eq!(parse_generation_name("gen-12345"), Some(12345));
        assert_eq!(parse_generation_name("gen-12"), None);
        assert_eq!(parse_generation_name("gen-00x1"), None);
        assert_eq!(RunPaths::model_rel(3), "models/gen-0003.yari");
        let p = RunPaths::new("r");
        assert_eq!(p.generation_games_dir(3), Path::new("r/games/gen-0003"));
    }
}
