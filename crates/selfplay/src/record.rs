//! Self-play game records and the shard files that carry them to the trainer.
//!
//! A record stores the moves, not the positions: the trainer rebuilds each training position
//! by replaying `moves[..ply]` from `start_fen`, which also rebuilds the repetition history
//! the encoding's repetition plane depends on. Only the searched targets are stored.
//!
//! # Shard format (version 2, all integers little-endian)
//!
//! | bytes | field |
//! |---|---|
//! | 4 | magic `YSPR` |
//! | 4 | format version, `u32` |
//! | 4 | number of games, `u32` |
//! | 8 | payload length in bytes, `u64` |
//! | n | payload: the games, one after another |
//! | 4 | CRC-32 (IEEE) of everything before it |
//!
//! Each game: `game_id u64`; `fen_len u16`, FEN bytes (UTF-8); `move_count u32`, moves as
//! `u16` codes ([`Move::to_u16`]); `result u8` (0 draw, 1 White won, 2 Black won); `end u8`
//! (0 checkmate, 1 stalemate, 2 repetition, 3 perpetual check, 4 ply cap, 5 resignation);
//! `flags u8` (bit 0: resignation was disabled); `would_resign u8` (the result resigning
//! would have given, coded as `result`, or 255 for none); `sample_count u32`; each sample:
//! `ply u32`, `root_value f32`, `surprise f32`, `entry_count u16`, entries of `move u16, prob
//! f32`. Version 1 (read, never written) is the same without `surprise` (read as 0).
//!
//! The header and checksum are [`yari_io::frame`]'s, shared with checkpoints.
//! Shards are written to a dot-prefixed `.tmp` file, synced and renamed, so a reader listing
//! a directory with [`list_shards`] never sees a half-written shard. [`ShardWriter`] rewrites
//! its open shard that way after every finished game, so a kill loses only games in flight;
//! the temporary file a kill can leave is removed when the directory is next opened.

use std::fs;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use thiserror::Error;
use yari_io::frame::{Format, FrameError};
use yari_rules::{Color, EndReason, Move, Position, MAX_MOVES};

/// First bytes of every shard.
pub const MAGIC: [u8; 4] = *b"YSPR";
/// Shard format version this build writes (it also reads version 1).
pub const FORMAT_VERSION: u32 = 2;
/// File extension of finished shards.
pub const SHARD_EXTENSION: &str = "yshard";

const FORMAT: Format = Format {
    magic: MAGIC,
    version: FORMAT_VERSION,
};
/// Version 1: samples without the surprise field.
const FORMAT_V1: Format = Format {
    magic: MAGIC,
    version: 1,
};
const MAX_FEN_LEN: usize = 512;
const MAX_GAME_MOVES: usize = 100_000;
/// The smallest encoded game: id, FEN length, move count, four code bytes, sample count.
const MIN_GAME_BYTES: usize = 8 + 2 + 4 + 4 + 4;
/// Largest shard file read: far above real shards (a few MB per hundred games), it only
/// stops a read of something that is no shard at all from taking all memory.
pub const MAX_SHARD_BYTES: u64 = 4 << 30;

/// Why a shard could not be read or written.
#[derive(Debug, Error)]
pub enum RecordError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// Not a whole, intact shard container: not the format at all, another version of it,
    /// truncated, with trailing bytes, or failing its checksum (the reason says which).
    #[error("not a valid self-play shard: {0}")]
    Frame(#[from] FrameError),
    #[error("malformed shard payload at byte {offset}: {what}")]
    Malformed { offset: usize, what: String },
    #[error("game {game_id}: {what}")]
    InvalidGame { game_id: u64, what: String },
    #[error("refusing to overwrite existing shard {0}")]
    AlreadyExists(PathBuf),
}

/// Who won.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum GameResult {
    Draw,
    WhiteWins,
    BlackWins,
}

impl GameResult {
    /// For people: `white wins`, `black wins`, `draw`.
    pub fn as_str(self) -> &'static str {
        match self {
            GameResult::Draw => "draw",
            GameResult::WhiteWins => "white wins",
            GameResult::BlackWins => "black wins",
        }
    }

    pub fn winner(self) -> Option<Color> {
        match self {
            GameResult::Draw => None,
            GameResult::WhiteWins => Some(Color::White),
            GameResult::BlackWins => Some(Color::Black),
        }
    }

    pub fn from_winner(winner: Option<Color>) -> Self {
        match winner {
            None => GameResult::Draw,
            Some(Color::White) => GameResult::WhiteWins,
            Some(Color::Black) => GameResult::BlackWins,
        }
    }

    fn code(self) -> u8 {
        match self {
            GameResult::Draw => 0,
            GameResult::WhiteWins => 1,
            GameResult::BlackWins => 2,
        }
    }

    fn from_code(code: u8) -> Option<Self> {
        Some(match code {
            0 => GameResult::Draw,
            1 => GameResult::WhiteWins,
            2 => GameResult::BlackWins,
            _ => return None,
        })
    }
}

/// Why a game ended: the rules' reasons plus resignation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum GameEnd {
    Checkmate,
    Stalemate,
    Repetition,
    PerpetualCheck,
    PlyCap,
    Resignation,
}

impl From<EndReason> for GameEnd {
    fn from(r: EndReason) -> Self {
        match r {
            EndReason::Checkmate => GameEnd::Checkmate,
            EndReason::Stalemate => GameEnd::Stalemate,
            EndReason::Repetition => GameEnd::Repetition,
            EndReason::PerpetualCheck => GameEnd::PerpetualCheck,
            EndReason::PlyCap => GameEnd::PlyCap,
        }
    }
}

impl GameEnd {
    pub const ALL: [GameEnd; 6] = [
        GameEnd::Checkmate,
        GameEnd::Stalemate,
        GameEnd::Repetition,
        GameEnd::PerpetualCheck,
        GameEnd::PlyCap,
        GameEnd::Resignation,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            GameEnd::Checkmate => "checkmate",
            GameEnd::Stalemate => "stalemate",
            GameEnd::Repetition => "repetition",
            GameEnd::PerpetualCheck => "perpetual_check",
            GameEnd::PlyCap => "ply_cap",
            GameEnd::Resignation => "resignation",
        }
    }

    fn code(self) -> u8 {
        GameEnd::ALL
            .iter()
            .position(|&e| e == self)
            .expect("listed") as u8
    }

    fn from_code(code: u8) -> Option<Self> {
        GameEnd::ALL.get(code as usize).copied()
    }
}

/// One training position: the position after `moves[..ply]`, with its search results.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    /// Moves played before this position.
    pub ply: u32,
    /// Search value of the position for its side to move, in [-1, 1].
    pub root_value: f32,
    /// KL divergence (nats) of the search target from the network's prior at the root: how
    /// much the search taught the policy here, for surprise weighting (0 in version-1 shards).
    pub surprise: f32,
    /// Search target over the legal moves: `(move code, probability)`, summing to 1.
    pub policy: Vec<(u16, f32)>,
}

/// One self-play game.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GameRecord {
    /// Index of the game in its self-play batch (a generation, or a worker's batch): with the
    /// batch's seed it identifies the game's RNG stream. Each batch counts from 0, so a game
    /// of a run is named by its shard and this index together.
    pub game_id: u64,
    pub start_fen: String,
    /// The moves played, as [`Move::to_u16`] codes.
    pub moves: Vec<u16>,
    /// Training positions in increasing ply order (full searches only).
    pub samples: Vec<Sample>,
    pub result: GameResult,
    pub end: GameEnd,
    /// Resignation was off for this game, so it was played out to measure false resignations.
    pub resignation_disabled: bool,
    /// In a game with resignation disabled: the result a resignation would have given, had it
    /// been allowed (the first time a side met the resignation rule).
    pub would_resign: Option<GameResult>,
}

impl GameRecord {
    /// WDL target `[win, draw, loss]` for `mover`.
    pub fn wdl_for(&self, mover: Color) -> [f32; 3] {
        match self.result.winner() {
            None => [0.0, 1.0, 0.0],
            Some(c) if c == mover => [1.0, 0.0, 0.0],
            Some(_) => [0.0, 0.0, 1.0],
        }
    }

    /// WDL target from the side to move of a replayed sample position.
    pub fn wdl_target(&self, pos: &Position) -> [f32; 3] {
        self.wdl_for(pos.side_to_move())
    }

    /// Whether this game counts as a false resignation: resignation was disabled, a side met
    /// the rule, and the game did not end as resigning would have ended it.
    pub fn is_false_resignation(&self) -> bool {
        self.would_resign.is_some_and(|r| r != self.result)
    }

    /// The position after the whole game.
    pub fn final_position(&self) -> Result<Position, RecordError> {
        let mut pos = self.start_position()?;
        for (ply, &code) in self.moves.iter().enumerate() {
            let mv = self.legal_move(&pos, ply, code)?;
            pos.play(mv);
        }
        Ok(pos)
    }

    fn start_position(&self) -> Result<Position, RecordError> {
        Position::from_fen(&self.start_fen).map_err(|e| self.invalid(format!("bad start FEN: {e}")))
    }

    fn invalid(&self, what: String) -> RecordError {
        RecordError::InvalidGame {
            game_id: self.game_id,
            what,
        }
    }

    fn legal_move(&self, pos: &Position, ply: usize, code: u16) -> Result<Move, RecordError> {
        match Move::from_u16(code) {
            Some(mv) if pos.is_legal(mv) => Ok(mv),
            _ => Err(self.invalid(format!("move code {code} at ply {ply} is not legal"))),
        }
    }

    /// Checks that the game replays: legal moves, samples in order with targets over legal
    /// moves that sum to 1, finite values. Readers call it so that a bad record is an error,
    /// never a panic or a silently wrong training position.
    pub fn validate(&self) -> Result<(), RecordError> {
        let mut pos = self.start_position()?;
        let mut ply = 0usize;
        let mut last_ply = None;
        for s in &self.samples {
            let target = s.ply as usize;
            if last_ply.is_some_and(|p| p >= target) || target > self.moves.len() {
                return Err(self.invalid(format!("sample ply {target} out of order or range")));
            }
            last_ply = Some(target);
            while ply < target {
                let mv = self.legal_move(&pos, ply, self.moves[ply])?;
                pos.play(mv);
                ply += 1;
            }
            if !(s.root_value.is_finite() && (-1.0..=1.0).contains(&s.root_value)) {
                return Err(self.invalid(format!("sample at ply {target}: value {}", s.root_value)));
            }
            if !(s.surprise.is_finite() && s.surprise >= 0.0) {
                return Err(
                    self.invalid(format!("sample at ply {target}: surprise {}", s.surprise))
                );
            }
            let mut sum = 0.0f64;
            for &(code, p) in &s.policy {
                if !(p.is_finite() && p >= 0.0) {
                    return Err(self.invalid(format!("sample at ply {target}: probability {p}")));
                }
                self.legal_move(&pos, target, code)?;
                sum += p as f64;
            }
            if (sum - 1.0).abs() > 1e-3 {
                return Err(self.invalid(format!("sample at ply {target}: target sums to {sum}")));
            }
        }
        while ply < self.moves.len() {
            let mv = self.legal_move(&pos, ply, self.moves[ply])?;
            pos.play(mv);
            ply += 1;
        }
        Ok(())
    }

    /// Every training position with its sample, rebuilt by replaying the moves from the start
    /// (so repetition history is right). Stops early at an illegal move; [`read_shard`]
    /// validates records, so that only happens to records built by hand.
    pub fn replay_samples(&self) -> Result<SampleReplay<'_>, RecordError> {
        Ok(SampleReplay {
            record: self,
            pos: self.start_position()?,
            ply: 0,
            next: 0,
        })
    }
}

/// Iterator of [`GameRecord::replay_samples`].
pub struct SampleReplay<'a> {
    record: &'a GameRecord,
    pos: Position,
    ply: usize,
    next: usize,
}

impl<'a> Iterator for SampleReplay<'a> {
    type Item = (Position, &'a Sample);

    fn next(&mut self) -> Option<Self::Item> {
        let sample = self.record.samples.get(self.next)?;
        let target = sample.ply as usize;
        while self.ply < target {
            let code = *self.record.moves.get(self.ply)?;
            let mv = Move::from_u16(code).filter(|&mv| self.pos.is_legal(mv));
            let Some(mv) = mv else {
                self.next = self.record.samples.len();
                return None;
            };
            self.pos.play(mv);
            self.ply += 1;
        }
        if self.ply != target {
            self.next = self.record.samples.len();
            return None;
        }
        self.next += 1;
        Some((self.pos.clone(), sample))
    }
}

fn put_u16(out: &mut Vec<u8>, v: u16) {
    out.extend_from_slice(&v.to_le_bytes());
}
fn put_u32(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_le_bytes());
}
fn put_f32(out: &mut Vec<u8>, v: f32) {
    out.extend_from_slice(&v.to_le_bytes());
}

fn encode_game(g: &GameRecord, out: &mut Vec<u8>) {
    out.extend_from_slice(&g.game_id.to_le_bytes());
    let fen = g.start_fen.as_bytes();
    put_u16(out, fen.len() as u16);
    out.extend_from_slice(fen);
    put_u32(out, g.moves.len() as u32);
    for &m in &g.moves {
        put_u16(out, m);
    }
    out.push(g.result.code());
    out.push(g.end.code());
    out.push(u8::from(g.resignation_disabled));
    out.push(g.would_resign.map_or(255, GameResult::code));
    put_u32(out, g.samples.len() as u32);
    for s in &g.samples {
        put_u32(out, s.ply);
        put_f32(out, s.root_value);
        put_f32(out, s.surprise);
        put_u16(out, s.policy.len() as u16);
        for &(m, p) in &s.policy {
            put_u16(out, m);
            put_f32(out, p);
        }
    }
}

/// The bytes of a shard holding `games`; fails for a record beyond the format's limits (FEN
/// over 512 bytes, over 100 000 moves, a target with more entries than there are moves).
pub fn encode_shard(games: &[GameRecord]) -> Result<Vec<u8>, RecordError> {
    let mut payload = Vec::new();
    for g in games {
        let too_big = g.start_fen.len() > MAX_FEN_LEN
            || g.moves.len() > MAX_GAME_MOVES
            || g.samples.len() > MAX_GAME_MOVES + 1
            || g.samples.iter().any(|s| s.policy.len() > MAX_MOVES);
        if too_big {
            return Err(g.invalid("record exceeds the shard format's limits".into()));
        }
        encode_game(g, &mut payload);
    }
    Ok(FORMAT.encode(games.len() as u32, payload.len() as u64, &payload))
}

/// Bounds-checked reading of the payload.
struct Cursor<'a> {
    bytes: &'a [u8],
    pos: usize,
    /// Offset of `bytes` in the file, for error messages.
    base: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], RecordError> {
        if self.bytes.len() - self.pos < n {
            return Err(self.malformed(format!("{what} runs past the payload")));
        }
        let s = &self.bytes[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }
    fn u8(&mut self, what: &str) -> Result<u8, RecordError> {
        Ok(self.take(1, what)?[0])
    }
    fn u16(&mut self, what: &str) -> Result<u16, RecordError> {
        Ok(u16::from_le_bytes(
            self.take(2, what)?.try_into().expect("2 bytes"),
        ))
    }
    fn u32(&mut self, what: &str) -> Result<u32, RecordError> {
        Ok(u32::from_le_bytes(
            self.take(4, what)?.try_into().expect("4 bytes"),
        ))
    }
    fn u64(&mut self, what: &str) -> Result<u64, RecordError> {
        Ok(u64::from_le_bytes(
            self.take(8, what)?.try_into().expect("8 bytes"),
        ))
    }
    fn f32(&mut self, what: &str) -> Result<f32, RecordError> {
        Ok(f32::from_le_bytes(
            self.take(4, what)?.try_into().expect("4 bytes"),
        ))
    }
    fn malformed(&self, what: String) -> RecordError {
        RecordError::Malformed {
            offset: self.base + self.pos,
            what,
        }
    }
    /// A count, rejected when larger than `max` or than the bytes left could hold.
    fn count(
        &mut self,
        n: usize,
        max: usize,
        item_size: usize,
        what: &str,
    ) -> Result<usize, RecordError> {
        if n > max || n.saturating_mul(item_size) > self.bytes.len() - self.pos {
            return Err(self.malformed(format!("{what} count {n} is impossible")));
        }
        Ok(n)
    }
}

fn decode_game(c: &mut Cursor<'_>, with_surprise: bool) -> Result<GameRecord, RecordError> {
    let game_id = c.u64("game id")?;
    let fen_len = c.u16("FEN length")? as usize;
    let fen_len = c.count(fen_len, MAX_FEN_LEN, 1, "FEN byte")?;
    let fen = c.take(fen_len, "FEN")?;
    let start_fen = std::str::from_utf8(fen)
        .map_err(|_| c.malformed("FEN is not UTF-8".into()))?
        .to_string();
    let n = c.u32("move count")? as usize;
    let n = c.count(n, MAX_GAME_MOVES, 2, "move")?;
    let moves = (0..n)
        .map(|_| c.u16("move"))
        .collect::<Result<Vec<_>, _>>()?;
    let result = c.u8("result")?;
    let result = GameResult::from_code(result)
        .ok_or_else(|| c.malformed(format!("result code {result}")))?;
    let end = c.u8("end")?;
    let end = GameEnd::from_code(end).ok_or_else(|| c.malformed(format!("end code {end}")))?;
    let flags = c.u8("flags")?;
    if flags > 1 {
        return Err(c.malformed(format!("unknown flags {flags:#x}")));
    }
    let would = c.u8("would-resign")?;
    let would_resign = match would {
        255 => None,
        code => Some(
            GameResult::from_code(code)
                .ok_or_else(|| c.malformed(format!("would-resign code {code}")))?,
        ),
    };
    let n = c.u32("sample count")? as usize;
    let n = c.count(n, MAX_GAME_MOVES + 1, 10, "sample")?;
    let mut samples = Vec::with_capacity(n);
    for _ in 0..n {
        let ply = c.u32("sample ply")?;
        let root_value = c.f32("sample value")?;
        let surprise = if with_surprise {
            c.f32("sample surprise")?
        } else {
            0.0
        };
        let k = c.u16("target length")? as usize;
        let k = c.count(k, MAX_MOVES, 6, "target entry")?;
        let mut policy = Vec::with_capacity(k);
        for _ in 0..k {
            policy.push((c.u16("target move")?, c.f32("target probability")?));
        }
        samples.push(Sample {
            ply,
            root_value,
            surprise,
            policy,
        });
    }
    Ok(GameRecord {
        game_id,
        start_fen,
        moves,
        samples,
        result,
        end,
        resignation_disabled: flags & 1 != 0,
        would_resign,
    })
}

/// Parses and verifies shard bytes: length, magic, version, checksum, then every game
/// structurally and by replaying it ([`GameRecord::validate`]).
pub fn decode_shard(bytes: &[u8]) -> Result<Vec<GameRecord>, RecordError> {
    let (frame, with_surprise) = match FORMAT.decode(bytes, |_, payload_len| Some(payload_len)) {
        Err(FrameError::UnsupportedVersion { found: 1, .. }) => (
            FORMAT_V1
                .decode(bytes, |_, payload_len| Some(payload_len))
                .map_err(RecordError::from)?,
            false,
        ),
        frame => (frame.map_err(RecordError::from)?, true),
    };
    let games = frame.word as usize;
    let mut c = Cursor {
        bytes: frame.body,
        pos: 0,
        base: yari_io::frame::HEADER_LEN,
    };
    // Never more room than the payload could fill: the count is read from the file, and a
    // 3 KB shard claiming 65,536 games once reserved 5.8 MB.
    let mut out = Vec::with_capacity(games.min(c.bytes.len() / MIN_GAME_BYTES));
    for _ in 0..games {
        let game = decode_game(&mut c, with_surprise)?;
        game.validate()?;
        out.push(game);
    }
    if c.pos != c.bytes.len() {
        return Err(c.malformed(format!(
            "{} bytes left after {games} games",
            c.bytes.len() - c.pos
        )));
    }
    Ok(out)
}

/// Reads and verifies one shard file.
pub fn read_shard(path: impl AsRef<Path>) -> Result<Vec<GameRecord>, RecordError> {
    let path = path.as_ref();
    let bytes =
        yari_io::read_regular_file(path, MAX_SHARD_BYTES).map_err(|source| RecordError::Io {
            path: path.to_path_buf(),
            source,
        })?;
    decode_shard(&bytes)
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> RecordError + '_ {
    move |source| RecordError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Writes `games` to `path` atomically: a temporary file in the same directory, synced,
/// then renamed over `path`, so a crash never leaves a partial shard under a shard's name.
pub fn write_shard(path: impl AsRef<Path>, games: &[GameRecord]) -> Result<(), RecordError> {
    let path = path.as_ref();
    let bytes = encode_shard(games)?;
    yari_io::write_atomic(path, &bytes).map_err(|e| RecordError::Io {
        path: e.path().to_path_buf(),
        source: e.into_io(),
    })
}

/// Finished shards in `dir` (temporary files ignored), sorted by name.
pub fn list_shards(dir: impl AsRef<Path>) -> Result<Vec<PathBuf>, RecordError> {
    let dir = dir.as_ref();
    let mut out = Vec::new();
    for entry in fs::read_dir(dir).map_err(io_err(dir))? {
        let path = entry.map_err(io_err(dir))?.path();
        let hidden = path
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with('.'));
        if !hidden && path.extension().is_some_and(|e| e == SHARD_EXTENSION) && path.is_file() {
            out.push(path);
        }
    }
    out.sort();
    Ok(out)
}

/// Removes the temporary shard files in `dir` left by processes that are gone (a kill
/// between writing a shard and renaming it leaves one), and returns them. Their games are
/// not lost twice: every game in such a file is either in the shard it was to replace or
/// was in flight. [`ShardWriter::new`] calls it, so opening a games directory cleans it.
pub fn remove_stale_temp_files(dir: impl AsRef<Path>) -> Result<Vec<PathBuf>, RecordError> {
    let dir = dir.as_ref();
    yari_io::remove_stale_temp_files(dir, |target| {
        Path::new(target)
            .extension()
            .is_some_and(|e| e == SHARD_EXTENSION)
    })
    .map_err(|e| RecordError::Io {
        path: e.path().to_path_buf(),
        source: e.into_io(),
    })
}

/// Collects finished games into numbered shards `{prefix}-{n:05}.yshard`.
///
/// Every game is on disk once [`ShardWriter::push`] returns: the open shard is rewritten
/// (atomically, synced) with the new game added, so a kill loses only the games still being
/// played, never finished ones, and the files are always ordinary complete shards that any
/// reader takes as they are. The price is rewriting a shard's earlier games with each new
/// one, which is small beside playing a game (a record is tens of kilobytes).
pub struct ShardWriter {
    dir: PathBuf,
    prefix: String,
    per_shard: usize,
    /// The games of the open (not yet full) shard, all already on disk.
    buffer: Vec<GameRecord>,
    next_index: usize,
    written: Vec<PathBuf>,
    removed_temps: Vec<PathBuf>,
}

impl ShardWriter {
    /// Creates `dir` if needed and removes the temporary files dead writers left in it
    /// ([`remove_stale_temp_files`]). `prefix` should be unique per run: existing shards are
    /// never overwritten.
    pub fn new(
        dir: impl Into<PathBuf>,
        prefix: impl Into<String>,
        per_shard: usize,
    ) -> Result<Self, RecordError> {
        let dir = dir.into();
        fs::create_dir_all(&dir).map_err(io_err(&dir))?;
        let removed_temps = remove_stale_temp_files(&dir)?;
        Ok(Self {
            dir,
            prefix: prefix.into(),
            per_shard: per_shard.max(1),
            buffer: Vec::new(),
            next_index: 0,
            written: Vec::new(),
            removed_temps,
        })
    }

    /// The stale temporary files [`ShardWriter::new`] removed.
    pub fn removed_temp_files(&self) -> &[PathBuf] {
        &self.removed_temps
    }

    fn path(&self, index: usize) -> PathBuf {
        self.dir
            .join(format!("{}-{index:05}.{SHARD_EXTENSION}", self.prefix))
    }

    /// Adds a game and writes it to disk before returning: into the open shard, which is
    /// closed once it holds `per_shard` games.
    pub fn push(&mut self, game: GameRecord) -> Result<(), RecordError> {
        let path = self.path(self.next_index);
        if self.buffer.is_empty() && path.exists() {
            return Err(RecordError::AlreadyExists(path));
        }
        self.buffer.push(game);
        if let Err(e) = write_shard(&path, &self.buffer) {
            // Not on disk, so not kept: the caller sees the error and the shard keeps what
            // was written before.
            self.buffer.pop();
            return Err(e);
        }
        if self.buffer.len() == 1 {
            self.written.push(path);
        }
        if self.buffer.len() >= self.per_shard {
            self.buffer.clear();
            self.next_index += 1;
        }
        Ok(())
    }

    /// The shards written.
    pub fn finish(self) -> Result<Vec<PathBuf>, RecordError> {
        Ok(self.written)
    }
}
