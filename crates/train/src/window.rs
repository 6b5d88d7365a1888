//! The replay window: the newest training positions over all generations, sampled uniformly
//! or with policy surprise weighting.
//!
//! Only the game records (moves and sparse search targets, a few hundred bytes a position)
//! stay in memory; a sampled position is rebuilt by replaying its game from `start_fen` up to
//! the sample's ply, which also rebuilds the repetition history the encoding depends on, and
//! then encoded. Batches are built on rayon threads by a background producer a few steps ahead
//! of the optimizer, so the training step rarely waits for data.
//!
//! Batch `s` is drawn with a ChaCha8 RNG seeded with the run's seed on stream `s`: the batch
//! depends only on (seed, step, window contents), never on how many batches were drawn before
//! in this process, which is what makes a resumed run draw the same batches as an
//! uninterrupted one.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{sync_channel, Receiver};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::SystemTime;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use yari_model::net::{SHORT_TERM_VALUE_HORIZONS, SHORT_TERM_WDL_SIZE};
use yari_rules::encoding::{encode, try_index_of, INPUT_SIZE, POLICY_SIZE};
use yari_rules::{Move, Position};
use yari_selfplay::{list_shards, read_shard, GameEnd, GameRecord, Sample};

use crate::config::WindowConfig;
use crate::error::TrainError;

/// One shard file as last seen on disk.
struct CachedShard {
    len: u64,
    modified: SystemTime,
    positions: usize,
    /// Loaded while the shard is (partly) inside the window; dropped when it falls out.
    games: Option<Arc<Vec<GameRecord>>>,
}

/// Position counts of shards, persisted so that a restarted trainer knows the size of old
/// shards (which the tapered window needs) without reading them again; only shards inside
/// the window are read.
#[derive(Debug, Default, PartialEq, Serialize, Deserialize)]
struct ShardIndex {
    /// Keyed by the shard's path.
    shards: BTreeMap<String, IndexEntry>,
}

#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
struct IndexEntry {
    len: u64,
    modified_s: u64,
    modified_ns: u32,
    positions: usize,
}

fn split_time(t: SystemTime) -> (u64, u32) {
    let d = t.duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default();
    (d.as_secs(), d.subsec_nanos())
}

/// Tracks the shard directory and builds window snapshots, reading each shard once per
/// process (and again only if its size or modification time changes).
pub struct ReplayWindow {
    games_dir: PathBuf,
    config: WindowConfig,
    cache: HashMap<PathBuf, CachedShard>,
    /// Where the shard index is kept, if anywhere.
    index_path: Option<PathBuf>,
    /// The index as read at the first refresh (or last written).
    index: Option<ShardIndex>,
    /// Shards that could not be read, with why, since [`ReplayWindow::take_skipped`]: left out
    /// of the window instead of stopping training (a damaged shard must not stop every resume).
    skipped: Vec<(PathBuf, String)>,
}

impl ReplayWindow {
    /// A window over the shards in `games_dir` (and its immediate subdirectories).
    pub fn new(games_dir: PathBuf, config: WindowConfig) -> Self {
        Self {
            games_dir,
            config,
            cache: HashMap::new(),
            index_path: None,
            index: None,
            skipped: Vec::new(),
        }
    }

    /// The shards left out since the last call because they could not be read, with why.
    pub fn take_skipped(&mut self) -> Vec<(PathBuf, String)> {
        std::mem::take(&mut self.skipped)
    }

    /// Keeps the shards' position counts in `path` (JSON) between processes. An unreadable
    /// index is ignored and rebuilt.
    pub fn with_index(mut self, path: PathBuf) -> Self {
        self.index_path = Some(path);
        self
    }

    /// The directory shards are read from.
    pub fn games_dir(&self) -> &Path {
        &self.games_dir
    }

    /// Shard paths: `*.yshard` in the games directory and its immediate subdirectories
    /// (e.g. one per generation), temporary files excluded. A missing directory is empty.
    fn shard_paths(&self) -> Result<Vec<PathBuf>, TrainError> {
        let dir = &self.games_dir;
        if !dir.exists() {
            return Ok(Vec::new());
        }
        let mut out = list_shards(dir).map_err(|e| TrainError::shard(dir, e))?;
        let entries = std::fs::read_dir(dir).map_err(|e| TrainError::io(dir, e))?;
        for entry in entries {
            let path = entry.map_err(|e| TrainError::io(dir, e))?.path();
            let hidden = path
                .file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with('.'));
            if path.is_dir() && !hidden {
                out.extend(list_shards(&path).map_err(|e| TrainError::shard(&path, e))?);
            }
        }
        Ok(out)
    }

    /// Rescans the directory and returns the current window.
    ///
    /// Shards are ordered by path, numbers by value (`gen-9999` before `gen-10000`), newest
    /// last: the run directory's names carry the order, while modification times change when
    /// a run directory is copied. The window is the newest `config.window_size(total)`
    /// positions, where the oldest game in it may be cut.
    pub fn refresh(&mut self) -> Result<WindowSnapshot, TrainError> {
        if self.index.is_none() {
            self.index = Some(
                self.index_path
                    .as_ref()
                    .and_then(|p| std::fs::read(p).ok())
                    .and_then(|b| serde_json::from_slice(&b).ok())
                    .unwrap_or_default(),
            );
        }
        let paths = self.shard_paths()?;
        let mut seen = Vec::with_capacity(paths.len());
        for path in paths {
            let meta = std::fs::metadata(&path).map_err(|e| TrainError::io(&path, e))?;
            let modified = meta.modified().unwrap_or(SystemTime::UNIX_EPOCH);
            let fresh = self
                .cache
                .get(&path)
                .is_some_and(|c| c.len == meta.len() && c.modified == modified);
            let (modified_s, modified_ns) = split_time(modified);
            let indexed = self
                .index
                .as_ref()
                .and_then(|i| i.shards.get(&*path.to_string_lossy()))
                .filter(|e| {
                    e.len == meta.len()
                        && e.modified_s == modified_s
                        && e.modified_ns == modified_ns
                });
            if let (false, Some(e)) = (fresh, indexed) {
                self.cache.insert(
                    path.clone(),
                    CachedShard {
                        len: meta.len(),
                        modified,
                        positions: e.positions,
                        games: None,
                    },
                );
            } else if !fresh {
                let games = match read_shard(&path) {
                    Ok(games) => games,
                    Err(e) => {
                        self.cache.remove(&path);
                        self.skipped.push((path.clone(), e.to_string()));
                        continue;
                    }
                };
                let positions = games.iter().map(|g| g.samples.len()).sum();
                self.cache.insert(
                    path.clone(),
                    CachedShard {
                        len: meta.len(),
                        modified,
                        positions,
                        games: Some(Arc::new(games)),
                    },
                );
            }
            seen.push(path);
        }
        // Forget shards that disappeared.
        let present: HashSet<&PathBuf> = seen.iter().collect();
        self.cache.retain(|p, _| present.contains(p));
        seen.sort_by(|a, b| natural_order(&a.to_string_lossy(), &b.to_string_lossy()));
        self.save_index()?;

        let total: usize = seen.iter().map(|p| self.cache[p].positions).sum();
        let size = self.config.window_size(total);
        let mut segments = Vec::new();
        let mut taken = 0usize;
        for path in seen.iter().rev() {
            let entry = self.cache.get_mut(path).expect("cached above");
            if taken >= size {
                entry.games = None;
                continue;
            }
            let games = match &entry.games {
                Some(g) => g.clone(),
                None => match read_shard(path) {
                    Ok(g) => {
                        let g = Arc::new(g);
                        entry.games = Some(g.clone());
                        g
                    }
                    // Damaged since it was indexed: left out like an unreadable new shard.
                    Err(e) => {
                        self.skipped.push((path.clone(), e.to_string()));
                        continue;
                    }
                },
            };
            for (gi, game) in games.iter().enumerate().rev() {
                if taken >= size {
                    break;
                }
                let n = game.samples.len();
                let count = n.min(size - taken);
                if count == 0 {
                    continue;
                }
                segments.push(Segment {
                    games: games.clone(),
                    game: gi,
                    first_sample: n - count,
                    count,
                });
                taken += count;
            }
        }
        Ok(WindowSnapshot::from_segments(segments, total, seen.len())
            .with_search_value_weight(self.config.search_value_weight)
            .with_search_value_horizon(self.config.search_value_horizon)
            .with_surprise_weight(self.config.surprise_weight))
    }
}

impl ReplayWindow {
    /// Writes the index when it differs from the one on disk.
    fn save_index(&mut self) -> Result<(), TrainError> {
        let Some(path) = &self.index_path else {
            return Ok(());
        };
        let index = ShardIndex {
            shards: self
                .cache
                .iter()
                .map(|(p, c)| {
                    let (modified_s, modified_ns) = split_time(c.modified);
                    let entry = IndexEntry {
                        len: c.len,
                        modified_s,
                        modified_ns,
                        positions: c.positions,
                    };
                    (p.to_string_lossy().into_owned(), entry)
                })
                .collect(),
        };
        if self.index.as_ref() != Some(&index) {
            let bytes = serde_json::to_vec(&index).expect("index serialises");
            yari_io::write_atomic(path, &bytes)?;
            self.index = Some(index);
        }
        Ok(())
    }
}

/// A run of consecutive samples of one game.
#[derive(Clone)]
struct Segment {
    games: Arc<Vec<GameRecord>>,
    game: usize,
    first_sample: usize,
    count: usize,
}

/// An immutable view of the window, shared with the batch producer.
#[derive(Clone)]
pub struct WindowSnapshot {
    segments: Vec<Segment>,
    /// `ends[i]`: positions in segments `0..=i`.
    ends: Vec<usize>,
    total_positions: usize,
    shards: usize,
    /// How the WDL targets mix the result with the search value (see
    /// [`WindowConfig::search_value_weight`] and [`WindowConfig::search_value_horizon`]).
    value_mix: ValueMix,
    /// Cumulative sampling weights of the positions, in window order, when surprise
    /// weighting is on ([`WindowConfig::surprise_weight`]); `None` samples uniformly.
    cumulative: Option<Arc<Vec<f64>>>,
}

impl WindowSnapshot {
    fn from_segments(segments: Vec<Segment>, total_positions: usize, shards: usize) -> Self {
        let mut ends = Vec::with_capacity(segments.len());
        let mut acc = 0;
        for s in &segments {
            acc += s.count;
            ends.push(acc);
        }
        Self {
            segments,
            ends,
            total_positions,
            shards,
            value_mix: ValueMix {
                search_weight: 0.0,
                horizon: 0.0,
            },
            cumulative: None,
        }
    }

    /// The same window sampled with policy surprise weighting: `fraction` of each game
    /// segment's weight goes to its positions in proportion to their surprise, the rest
    /// evenly, so a game keeps its share of the batches and only its positions trade places.
    /// A segment without surprise (older shards) is sampled evenly; 0 turns weighting off.
    pub fn with_surprise_weight(mut self, fraction: f32) -> Self {
        if fraction <= 0.0 {
            self.cumulative = None;
            return self;
        }
        let f = fraction.min(1.0) as f64;
        let mut cumulative = Vec::with_capacity(self.len());
        let mut acc = 0.0f64;
        for s in &self.segments {
            let samples = &s.games[s.game].samples[s.first_sample..s.first_sample + s.count];
            let total: f64 = samples.iter().map(|x| x.surprise as f64).sum();
            for x in samples {
                let w = if total > 0.0 {
                    (1.0 - f) + f * s.count as f64 * x.surprise as f64 / total
                } else {
                    1.0
                };
                acc += w;
                cumulative.push(acc);
            }
        }
        self.cumulative = Some(Arc::new(cumulative));
        self
    }

    /// Window position of the uniform draw `u` in [0, 1) under the sampling weights.
    fn pick(&self, u: f64) -> usize {
        match &self.cumulative {
            None => ((u * self.len() as f64) as usize).min(self.len() - 1),
            Some(c) => {
                let total = c.last().copied().unwrap_or(0.0);
                c.partition_point(|&x| x <= u * total).min(self.len() - 1)
            }
        }
    }

    /// The same window with `weight` of each WDL target taken from the search's root value
    /// instead of the game result.
    pub fn with_search_value_weight(mut self, weight: f32) -> Self {
        self.value_mix.search_weight = weight;
        self
    }

    /// The same window with the search value of each WDL target looking `horizon` plies
    /// ahead ([`short_term_value`]); 0 takes each sample's own root value.
    pub fn with_search_value_horizon(mut self, horizon: f32) -> Self {
        self.value_mix.horizon = horizon;
        self
    }

    /// A window over in-memory games (all their samples), for benchmarks and tests.
    pub fn from_games(games: Vec<GameRecord>) -> Self {
        let games = Arc::new(games);
        let segments = (0..games.len())
            .filter(|&i| !games[i].samples.is_empty())
            .map(|i| Segment {
                games: games.clone(),
                game: i,
                first_sample: 0,
                count: games[i].samples.len(),
            })
            .collect::<Vec<_>>();
        let total = segments.iter().map(|s| s.count).sum();
        Self::from_segments(segments, total, 0)
    }

    /// Positions in the window.
    pub fn len(&self) -> usize {
        self.ends.last().copied().unwrap_or(0)
    }

    /// Whether the window holds no position.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Positions in all shards on disk (the window is the newest part of them).
    pub fn total_positions(&self) -> usize {
        self.total_positions
    }

    /// Shard files found.
    pub fn shards(&self) -> usize {
        self.shards
    }

    /// The game and sample index of window position `i`.
    fn locate(&self, i: usize) -> (&GameRecord, usize) {
        let seg = self.ends.partition_point(|&end| end <= i);
        let s = &self.segments[seg];
        let start = if seg == 0 { 0 } else { self.ends[seg - 1] };
        (&s.games[s.game], s.first_sample + (i - start))
    }

    /// Builds the batch for optimizer step `step` (0-based): `size` positions drawn with
    /// replacement (uniformly, or by surprise weight), with an RNG seeded from `(seed, step)`, encoded in parallel.
    pub fn batch(&self, seed: u64, step: u64, size: usize) -> Result<Batch, TrainError> {
        assert!(!self.is_empty(), "batch from an empty window");
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        rng.set_stream(step);
        let picks: Vec<usize> = match self.cumulative {
            // Uniform sampling draws exactly as it always has, so runs without surprise
            // weighting resume onto the same batches as before.
            None => (0..size).map(|_| rng.random_range(0..self.len())).collect(),
            Some(_) => (0..size).map(|_| self.pick(rng.random::<f64>())).collect(),
        };
        let mut inputs = vec![0.0f32; size * INPUT_SIZE];
        let mut policy = vec![0.0f32; size * POLICY_SIZE];
        let mut wdl = vec![0.0f32; size * 3];
        let mut short_term_wdl = vec![0.0f32; size * SHORT_TERM_WDL_SIZE];
        let entropies: Vec<f64> = inputs
            .par_chunks_mut(INPUT_SIZE)
            .zip(policy.par_chunks_mut(POLICY_SIZE))
            .zip(wdl.par_chunks_mut(3))
            .zip(short_term_wdl.par_chunks_mut(SHORT_TERM_WDL_SIZE))
            .zip(picks.par_iter())
            .map(|((((x, p), v), st), &i)| {
                let (game, sample) = self.locate(i);
                write_sample(game, sample, self.value_mix, x, p, v, st)
            })
            .collect::<Result<_, _>>()?;
        let policy_entropy = (entropies.iter().sum::<f64>() / size as f64) as f32;
        Ok(Batch {
            step,
            size,
            inputs,
            policy,
            wdl,
            short_term_wdl,
            policy_entropy,
        })
    }
}

/// How a WDL target mixes the game's result with the search's values.
#[derive(Clone, Copy, Debug)]
struct ValueMix {
    /// Weight of the search value (the rest is the result's).
    search_weight: f32,
    /// Plies the search value looks ahead ([`short_term_value`]); 0: the sample's own.
    horizon: f32,
}

/// Replays `game` to its sample `sample` and writes the encoded position, the dense policy
/// target, the WDL target (the game result, mixed with the search value by `mix`) and the
/// short-term WDL targets (one per [`SHORT_TERM_VALUE_HORIZONS`]); returns the policy
/// target's entropy (nats).
fn write_sample(
    game: &GameRecord,
    sample: usize,
    mix: ValueMix,
    x: &mut [f32],
    p: &mut [f32],
    v: &mut [f32],
    short_term: &mut [f32],
) -> Result<f64, TrainError> {
    let invalid = |what: String| TrainError::BadRecord {
        game_id: game.game_id,
        what,
    };
    let s = &game.samples[sample];
    let mut pos =
        Position::from_fen(&game.start_fen).map_err(|e| invalid(format!("start FEN: {e}")))?;
    for (ply, &code) in game.moves[..s.ply as usize].iter().enumerate() {
        match Move::from_u16(code) {
            Some(mv) if pos.is_legal(mv) => pos.play(mv),
            _ => {
                return Err(invalid(format!(
                    "move code {code} at ply {ply} is not legal"
                )))
            }
        }
    }
    encode(&pos, x);
    let mut entropy = 0.0f64;
    for &(code, prob) in &s.policy {
        let index = Move::from_u16(code)
            .filter(|&mv| pos.is_legal(mv))
            .and_then(|mv| try_index_of(&pos, mv))
            .ok_or_else(|| {
                invalid(format!(
                    "target move code {code} at ply {} is not legal",
                    s.ply
                ))
            })?;
        p[index] += prob;
        if prob > 0.0 {
            entropy -= prob as f64 * (prob as f64).ln();
        }
    }
    let result = game.wdl_target(&pos);
    for (t, &horizon) in short_term
        .chunks_exact_mut(3)
        .zip(&SHORT_TERM_VALUE_HORIZONS)
    {
        t.copy_from_slice(&value_as_wdl(short_term_value(
            game,
            sample,
            horizon,
            result[0] - result[2],
        )));
    }
    let search = if mix.horizon > 0.0 {
        value_as_wdl(short_term_value(
            game,
            sample,
            mix.horizon,
            result[0] - result[2],
        ))
    } else {
        value_as_wdl(s.root_value)
    };
    // A game stopped at the ply cap was not drawn by the rules: its "draw" says nothing about
    // who stood better, so its positions learn from the search's value alone.
    let w = if game.end == GameEnd::PlyCap {
        1.0
    } else {
        mix.search_weight
    };
    for (t, (r, q)) in v.iter_mut().zip(result.iter().zip(search)) {
        *t = (1.0 - w) * r + w * q;
    }
    Ok(entropy)
}

/// The search value of `game`'s sample `sample` looked `horizon` plies ahead, for the side to
/// move there: `sum_k (1 - lambda) lambda^k v(t + k)` over the plies `t + k` from the
/// sample's ply `t` on, `lambda = 1 - 1 / horizon`, where `v` at a ply is the root value of
/// the latest full search at or before it (self-play records only those), signed for the
/// side to move at `t`, and past the game's end is `result` (the result for that side, in
/// [-1, 1]; for a game stopped at the ply cap, which has none, the last search's value).
/// `horizon` at most 1 is the sample's own root value; a long one tends to the result.
pub fn short_term_value(game: &GameRecord, sample: usize, horizon: f32, result: f32) -> f32 {
    let samples = &game.samples[sample..];
    let t = samples[0].ply as i64;
    let lambda = (1.0 - 1.0 / horizon.max(1.0) as f64).max(0.0);
    // lambda^k, with 0^0 = 1 (powi gives that).
    let decay = |ply: i64| lambda.powi((ply - t).clamp(0, i32::MAX as i64) as i32);
    let signed = |s: &Sample| {
        let v = s.root_value as f64;
        if (s.ply as i64 - t) % 2 == 0 {
            v
        } else {
            -v
        }
    };
    let end = (game.moves.len() as i64).max(t);
    let mut acc = 0.0f64;
    for (j, s) in samples.iter().enumerate() {
        let next = samples.get(j + 1).map_or(end, |n| n.ply as i64);
        acc += (decay(s.ply as i64) - decay(next)) * signed(s);
    }
    let tail = if game.end == GameEnd::PlyCap {
        signed(samples.last().expect("sample exists"))
    } else {
        result as f64
    };
    acc += decay(end) * tail;
    acc.clamp(-1.0, 1.0) as f32
}

/// A value in [-1, 1] as the WDL distribution with that expectation and the least decisive
/// split: `v > 0` is `v` win and `1 - v` draw (and symmetrically for losses).
pub fn value_as_wdl(value: f32) -> [f32; 3] {
    let v = value.clamp(-1.0, 1.0);
    [v.max(0.0), 1.0 - v.abs(), (-v).max(0.0)]
}

/// One training batch, host-side and ready to upload.
pub struct Batch {
    /// The optimizer step (0-based) it was drawn for.
    pub step: u64,
    /// Positions in the batch.
    pub size: usize,
    /// Encoded positions `[size, INPUT_PLANES, 9, 7]`.
    pub inputs: Vec<f32>,
    /// Dense policy targets `[size, POLICY_SIZE]` (zero off the searched moves).
    pub policy: Vec<f32>,
    /// WDL targets `[size, 3]` from each position's side to move.
    pub wdl: Vec<f32>,
    /// Short-term WDL targets `[size, SHORT_TERM_WDL_SIZE]`, horizon-major within a position:
    /// [`short_term_value`] at each of [`SHORT_TERM_VALUE_HORIZONS`], as WDL. Built for every
    /// batch (a few hundred additions a position, next to replaying its game); read only by a
    /// net with the short-term value head.
    pub short_term_wdl: Vec<f32>,
    /// Mean entropy of the policy targets (nats): subtracted from the policy cross-entropy so
    /// the reported policy loss is a KL divergence that can reach 0.
    pub policy_entropy: f32,
}

/// Builds batches for a range of steps on a background thread, `depth` batches ahead.
pub struct Prefetcher {
    rx: Option<Receiver<Result<Batch, TrainError>>>,
    handle: Option<JoinHandle<()>>,
}

impl Prefetcher {
    /// Starts producing the batches of steps `first..first + count`.
    pub fn spawn(
        window: Arc<WindowSnapshot>,
        seed: u64,
        batch_size: usize,
        first: u64,
        count: u64,
        depth: usize,
    ) -> Self {
        let (tx, rx) = sync_channel(depth.max(1));
        let handle = std::thread::Builder::new()
            .name("yari-train-batches".into())
            .spawn(move || {
                for step in first..first + count {
                    let batch = window.batch(seed, step, batch_size);
                    let failed = batch.is_err();
                    if tx.send(batch).is_err() || failed {
                        break;
                    }
                }
            })
            .expect("spawn the batch producer thread");
        Self {
            rx: Some(rx),
            handle: Some(handle),
        }
    }

    /// The next batch, in step order.
    pub fn next_batch(&mut self) -> Result<Batch, TrainError> {
        self.rx
            .as_ref()
            .and_then(|rx| rx.recv().ok())
            .unwrap_or(Err(TrainError::ProducerStopped))
    }
}

impl Drop for Prefetcher {
    /// Stops the producer (closing the channel makes its next send fail) and waits for it, so
    /// no encoding work outlives the training call.
    fn drop(&mut self) {
        drop(self.rx.take());
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

/// Text order, except that runs of digits compare by their value.
fn natural_order(a: &str, b: &str) -> std::cmp::Ordering {
    fn runs(s: &str) -> impl Iterator<Item = (bool, &str)> {
        let mut rest = s;
        std::iter::from_fn(move || {
            let first = rest.chars().next()?;
            let digits = first.is_ascii_digit();
            let end = rest
                .find(|c: char| c.is_ascii_digit() != digits)
                .unwrap_or(rest.len());
            let (run, tail) = rest.split_at(end);
            rest = tail;
            Some((digits, run))
        })
    }
    let (mut x, mut y) = (runs(a), runs(b));
    loop {
        let order = match (x.next(), y.next()) {
            (None, None) => return a.cmp(b),
            (None, Some(_)) => return std::cmp::Ordering::Less,
            (Some(_), None) => return std::cmp::Ordering::Greater,
            (Some((true, m)), Some((true, n))) => {
                let (m, n) = (m.trim_start_matches('0'), n.trim_start_matches('0'));
                m.len().cmp(&n.len()).then_with(|| m.cmp(n))
            }
            (Some((_, m)), Some((_, n))) => m.cmp(n),
        };
        if order.is_ne() {
            return order;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synthetic::random_games;
    use yari_selfplay::write_shard;

    #[test]
    fn natural_order_compares_numbers_by_value() {
        use std::cmp::Ordering::*;
        assert_eq!(natural_order("gen-9999/a", "gen-10000/a"), Less);
        assert_eq!(natural_order("gen-0012/w-3", "gen-0012/w-10"), Less);
        assert_eq!(natural_order("a.yshard", "gen-0001/b.yshard"), Less);
        assert_eq!(
            natural_order("gen-01", "gen-1"),
            Less,
            "equal values fall back to the text"
        );
        assert_eq!(natural_order("x", "x"), Equal);
    }

    /// The window follows the run's names, not modification times: a copied run directory
    /// (times reset, or restored in another order) trains on the same positions.
    #[test]
    fn shards_are_ordered_by_name_not_modification_time() {
        let dir = tempfile::tempdir().unwrap();
        let games = dir.path().join("games");
        let newer = games.join("gen-10000");
        let older = games.join("gen-9999");
        std::fs::create_dir_all(&newer).unwrap();
        std::fs::create_dir_all(&older).unwrap();
        let new = random_games(3, 20, 2);
        let old = random_games(3, 20, 1);
        let new_n: usize = new.iter().map(|g| g.samples.len()).sum();
        // Written first, so the later generation has the older modification time.
        write_shard(newer.join("s.yshard"), &new).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        write_shard(older.join("s.yshard"), &old).unwrap();
        let config = WindowConfig {
            max_positions: new_n,
            taper_base: 0,
            ..WindowConfig::default()
        };
        let snap = ReplayWindow::new(games, config).refresh().unwrap();
        assert_eq!(snap.len(), new_n);
        let moves: Vec<_> = (0..snap.len())
            .map(|i| snap.locate(i).0.moves.clone())
            .collect();
        assert!(
            moves.iter().all(|m| new.iter().any(|g| &g.moves == m)),
            "the window holds generation 10000's games"
        );
    }

    #[test]
    fn window_takes_the_newest_positions_and_batches_are_reproducible() {
        let dir = tempfile::tempdir().unwrap();
        let games = dir.path().join("games");
        let gen1 = games.join("gen-0001");
        std::fs::create_dir_all(&gen1).unwrap();
        let old = random_games(3, 20, 1);
        let new = random_games(3, 20, 2);
        let old_n: usize = old.iter().map(|g| g.samples.len()).sum();
        let new_n: usize = new.iter().map(|g| g.samples.len()).sum();
        write_shard(games.join("a.yshard"), &old).unwrap();
        // A later modification time makes this shard the newer one.
        std::thread::sleep(std::time::Duration::from_millis(20));
        write_shard(gen1.join("b.yshard"), &new).unwrap();
        std::fs::write(games.join(".c.yshard.tmp"), b"partial").unwrap();

        let config = WindowConfig {
            max_positions: new_n + 5,
            taper_base: 0,
            ..WindowConfig::default()
        };
        let mut w = ReplayWindow::new(games.clone(), config.clone());
        let snap = w.refresh().unwrap();
        assert_eq!(snap.shards(), 2);
        assert_eq!(snap.total_positions(), old_n + new_n);
        assert_eq!(snap.len(), new_n + 5);
        // The 5 oldest-shard positions in the window are the last ones of its last game.
        let (g, s) = snap.locate(snap.len() - 1);
        assert_eq!((g.game_id, s), (2, old[2].samples.len() - 1));
        let (g, _) = snap.locate(0);
        assert_eq!(g.game_id, 2);
        assert_eq!(g.moves, new[2].moves);

        // A new process with the index reads only the shards inside the window: make the old
        // shard unreadable (same size and time) and the window still knows its count.
        let index = dir.path().join("index.json");
        let mut w = ReplayWindow::new(games.clone(), config.clone()).with_index(index.clone());
        assert_eq!(w.refresh().unwrap().len(), new_n + 5);
        let small = WindowConfig {
            max_positions: new_n,
            ..config
        };
        let old_path = games.join("a.yshard");
        let mtime = std::fs::metadata(&old_path).unwrap().modified().unwrap();
        let mut bytes = std::fs::read(&old_path).unwrap();
        bytes[0] ^= 0xff;
        std::fs::write(&old_path, &bytes).unwrap();
        std::fs::File::options()
            .write(true)
            .open(&old_path)
            .unwrap()
            .set_modified(mtime)
            .unwrap();
        let mut w = ReplayWindow::new(games.clone(), small).with_index(index);
        let again = w.refresh().unwrap();
        assert_eq!(again.total_positions(), old_n + new_n);
        assert_eq!(again.len(), new_n);

        let a = snap.batch(9, 4, 8).unwrap();
        let b = snap.batch(9, 4, 8).unwrap();
        let c = snap.batch(9, 5, 8).unwrap();
        assert_eq!(a.inputs, b.inputs);
        assert_eq!(a.policy, b.policy);
        assert_ne!(a.inputs, c.inputs);
        for row in a.policy.chunks(POLICY_SIZE) {
            assert!((row.iter().sum::<f32>() - 1.0).abs() < 1e-4);
        }
        for row in a.wdl.chunks(3) {
            assert_eq!(row.iter().sum::<f32>(), 1.0);
        }
    }

    /// The short-term value against a ply-by-ply sum of its definition.
    #[test]
    fn short_term_values_average_the_later_searches() {
        let sample = |ply: u32, root_value: f32| Sample {
            ply,
            root_value,
            surprise: 0.0,
            policy: Vec::new(),
        };
        let mut game = GameRecord {
            game_id: 0,
            start_fen: String::new(),
            moves: vec![0; 10],
            samples: vec![sample(0, 0.5), sample(2, -0.2), sample(5, 0.4)],
            result: yari_selfplay::GameResult::WhiteWins,
            end: GameEnd::Checkmate,
            resignation_disabled: false,
            would_resign: None,
        };
        // v(ply) for the side to move at ply `t`, held from each search to the next, then
        // `tail` past the end, summed over 20,000 plies.
        let reference = |game: &GameRecord, first: usize, horizon: f64, tail: f64| {
            let t = game.samples[first].ply as usize;
            let lambda = 1.0 - 1.0 / horizon;
            let mut held = 0.0;
            let mut sum = 0.0;
            for ply in t..t + 20_000 {
                let v = if ply >= game.moves.len() {
                    tail
                } else {
                    if let Some(s) = game.samples[first..].iter().find(|s| s.ply as usize == ply) {
                        let sign = if (ply - t).is_multiple_of(2) {
                            1.0
                        } else {
                            -1.0
                        };
                        held = sign * s.root_value as f64;
                    }
                    held
                };
                sum += (1.0 - lambda) * lambda.powi((ply - t) as i32) * v;
            }
            sum
        };
        // A horizon of one ply is the sample's own value, whatever the result.
        assert_eq!(short_term_value(&game, 0, 1.0, 1.0), 0.5);
        assert_eq!(short_term_value(&game, 1, 1.0, -1.0), -0.2);
        for (first, horizon, result) in
            [(0, 4.0, 1.0), (0, 2.5, -1.0), (1, 6.0, -1.0), (2, 3.0, 1.0)]
        {
            let got = short_term_value(&game, first, horizon, result) as f64;
            let want = reference(&game, first, horizon as f64, result as f64);
            assert!(
                (got - want).abs() < 1e-5,
                "sample {first} horizon {horizon}: {got} vs {want}"
            );
        }
        // Hand-computed once: lambda 0.75 from ply 0, result +1.
        let by_hand = 0.4375 * 0.5 - 0.325_195_3 * 0.2 - 0.180_991_2 * 0.4 + 0.056_313_5;
        assert!((short_term_value(&game, 0, 4.0, 1.0) as f64 - by_hand).abs() < 1e-5);
        // A long horizon tends to the result.
        assert!((short_term_value(&game, 0, 1000.0, -1.0) + 0.99).abs() < 0.01);
        // A game stopped at the ply cap has no result: its last search's value takes the tail
        // (ply 5 is the opponent's move from ply 0: -0.4 for the side to move at ply 0).
        game.end = GameEnd::PlyCap;
        let capped = short_term_value(&game, 0, 1000.0, 1.0) as f64;
        assert!((capped + 0.4).abs() < 0.01, "{capped}");
        let want = reference(&game, 0, 4.0, -0.4);
        assert!((short_term_value(&game, 0, 4.0, 1.0) as f64 - want).abs() < 1e-5);
    }

    #[test]
    fn batches_take_the_short_term_value_when_a_horizon_is_set() {
        let games = random_games(12, 150, 3);
        let base = WindowSnapshot::from_games(games.clone()).with_search_value_weight(0.5);
        let one_ply = base.clone().with_search_value_horizon(1.0);
        let long = base.clone().with_search_value_horizon(16.0);
        let a = base.batch(5, 0, 64).unwrap();
        let b = one_ply.batch(5, 0, 64).unwrap();
        let c = long.batch(5, 0, 64).unwrap();
        assert_eq!(a.inputs, c.inputs);
        assert_eq!(a.wdl, b.wdl, "a one-ply horizon is the sample's own value");
        assert_ne!(a.wdl, c.wdl, "a 16-ply horizon averages later searches");
        for row in c.wdl.chunks(3) {
            assert!((row.iter().sum::<f32>() - 1.0).abs() < 1e-6);
            assert!(row.iter().all(|&x| (0.0..=1.0).contains(&x)));
        }
    }

    /// Every batch carries the short-term targets, one WDL per horizon, whatever the main
    /// value target's mix: horizon h's is the main target of a window that takes the search
    /// value alone looked h plies ahead.
    #[test]
    fn batches_carry_a_short_term_target_per_horizon() {
        let games = random_games(12, 150, 4);
        let plain = WindowSnapshot::from_games(games.clone())
            .batch(7, 2, 64)
            .unwrap();
        assert_eq!(plain.short_term_wdl.len(), 64 * SHORT_TERM_WDL_SIZE);
        for (i, &horizon) in SHORT_TERM_VALUE_HORIZONS.iter().enumerate() {
            let pure = WindowSnapshot::from_games(games.clone())
                .with_search_value_weight(1.0)
                .with_search_value_horizon(horizon)
                .batch(7, 2, 64)
                .unwrap();
            assert_eq!(pure.inputs, plain.inputs);
            assert_eq!(pure.short_term_wdl, plain.short_term_wdl);
            for (main, short) in pure
                .wdl
                .chunks_exact(3)
                .zip(plain.short_term_wdl.chunks_exact(SHORT_TERM_WDL_SIZE))
            {
                assert_eq!(main, &short[3 * i..3 * i + 3], "horizon {horizon}");
            }
        }
        // And the horizons are not one target three times over: the shortest and the
        // longest differ somewhere.
        let rows: Vec<&[f32]> = plain.short_term_wdl.chunks_exact(3).collect();
        assert!(rows
            .chunks_exact(SHORT_TERM_VALUE_HORIZONS.len())
            .any(|r| r[0] != r[2]));
    }

    #[test]
    fn value_targets_mix_the_game_result_with_the_search_value() {
        assert_eq!(value_as_wdl(0.25), [0.25, 0.75, 0.0]);
        assert_eq!(value_as_wdl(-1.0), [0.0, 0.0, 1.0]);
        assert_eq!(value_as_wdl(0.0), [0.0, 1.0, 0.0]);

        // Random games capped at 150 plies: most end by the rules, some at the cap.
        let games = random_games(12, 150, 3);
        let capped = games.iter().filter(|g| g.end == GameEnd::PlyCap).count();
        assert!(capped > 0 && capped < games.len(), "{capped} capped games");
        let plain = WindowSnapshot::from_games(games.clone());
        let mixed = WindowSnapshot::from_games(games).with_search_value_weight(0.5);
        let pure = WindowSnapshot::from_games(Vec::new()).with_search_value_weight(1.0);
        assert!(pure.is_empty());
        let a = plain.batch(1, 0, 64).unwrap();
        let b = mixed.batch(1, 0, 64).unwrap();
        // Same positions (same seed), targets differ only in the value mix.
        assert_eq!(a.inputs, b.inputs);
        let rng_picks = {
            let mut rng = ChaCha8Rng::seed_from_u64(1);
            rng.set_stream(0);
            (0..64)
                .map(|_| rng.random_range(0..plain.len()))
                .collect::<Vec<_>>()
        };
        let (mut decided, mut at_cap) = (0, 0);
        for (k, &i) in rng_picks.iter().enumerate() {
            let (game, sample) = plain.locate(i);
            let q = value_as_wdl(game.samples[sample].root_value);
            let row = |t: &Batch| [t.wdl[3 * k], t.wdl[3 * k + 1], t.wdl[3 * k + 2]];
            if game.end == GameEnd::PlyCap {
                // An adjudicated draw is no result: the search value alone, whatever the mix.
                at_cap += 1;
                assert_eq!(row(&a), q);
                assert_eq!(row(&b), q);
                continue;
            }
            decided += 1;
            let mut pos = Position::startpos();
            for &code in &game.moves[..game.samples[sample].ply as usize] {
                pos.play(Move::from_u16(code).unwrap());
            }
            let result = game.wdl_target(&pos);
            assert_eq!(row(&a), result);
            for (j, qj) in q.iter().enumerate() {
                let expect = 0.5 * result[j] + 0.5 * qj;
                assert!((b.wdl[3 * k + j] - expect).abs() < 1e-6);
            }
            assert!((b.wdl[3 * k..3 * k + 3].iter().sum::<f32>() - 1.0).abs() < 1e-6);
        }
        assert!(
            decided > 0 && at_cap > 0,
            "{decided} decided, {at_cap} capped"
        );
    }

    #[test]
    fn surprise_weighting_moves_draws_to_surprising_positions_within_each_game() {
        let mut games = random_games(4, 60, 7);
        // Game 0: all of its surprise on its first position; the others have none.
        for (k, g) in games.iter_mut().enumerate() {
            for (j, s) in g.samples.iter_mut().enumerate() {
                s.surprise = if k == 0 && j == 0 { 2.0 } else { 0.0 };
            }
        }
        let n0 = games[0].samples.len();
        assert!(n0 >= 4, "game 0 has {n0} samples");
        let total: usize = games.iter().map(|g| g.samples.len()).sum();
        let uniform = WindowSnapshot::from_games(games.clone());
        let off = WindowSnapshot::from_games(games.clone()).with_surprise_weight(0.0);
        // Off draws the very batches uniform sampling always drew.
        assert_eq!(
            uniform.batch(3, 1, 32).unwrap().inputs,
            off.batch(3, 1, 32).unwrap().inputs
        );
        let half = WindowSnapshot::from_games(games.clone()).with_surprise_weight(0.5);
        let c = half.cumulative.as_ref().unwrap();
        assert_eq!(c.len(), total);
        // Each game keeps its total weight (its sample count); inside game 0 the first
        // position gets 0.5 + 0.5 * n0 and the others 0.5 each.
        assert!((c[total - 1] - total as f64).abs() < 1e-9);
        let first = uniform.locate(0);
        assert_eq!(first.0.game_id, games[0].game_id);
        assert!((c[0] - (0.5 + 0.5 * n0 as f64)).abs() < 1e-9);
        assert!((c[1] - c[0] - 0.5).abs() < 1e-9);
        // Draw many picks: position 0 comes up about (0.5 + 0.5 n0) / total of the time.
        let draws = 20_000;
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        let hits = (0..draws)
            .filter(|_| half.pick(rng.random::<f64>()) == 0)
            .count();
        let expect = (0.5 + 0.5 * n0 as f64) / total as f64;
        let got = hits as f64 / draws as f64;
        assert!(
            (got - expect).abs() < 0.01,
            "share {got}, expected {expect}"
        );
        // A window whose games carry no surprise samples evenly.
        let mut flat = games;
        for g in &mut flat {
            for s in &mut g.samples {
                s.surprise = 0.0;
            }
        }
        let flat = WindowSnapshot::from_games(flat).with_surprise_weight(1.0);
        let c = flat.cumulative.as_ref().unwrap();
        assert!(c.iter().enumerate().all(|(i, &x)| x == (i + 1) as f64));
    }
}
