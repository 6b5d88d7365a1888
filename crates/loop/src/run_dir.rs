//! [`RunDir`]: the one owner of a run directory's files and of what they mean.
//!
//! Paths come from [`yari_io::layout`]; contents are typed here ([`RunState`],
//! [`RatingEntry`], [`GenerationSummary`]) and read and written only through
//! [`yari_io`]'s crash-safe readers and writers. Players are named by a [`PlayerKey`], never by
//! a path as the user typed it, so `--run-dir ./x` and `--run-dir x` are the same run.

use std::fmt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use yari_io::layout::{generation_name, parse_generation_name};
use yari_io::RunPaths;

use crate::LoopError;

/// The phase of a generation that runs next.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// Play the generation's self-play games with the best network.
    Selfplay,
    /// Train a candidate on the replay window.
    Train,
    /// Match the candidate against the best; promote it or not.
    Gate,
    /// Rate the best network against fixed baselines and close the generation.
    Rate,
}

/// Progress of a run (`state.json`), rewritten atomically after every phase.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunState {
    /// The generation being worked on (1-based; generation 0 is the random network).
    pub generation: u32,
    /// The phase that runs next.
    pub phase: Phase,
    /// The current best network, relative to the run directory (`models/gen-NNNN.yari`).
    pub best: String,
    /// Trainer step at which this generation's training ends, once training has started.
    pub train_target: Option<u64>,
    /// Games this generation plays when that is more than `games_per_generation`: set when
    /// the replay window was still smaller than `train.window.min_positions` after them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub games_target: Option<u64>,
    /// Wall time spent by all sessions of this run before the current one.
    pub elapsed_s: f64,
    /// What this generation's finished phases measured, so a resumed generation still
    /// reports them.
    #[serde(default)]
    pub summary: GenerationSummary,
}

impl RunState {
    /// The state of a new run: generation 1's self-play, with generation 0 as the best.
    pub fn new_run() -> RunState {
        RunState {
            generation: 1,
            phase: Phase::Selfplay,
            best: RunPaths::model_rel(0),
            train_target: None,
            games_target: None,
            elapsed_s: 0.0,
            summary: GenerationSummary::default(),
        }
    }

    /// The games the current generation plays (or takes from workers).
    pub fn games_target(&self, config: &crate::RunConfig) -> u64 {
        let base = config.run.games_per_generation as u64;
        self.games_target.map_or(base, |t| t.max(base))
    }

    /// The key of the best network.
    pub fn best_key(&self) -> PlayerKey {
        PlayerKey::of_model(&self.best)
    }

    /// What no run writes: a generation past [`MAX_GENERATION`] (whose counter would wrap
    /// onto generation 0 and overwrite the run's first networks), a best network outside
    /// the run directory, a negative or non-finite wall time.
    pub fn check(&self) -> Result<(), String> {
        if self.generation > MAX_GENERATION {
            return Err(format!(
                "generation {} is past the last a run may reach ({MAX_GENERATION})",
                self.generation
            ));
        }
        let best = Path::new(&self.best);
        let inside = !self.best.is_empty()
            && best
                .components()
                .all(|c| matches!(c, std::path::Component::Normal(_)));
        if !inside {
            return Err(format!(
                "best network {:?} is not a path inside the run directory",
                self.best
            ));
        }
        if !(self.elapsed_s.is_finite() && self.elapsed_s >= 0.0) {
            return Err(format!("elapsed_s {} is not a wall time", self.elapsed_s));
        }
        Ok(())
    }
}

/// The run directory's writer lock ([`RunDir::lock_writer`]), held while this lives.
#[derive(Debug)]
pub struct WriterLock {
    _file: std::fs::File,
}

/// The last generation a run may reach: far beyond any run's budget, far below where the
/// counter would wrap.
pub const MAX_GENERATION: u32 = 100_000;

/// How the run's files name a player: `gen-0012` for a network of this run, the arena spec
/// (`random`, `alphabeta:2`) for anything else. Independent of where the run directory is and
/// how its path was typed.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct PlayerKey(String);

impl PlayerKey {
    /// Generation `g`'s network.
    pub fn generation(g: u32) -> PlayerKey {
        PlayerKey(generation_name(g))
    }

    /// A baseline or other non-run player, by its arena spec.
    pub fn spec(spec: &str) -> PlayerKey {
        PlayerKey(spec.to_string())
    }

    /// The key of a network file of the run (`models/gen-0012.yari` → `gen-0012`).
    pub fn of_model(rel: &str) -> PlayerKey {
        let stem = Path::new(rel)
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or(rel);
        match parse_generation_name(stem) {
            Some(g) => PlayerKey::generation(g),
            None => PlayerKey(rel.to_string()),
        }
    }

    /// The key of a name found in older files: a relative model path (`models/gen-0003.yari`,
    /// as `ratings.jsonl` once recorded), an arena name with the run's path inside
    /// (`model:data/runs/x/models/gen-0003.yari:16`, as the ledger once recorded), or a key.
    pub fn from_recorded(name: &str) -> PlayerKey {
        let body = name.strip_prefix("model").map(|rest| {
            // `model[opts]:PATH:SIMS` or `model:PATH:SIMS`.
            let rest = match rest.strip_prefix('[') {
                Some(r) => r.split_once(']').map_or(r, |(_, after)| after),
                None => rest,
            };
            let rest = rest.strip_prefix(':').unwrap_or(rest);
            rest.rsplit_once(':').map_or(rest, |(path, _sims)| path)
        });
        let candidate = body.unwrap_or(name);
        if candidate.ends_with(".yari") || body.is_some() {
            let key = PlayerKey::of_model(candidate);
            if parse_generation_name(key.as_str()).is_some() {
                return key;
            }
        }
        PlayerKey(name.to_string())
    }

    /// The generation of a run network's key.
    pub fn generation_of(&self) -> Option<u32> {
        parse_generation_name(&self.0)
    }

    /// The key as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for PlayerKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// One line of `ratings.jsonl`: the best network of a generation against one baseline.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RatingEntry {
    /// Always `rating`.
    #[serde(default = "rating_kind")]
    pub kind: String,
    /// The generation whose rating phase played it.
    pub generation: u32,
    /// The rated network (older runs recorded its path; [`RunDir::read_ratings`] turns that
    /// into the key).
    pub player: PlayerKey,
    /// The baseline's arena spec.
    pub opponent: String,
    /// Games won by the network.
    pub wins: u64,
    /// Games drawn.
    pub draws: u64,
    /// Games lost.
    pub losses: u64,
    /// Score of the network, 0–1.
    pub score: f64,
    /// Elo of the network relative to the baseline (`None` for a 0% or 100% score).
    pub elo: Option<f64>,
    /// Lower end of the 95% interval.
    pub elo_low: Option<f64>,
    /// Upper end of the 95% interval.
    pub elo_high: Option<f64>,
}

fn rating_kind() -> String {
    "rating".into()
}

/// One entry of `summary.json`: what a finished generation did.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct GenerationSummary {
    /// The generation.
    pub generation: u32,
    /// Self-play games of the generation (on disk when it finished).
    pub games: u64,
    /// Positions of the games played in this generation's sessions.
    pub positions: u64,
    /// Seconds of self-play.
    pub selfplay_s: f64,
    /// Mean training loss of this generation's steps (`None` when none were run).
    pub loss: Option<f64>,
    /// Mean policy loss.
    pub policy_loss: Option<f64>,
    /// Mean value loss.
    pub value_loss: Option<f64>,
    /// Trainer step after training.
    pub train_step: u64,
    /// Learning rate of the generation's last training step (`None`: no step was run, or
    /// a summary written before it was recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lr: Option<f64>,
    /// The candidate trained in this generation, relative to the run directory.
    pub candidate: String,
    /// Whether the candidate became the best.
    pub promoted: bool,
    /// The candidate's gating score (`None`: no gating match).
    pub gate_score: Option<f64>,
    /// The candidate's gating Elo against the best.
    pub gate_elo: Option<f64>,
    /// The best network after the generation, relative to the run directory.
    pub best: String,
    /// The best network against each baseline (empty when not rated this generation).
    pub ratings: Vec<RatingEntry>,
    /// Wall time of the run when the generation finished.
    pub elapsed_s: f64,
    /// Under `yari learn`: games of the generation from each worker, by worker id.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub workers: std::collections::BTreeMap<String, u64>,
    /// The backends the process that finished the generation computed on: its device and
    /// the arithmetic of inference and training (`None` in summaries written before it was
    /// recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backends: Option<yari_model::BackendRecord>,
}

/// A run directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunDir {
    paths: RunPaths,
}

impl RunDir {
    /// The run directory at `root` (nothing is read or created).
    pub fn new(root: impl Into<PathBuf>) -> RunDir {
        RunDir {
            paths: RunPaths::new(root),
        }
    }

    /// Where each file is.
    pub fn paths(&self) -> &RunPaths {
        &self.paths
    }

    /// The directory.
    pub fn root(&self) -> &Path {
        self.paths.root()
    }

    /// Creates the directory (and its parents).
    pub fn create(&self) -> Result<(), LoopError> {
        let not_a_directory = || {
            LoopError::io(
                self.root(),
                std::io::Error::other(
                    "exists and is not a directory: a run directory must be a directory \
                     (give --run-dir a new or existing directory)",
                ),
            )
        };
        if self.root().exists() && !self.root().is_dir() {
            return Err(not_a_directory());
        }
        std::fs::create_dir_all(self.root()).map_err(|e| LoopError::io(self.root(), e))?;
        if !self.root().is_dir() {
            return Err(not_a_directory());
        }
        Ok(())
    }

    /// The run's state, `None` for a directory where no run has started.
    pub fn load_state(&self) -> Result<Option<RunState>, LoopError> {
        let path = self.paths.state_file();
        let bytes = match yari_io::read_regular_file(&path, yari_io::MAX_LOG_BYTES) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(LoopError::io(&path, e)),
        };
        let state: RunState = serde_json::from_slice(&bytes).map_err(|e| LoopError::Corrupt {
            path: path.clone(),
            what: format!(
                "{e}; the run's progress cannot be read (restore the file from a backup, or \
                 see `yari check` for what else is intact)"
            ),
        })?;
        state
            .check()
            .map_err(|what| LoopError::Corrupt { path, what })?;
        Ok(Some(state))
    }

    /// Makes this process the run's one writer until the returned lock is dropped (or the
    /// process ends, killed or not): a second `yari run` or `yari learn` on the directory is
    /// refused, naming the holder, instead of doubling every record. An OS advisory lock, so
    /// a killed holder never leaves the directory locked.
    pub fn lock_writer(&self, role: &str) -> Result<WriterLock, LoopError> {
        use std::io::Write;
        let path = self.paths.writer_lock_file();
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(|e| LoopError::io(&path, e))?;
        match file.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                let holder = yari_io::read_regular_text(&path, 4096).unwrap_or_default();
                let holder = holder.trim();
                return Err(LoopError::Busy {
                    path: self.root().to_path_buf(),
                    holder: if holder.is_empty() {
                        "a process that has not said who it is yet".into()
                    } else {
                        holder.to_string()
                    },
                });
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(LoopError::io(&path, e)),
        }
        let since = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let who = format!(
            "{role}, pid {} on {}, since unix time {since}\n",
            std::process::id(),
            host_name().unwrap_or_else(|| "an unnamed host".into())
        );
        // Only the holder writes the file; a failure here leaves the lock held all the same.
        let _ = file
            .set_len(0)
            .and_then(|()| (&file).write_all(who.as_bytes()));
        Ok(WriterLock { _file: file })
    }

    /// The run's state; a directory without one is an error naming it.
    pub fn require_state(&self) -> Result<RunState, LoopError> {
        self.load_state()?.ok_or_else(|| LoopError::NotARun {
            path: self.root().to_path_buf(),
        })
    }

    /// Writes the state atomically.
    pub fn save_state(&self, state: &RunState) -> Result<(), LoopError> {
        let bytes = serde_json::to_vec_pretty(state).expect("state serialises");
        Ok(yari_io::write_atomic(&self.paths.state_file(), &bytes)?)
    }

    /// The best network's file.
    pub fn best_model(&self) -> Result<PathBuf, LoopError> {
        Ok(self.paths.resolve(self.require_state()?.best))
    }

    /// Every rating recorded, keys normalised (older runs named the network by its path).
    pub fn read_ratings(&self) -> Result<yari_io::jsonl::Records<RatingEntry>, LoopError> {
        let mut read = yari_io::jsonl::read::<RatingEntry>(&self.paths.ratings_file())?;
        for r in &mut read.records {
            r.player = PlayerKey::from_recorded(r.player.as_str());
        }
        Ok(read)
    }

    /// Appends one rating.
    pub fn append_rating(&self, entry: &RatingEntry) -> Result<(), LoopError> {
        Ok(yari_io::jsonl::append(&self.paths.ratings_file(), entry)?)
    }

    /// The latest rating of `player` against each opponent.
    pub fn ratings_of(&self, player: &PlayerKey) -> Result<Vec<RatingEntry>, LoopError> {
        let mut latest: Vec<RatingEntry> = Vec::new();
        for r in self.read_ratings()?.records {
            if &r.player == player {
                latest.retain(|l| l.opponent != r.opponent);
                latest.push(r);
            }
        }
        Ok(latest)
    }

    /// Every finished generation's summary (empty before the first).
    pub fn read_summaries(&self) -> Result<Vec<GenerationSummary>, LoopError> {
        let path = self.paths.summary_file();
        match yari_io::read_regular_file(&path, yari_io::MAX_LOG_BYTES) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| LoopError::Corrupt {
                path,
                what: e.to_string(),
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
            Err(e) => Err(LoopError::io(&path, e)),
        }
    }

    /// Records a finished generation, replacing an earlier entry of the same generation.
    pub fn record_summary(&self, summary: &GenerationSummary) -> Result<(), LoopError> {
        let mut all = self.read_summaries()?;
        all.retain(|s| s.generation != summary.generation);
        all.push(summary.clone());
        all.sort_by_key(|s| s.generation);
        let bytes = serde_json::to_vec_pretty(&all).expect("summaries serialise");
        Ok(yari_io::write_atomic(&self.paths.summary_file(), &bytes)?)
    }
}

/// This machine's name: the kernel's (Linux), else /etc/hostname. Not $HOSTNAME, which a
/// shell sets but seldom exports (a process started by a scheduler rarely sees it).
pub fn host_name() -> Option<String> {
    ["/proc/sys/kernel/hostname", "/etc/hostname"]
        .iter()
        .find_map(|f| std::fs::read_to_string(f).ok())
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_do_not_depend_on_how_the_path_was_typed() {
        let a = PlayerKey::from_recorded("model:./runs/x/models/gen-0003.yari:16");
        let b = PlayerKey::from_recorded("model:runs/x/models/gen-0003.yari:16");
        let c = PlayerKey::from_recorded("model[c_puct=2]:/abs/runs/x/models/gen-0003.yari:16");
        let d = PlayerKey::from_recorded("models/gen-0003.yari");
        assert_eq!(a, PlayerKey::generation(3));
        assert_eq!((&a, &a, &a), (&b, &c, &d));
        assert_eq!(PlayerKey::from_recorded("gen-0003"), a);
        assert_eq!(
            PlayerKey::from_recorded("alphabeta:2").as_str(),
            "alphabeta:2"
        );
        assert_eq!(PlayerKey::from_recorded("random").as_str(), "random");
        assert_eq!(a.generation_of(), Some(3));
    }

    #[test]
    fn a_corrupt_state_file_is_one_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let run = RunDir::new(dir.path());
        assert_eq!(run.load_state().unwrap(), None);
        run.save_state(&RunState::new_run()).unwrap();
        assert_eq!(run.load_state().unwrap(), Some(RunState::new_run()));
        std::fs::write(run.paths().state_file(), b"{\"generation\": 3, \"pha").unwrap();
        let err = run.load_state().unwrap_err().to_string();
        assert!(err.contains("state.json"), "{err}");
        assert!(!err.contains('\n'), "{err}");
    }

    #[test]
    fn a_run_directory_that_is_a_file_is_named_as_such() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("afile");
        std::fs::write(&file, b"x").unwrap();
        let err = RunDir::new(&file).create().unwrap_err().to_string();
        assert!(
            err.contains("afile") && err.contains("is not a directory"),
            "{err}"
        );
    }

    /// A state no run writes is refused on load, naming what is wrong, before anything could
    /// be overwritten: a generation counter about to wrap, a best network outside the run.
    #[test]
    fn a_state_no_run_writes_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let run = RunDir::new(dir.path());
        for (state, says) in [
            (
                RunState {
                    generation: u32::MAX,
                    ..RunState::new_run()
                },
                "generation 4294967295",
            ),
            (
                RunState {
                    best: "../../../../etc/passwd".into(),
                    ..RunState::new_run()
                },
                "not a path inside the run directory",
            ),
            (
                RunState {
                    best: "/etc/passwd".into(),
                    ..RunState::new_run()
                },
                "not a path inside the run directory",
            ),
        ] {
            run.save_state(&state).unwrap();
            let err = run.load_state().unwrap_err().to_string();
            assert!(err.contains("state.json") && err.contains(says), "{err}");
        }
        let last = RunState {
            generation: MAX_GENERATION,
            ..RunState::new_run()
        };
        run.save_state(&last).unwrap();
        assert_eq!(run.load_state().unwrap(), Some(last));
    }

    #[test]
    fn old_rating_lines_read_with_keys() {
        let dir = tempfile::tempdir().unwrap();
        let run = RunDir::new(dir.path());
        std::fs::write(
            run.paths().ratings_file(),
            "{\"kind\":\"rating\",\"generation\":2,\"player\":\"models/gen-0002.yari\",\
             \"opponent\":\"random\",\"wins\":3,\"draws\":0,\"losses\":1,\"score\":0.75,\
             \"elo\":190.8,\"elo_low\":null,\"elo_high\":null}\n",
        )
        .unwrap();
        let r = run.ratings_of(&PlayerKey::generation(2)).unwrap();
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].wins, 3);
    }
}
