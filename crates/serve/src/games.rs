//! Every game of a run directory: the self-play games in its shards (`games/gen-NNNN/`) and
//! the gating and rating games in its arena files (`arena/*.jsonl`), each named by an id
//! that says where it lives, and written as PGN. `yari games` and the server's game viewer
//! both read them through here.
//!
//! Ids: `selfplay/gen-0003/SHARD/INDEX` (the shard's file name and the game's place in it)
//! and `arena/FILE/INDEX` (the file's name and the game's place among its readable lines).
//! An id is looked up among the files the run has, never joined onto a path as given, so no
//! id reaches outside the run directory.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;

use serde::Serialize;
use thiserror::Error;
use yari_arena::{GameRecord as ArenaGame, Reason};
use yari_io::layout::parse_generation_name;
use yari_io::RunPaths;
use yari_rules::pgn::{Adjudication, PgnError, PgnGame};
use yari_rules::{Color, Move, Position};
use yari_selfplay::{GameEnd, GameRecord as SelfplayGame};

/// Why a game could not be listed or read.
#[derive(Debug, Error)]
pub enum GamesError {
    #[error("no game {0:?} in this run")]
    NotFound(String),
    #[error("reading {path}: {reason}")]
    Read { path: PathBuf, reason: String },
    #[error("game {id}: {source}")]
    Pgn { id: String, source: PgnError },
    #[error("game {id}: {reason}")]
    Damaged { id: String, reason: String },
}

/// What a list of games shows of each.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct GameSummary {
    pub id: String,
    /// `selfplay` or `arena`.
    pub kind: &'static str,
    /// The generation whose self-play (or whose gating or rating match) played it.
    pub generation: Option<u32>,
    pub white: String,
    pub black: String,
    /// `1-0`, `0-1` or `1/2-1/2`.
    pub result: String,
    pub reason: String,
    pub plies: usize,
}

/// What the search said about one position of a game, where the record kept it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Annotation {
    /// Search value for the side to move, in [-1, 1].
    pub value: Option<f32>,
    /// The search's policy target, most likely first.
    pub policy: Option<Vec<(String, f32)>>,
}

/// One whole game.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct GameDetail {
    #[serde(flatten)]
    pub summary: GameSummary,
    pub start_fen: String,
    pub moves: Vec<String>,
    /// One per move, for the position before it.
    pub annotations: Vec<Annotation>,
    /// Milliseconds each move took (arena games that timed them).
    pub move_ms: Option<Vec<f64>>,
    /// How the game ended off the board (resignation, forfeit, ply cap).
    #[serde(skip)]
    pub adjudication: Option<Adjudication>,
}

impl GameDetail {
    /// The game as PGN (see [`yari_rules::pgn`]); the result is the rules' where they ended
    /// the game, else the record's adjudication.
    pub fn pgn(&self) -> Result<String, GamesError> {
        let pgn_err = |source| GamesError::Pgn {
            id: self.summary.id.clone(),
            source,
        };
        let start = Position::from_fen(&self.start_fen).map_err(|e| GamesError::Damaged {
            id: self.summary.id.clone(),
            reason: format!("bad start FEN: {e}"),
        })?;
        let mut pos = start.clone();
        let mut moves = Vec::with_capacity(self.moves.len());
        for (i, text) in self.moves.iter().enumerate() {
            let mv = pos.parse_move(text).map_err(|_| {
                pgn_err(PgnError::Illegal {
                    ply: i + 1,
                    mv: text.clone(),
                    fen: pos.fen(),
                })
            })?;
            pos.play(mv);
            moves.push(mv);
        }
        let kind = match self.summary.kind {
            "selfplay" => "self-play",
            _ => "arena",
        };
        let mut game = PgnGame::new(start, moves)
            .tag("Event", format!("yari-zero {kind}"))
            .tag("Site", "yari-zero")
            .tag("Round", self.summary.id.clone())
            .tag("White", self.summary.white.clone())
            .tag("Black", self.summary.black.clone());
        game.adjudication = self.adjudication;
        game.write().map_err(pgn_err)
    }
}

/// Listings of files already read, kept while the file is unchanged (a run page asks for
/// the list every few seconds; a long run has thousands of games).
#[derive(Default)]
pub struct Catalog {
    cache: Mutex<HashMap<PathBuf, Listing>>,
}

/// A file's games with the modification time and size they were read at.
type Listing = (Option<SystemTime>, u64, Vec<GameSummary>);

fn read_err(path: &Path, reason: impl ToString) -> GamesError {
    GamesError::Read {
        path: path.to_path_buf(),
        reason: reason.to_string(),
    }
}

/// The generation folders of the self-play games, in order.
fn generation_dirs(run: &RunPaths) -> Result<Vec<(u32, PathBuf)>, GamesError> {
    let dir = run.games_dir();
    let entries = match std::fs::read_dir(&dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(read_err(&dir, e)),
    };
    let mut out: Vec<(u32, PathBuf)> = entries
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name().to_str()?.to_string();
            Some((parse_generation_name(&name)?, e.path()))
        })
        .filter(|(_, p)| p.is_dir())
        .collect();
    out.sort();
    Ok(out)
}

/// The arena's game files, in name order.
fn arena_files(run: &RunPaths) -> Result<Vec<PathBuf>, GamesError> {
    let dir = run.arena_dir();
    let entries = match std::fs::read_dir(&dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(read_err(&dir, e)),
    };
    let mut out: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl") && p.is_file())
        .collect();
    out.sort();
    Ok(out)
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

fn selfplay_name(generation: u32) -> String {
    format!("self-play {}", yari_io::layout::generation_name(generation))
}

fn selfplay_summary(id: String, generation: u32, game: &SelfplayGame) -> GameSummary {
    let name = selfplay_name(generation);
    GameSummary {
        id,
        kind: "selfplay",
        generation: Some(generation),
        white: name.clone(),
        black: name,
        result: match game.result.winner() {
            Some(Color::White) => "1-0",
            Some(Color::Black) => "0-1",
            None => "1/2-1/2",
        }
        .into(),
        reason: game.end.as_str().into(),
        plies: game.moves.len(),
    }
}

/// The generation an arena file belongs to, from its name (`gate-gen-0003.jsonl`,
/// `rate-gen-0003-random.jsonl`).
fn arena_generation(name: &str) -> Option<u32> {
    let at = name.find("gen-")?;
    let digits: String = name[at + 4..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    parse_generation_name(&format!("gen-{digits}"))
}

fn arena_summary(id: String, file: &str, game: &ArenaGame) -> GameSummary {
    GameSummary {
        id,
        kind: "arena",
        generation: arena_generation(file),
        white: game.white.clone(),
        black: game.black.clone(),
        result: game.result.clone(),
        reason: game.reason.as_str().into(),
        plies: game.moves.len(),
    }
}

fn read_selfplay(path: &Path) -> Result<Vec<SelfplayGame>, GamesError> {
    yari_selfplay::read_shard(path).map_err(|e| read_err(path, e))
}

fn read_arena(path: &Path) -> Result<Vec<ArenaGame>, GamesError> {
    yari_arena::jsonl::read::<ArenaGame>(path)
        .map(|r| r.records)
        .map_err(|e| read_err(path, e))
}

impl Catalog {
    pub fn new() -> Catalog {
        Catalog::default()
    }

    /// `list` of `path`, from the cache while the file's size and time are unchanged.
    fn cached(
        &self,
        path: &Path,
        list: impl FnOnce() -> Result<Vec<GameSummary>, GamesError>,
    ) -> Result<Vec<GameSummary>, GamesError> {
        let meta = std::fs::metadata(path).map_err(|e| read_err(path, e))?;
        let stamp = (meta.modified().ok(), meta.len());
        let cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((modified, len, games)) = cache.get(path) {
            if (*modified, *len) == stamp {
                return Ok(games.clone());
            }
        }
        drop(cache);
        let games = list()?;
        self.cache
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(path.to_path_buf(), (stamp.0, stamp.1, games.clone()));
        Ok(games)
    }

    /// Every game of the run: self-play by generation and shard, then the arena files. A
    /// shard or file that cannot be read (one being written is never visible: both are
    /// written whole and renamed, or appended a line at a time) is an error naming it.
    pub fn list(&self, run_dir: &Path) -> Result<Vec<GameSummary>, GamesError> {
        let run = RunPaths::new(run_dir);
        let mut out = Vec::new();
        for (generation, dir) in generation_dirs(&run)? {
            let shards = yari_selfplay::list_shards(&dir).map_err(|e| read_err(&dir, e))?;
            for shard in shards {
                let prefix = format!(
                    "selfplay/{}/{}",
                    yari_io::layout::generation_name(generation),
                    file_name(&shard)
                );
                out.extend(self.cached(&shard, || {
                    Ok(read_selfplay(&shard)?
                        .iter()
                        .enumerate()
                        .map(|(i, g)| selfplay_summary(format!("{prefix}/{i}"), generation, g))
                        .collect())
                })?);
            }
        }
        for file in arena_files(&run)? {
            let name = file_name(&file);
            out.extend(self.cached(&file, || {
                Ok(read_arena(&file)?
                    .iter()
                    .enumerate()
                    .map(|(i, g)| arena_summary(format!("arena/{name}/{i}"), &name, g))
                    .collect())
            })?);
        }
        Ok(out)
    }
}

/// One game of the run by its id.
pub fn load(run_dir: &Path, id: &str) -> Result<GameDetail, GamesError> {
    let not_found = || GamesError::NotFound(id.to_string());
    let run = RunPaths::new(run_dir);
    let parts: Vec<&str> = id.split('/').collect();
    match parts.as_slice() {
        ["selfplay", generation, shard, index] => {
            let g = parse_generation_name(generation).ok_or_else(not_found)?;
            let index: usize = index.parse().map_err(|_| not_found())?;
            let dir = generation_dirs(&run)?
                .into_iter()
                .find(|(n, _)| *n == g)
                .map(|(_, d)| d)
                .ok_or_else(not_found)?;
            let path = yari_selfplay::list_shards(&dir)
                .map_err(|e| read_err(&dir, e))?
                .into_iter()
                .find(|p| file_name(p) == *shard)
                .ok_or_else(not_found)?;
            let games = read_selfplay(&path)?;
            let game = games.get(index).ok_or_else(not_found)?;
            selfplay_detail(id, g, game)
        }
        ["arena", file, index] => {
            let index: usize = index.parse().map_err(|_| not_found())?;
            let path = arena_files(&run)?
                .into_iter()
                .find(|p| file_name(p) == *file)
                .ok_or_else(not_found)?;
            let games = read_arena(&path)?;
            let game = games.get(index).ok_or_else(not_found)?;
            Ok(arena_detail(id, file, game))
        }
        _ => Err(not_found()),
    }
}

fn selfplay_detail(
    id: &str,
    generation: u32,
    game: &SelfplayGame,
) -> Result<GameDetail, GamesError> {
    let damaged = |reason: String| GamesError::Damaged {
        id: id.to_string(),
        reason,
    };
    let moves: Vec<Move> = game
        .moves
        .iter()
        .map(|&code| Move::from_u16(code).ok_or_else(|| damaged(format!("bad move code {code}"))))
        .collect::<Result<_, _>>()?;
    let mut annotations = vec![
        Annotation {
            value: None,
            policy: None,
        };
        moves.len()
    ];
    for sample in &game.samples {
        if let Some(slot) = annotations.get_mut(sample.ply as usize) {
            let mut policy: Vec<(String, f32)> = sample
                .policy
                .iter()
                .filter_map(|&(code, p)| Some((Move::from_u16(code)?.to_string(), p)))
                .collect();
            policy.sort_by(|a, b| b.1.total_cmp(&a.1));
            *slot = Annotation {
                value: Some(sample.root_value),
                policy: Some(policy),
            };
        }
    }
    game.final_position().map_err(|e| damaged(e.to_string()))?;
    let adjudication = match (game.end, game.result.winner()) {
        (GameEnd::Resignation, Some(winner)) => Some(Adjudication::Resignation(!winner)),
        (GameEnd::PlyCap, _) => Some(Adjudication::PlyCap),
        _ => None,
    };
    Ok(GameDetail {
        summary: selfplay_summary(id.to_string(), generation, game),
        start_fen: game.start_fen.clone(),
        moves: moves.iter().map(Move::to_string).collect(),
        annotations,
        move_ms: None,
        adjudication,
    })
}

fn arena_detail(id: &str, file: &str, game: &ArenaGame) -> GameDetail {
    let loser = match game.winner {
        Some(yari_arena::Side::White) => Some(Color::Black),
        Some(yari_arena::Side::Black) => Some(Color::White),
        None => None,
    };
    let adjudication = match (game.reason, loser) {
        (Reason::PlyCap, _) => Some(Adjudication::PlyCap),
        (Reason::IllegalMove | Reason::PlayerFailure | Reason::Time, Some(c)) => {
            Some(Adjudication::Forfeit(c))
        }
        _ => None,
    };
    GameDetail {
        summary: arena_summary(id.to_string(), file, game),
        start_fen: game.start_fen.clone(),
        moves: game.moves.clone(),
        annotations: vec![
            Annotation {
                value: None,
                policy: None,
            };
            game.moves.len()
        ],
        move_ms: (!game.move_ms.is_empty()).then(|| game.move_ms.clone()),
        adjudication,
    }
}
