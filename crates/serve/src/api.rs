//! The server's answers: pages, assets and the JSON API, as a pure function of the request's
//! method, URL and body (the HTTP side lives in the crate root), so tests call it directly.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_json::{json, Value};
use yari_io::layout::{generation_name, parse_generation_name};
use yari_io::RunPaths;
use yari_rules::pgn::PgnGame;
use yari_search::engine::{Budget, Engine, EngineOptions, DEFAULT_SIMULATIONS};
use yari_search::Evaluator;

use crate::board::{position_json, replay, Game};
use crate::games::{self, Catalog};
use crate::{assets, run, Limits, ServeOptions};

/// Most games `/api/games` lists unless asked (the newest).
const DEFAULT_GAME_LIST: usize = 500;

/// One of the embedded pages as an answer.
fn page(name: &str) -> Result<Reply, Reply> {
    match assets::page(name) {
        Some(html) => Ok(Reply::new(
            200,
            "text/html; charset=utf-8",
            html.as_bytes().to_vec(),
        )),
        None => Err(Reply::error(404, format!("no page {name}"))),
    }
}

/// An HTTP answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Reply {
    pub(crate) fn new(status: u16, content_type: &str, body: Vec<u8>) -> Reply {
        Reply {
            status,
            headers: vec![
                ("Content-Type".into(), content_type.into()),
                ("X-Content-Type-Options".into(), "nosniff".into()),
                ("Cache-Control".into(), "no-store".into()),
                // Only the server's own scripts and styles run in its pages.
                (
                    "Content-Security-Policy".into(),
                    "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:"
                        .into(),
                ),
            ],
            body,
        }
    }

    pub fn json(value: &Value) -> Reply {
        Reply::new(200, "application/json", value.to_string().into_bytes())
    }

    /// An error as `{"error": message}`.
    pub fn error(status: u16, message: impl Into<String>) -> Reply {
        let body = json!({ "error": message.into() }).to_string().into_bytes();
        Reply::new(status, "application/json", body)
    }

    /// The body as JSON (for tests and callers that proxy it).
    pub fn body_json(&self) -> Option<Value> {
        serde_json::from_slice(&self.body).ok()
    }
}

/// A game sent by a page: a start FEN (the start position when absent) and the moves.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GameRequest {
    fen: Option<String>,
    #[serde(default)]
    moves: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ThinkRequest {
    fen: Option<String>,
    #[serde(default)]
    moves: Vec<String>,
    nodes: Option<u32>,
    movetime_ms: Option<u64>,
    threads: Option<usize>,
    model: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PgnRequest {
    fen: Option<String>,
    #[serde(default)]
    moves: Vec<String>,
    white: Option<String>,
    black: Option<String>,
}

/// An engine with its own lock: one search at a time on a tree.
type SharedEngine = Arc<Mutex<Engine>>;

/// The server's state: what it serves, and the engines and listings it keeps between
/// requests.
pub struct App {
    options: ServeOptions,
    evaluators: Mutex<HashMap<String, Arc<dyn Evaluator>>>,
    engines: Mutex<HashMap<(String, usize), SharedEngine>>,
    catalog: Catalog,
}

/// `key=value&...` with `+` and `%XX` decoded.
fn query_params(query: &str) -> HashMap<String, String> {
    query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|pair| {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            (percent_decode(k), percent_decode(v))
        })
        .collect()
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).ok();
                match hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                    Some(b) => {
                        out.push(b);
                        i += 2;
                    }
                    None => out.push(b'%'),
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn parse_body<'a, T: Deserialize<'a>>(body: &'a [u8]) -> Result<T, Reply> {
    serde_json::from_slice(body).map_err(|e| Reply::error(400, format!("bad request body: {e}")))
}

impl App {
    pub fn new(options: ServeOptions) -> App {
        App {
            options,
            evaluators: Mutex::new(HashMap::new()),
            engines: Mutex::new(HashMap::new()),
            catalog: Catalog::new(),
        }
    }

    pub fn limits(&self) -> Limits {
        self.options.limits
    }

    /// The answer to `method url` with `body`.
    pub fn handle(&self, method: &str, url: &str, body: &[u8]) -> Reply {
        let (path, query) = url.split_once('?').unwrap_or((url, ""));
        let query = query_params(query);
        let get = method == "GET" || method == "HEAD";
        let post = method == "POST";
        let answer = match path {
            "/" | "/index.html" if get => page("play.html"),
            "/run" if get => page("run.html"),
            "/game" if get => page("game.html"),
            p if get && p.starts_with("/assets/") => {
                let name = &p["/assets/".len()..];
                match assets::asset(name) {
                    Some((content_type, text)) => {
                        Ok(Reply::new(200, content_type, text.as_bytes().to_vec()))
                    }
                    None => Err(Reply::error(404, format!("no asset {name:?}"))),
                }
            }
            "/api/info" if get => Ok(self.info()),
            "/api/position" if post => self.position(body),
            "/api/think" if post => self.think(body),
            "/api/pgn" if post => self.game_pgn(body),
            "/api/pgn" if get => self.run_game_pgn(&query),
            "/api/run" if get => self.run_page(),
            "/api/games" if get => self.games(&query),
            "/api/game" if get => self.run_game(&query),
            "/" | "/index.html" | "/run" | "/game" | "/api/info" | "/api/position"
            | "/api/think" | "/api/pgn" | "/api/run" | "/api/games" | "/api/game" => Err(
                Reply::error(405, format!("{method} is not allowed on {path}")),
            ),
            _ => Err(Reply::error(404, format!("no page {path}"))),
        };
        answer.unwrap_or_else(|refusal| refusal)
    }

    fn run_paths(&self) -> Result<RunPaths, Reply> {
        self.options
            .run_dir
            .as_ref()
            .map(RunPaths::new)
            .ok_or_else(|| Reply::error(404, "the server was started without --run-dir"))
    }

    /// The names a page may pick a model by: `default` and the run's checkpoints.
    fn model_names(&self) -> Vec<String> {
        let mut names = vec!["default".to_string()];
        if let (Ok(run), Some(_)) = (self.run_paths(), &self.options.load_model) {
            names.extend(run::checkpoints(&run).into_iter().map(generation_name));
        }
        names
    }

    fn info(&self) -> Reply {
        let limits = self.options.limits;
        Reply::json(&json!({
            "model": self.options.model_name,
            "run_dir": self.options.run_dir.as_ref().map(|d| d.display().to_string()),
            "models": self.model_names(),
            "max_threads": limits.max_threads,
            "max_nodes": limits.max_nodes,
            "max_movetime_ms": limits.max_movetime_ms,
        }))
    }

    fn replay(&self, fen: Option<&str>, moves: &[String]) -> Result<Game, Reply> {
        replay(fen, moves, self.options.limits.max_moves).map_err(|e| Reply::error(400, e))
    }

    fn position(&self, body: &[u8]) -> Result<Reply, Reply> {
        let req: GameRequest = parse_body(body)?;
        let game = self.replay(req.fen.as_deref(), &req.moves)?;
        Ok(Reply::json(&position_json(&game)))
    }

    /// The evaluator called `name` (`default` or a checkpoint of the run).
    fn evaluator(&self, name: &str) -> Result<Arc<dyn Evaluator>, Reply> {
        if name == "default" {
            return Ok(self.options.evaluator.clone());
        }
        let unknown = || {
            Reply::error(
                400,
                format!(
                    "unknown model {name:?}: one of {}",
                    self.model_names().join(", ")
                ),
            )
        };
        let generation = parse_generation_name(name).ok_or_else(unknown)?;
        let (run, load) = match (self.run_paths(), &self.options.load_model) {
            (Ok(run), Some(load)) => (run, load),
            _ => return Err(unknown()),
        };
        if !run::checkpoints(&run).contains(&generation) {
            return Err(unknown());
        }
        let key = generation_name(generation);
        if let Some(e) = self.lock_evaluators().get(&key) {
            return Ok(e.clone());
        }
        let path: PathBuf = run.model_file(generation);
        let evaluator =
            load(&path).map_err(|e| Reply::error(500, format!("loading {key}: {e}")))?;
        self.lock_evaluators().insert(key, evaluator.clone());
        Ok(evaluator)
    }

    fn lock_evaluators(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<dyn Evaluator>>> {
        self.evaluators.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn engine(&self, model: &str, threads: usize) -> Result<SharedEngine, Reply> {
        let key = (model.to_string(), threads);
        if let Some(engine) = self
            .engines
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&key)
        {
            return Ok(engine.clone());
        }
        let evaluator = self.evaluator(model)?;
        let options = EngineOptions {
            threads,
            ..EngineOptions::one_thread()
        };
        let engine = Engine::new(evaluator, Engine::play_config(), options)
            .map_err(|e| Reply::error(500, format!("setting up the search: {e}")))?;
        let engine = Arc::new(Mutex::new(engine));
        self.engines
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(key, engine.clone());
        Ok(engine)
    }

    fn think(&self, body: &[u8]) -> Result<Reply, Reply> {
        let req: ThinkRequest = parse_body(body)?;
        let limits = self.options.limits;
        let game = self.replay(req.fen.as_deref(), &req.moves)?;
        if game.position.outcome().is_some() {
            return Err(Reply::error(
                400,
                "the game is over: there is no move to search",
            ));
        }
        let threads = req.threads.unwrap_or(1);
        if !(1..=limits.max_threads).contains(&threads) {
            return Err(Reply::error(
                400,
                format!(
                    "threads {threads}: 1 to {} on this server",
                    limits.max_threads
                ),
            ));
        }
        let budget = match (req.nodes, req.movetime_ms) {
            (Some(_), Some(_)) => {
                return Err(Reply::error(400, "give nodes or movetime_ms, not both"))
            }
            (Some(n), None) if (1..=limits.max_nodes).contains(&n) => Budget::simulations(n),
            (Some(n), None) => {
                return Err(Reply::error(
                    400,
                    format!("nodes {n}: 1 to {} on this server", limits.max_nodes),
                ))
            }
            (None, Some(ms)) if (1..=limits.max_movetime_ms).contains(&ms) => {
                Budget::movetime(Duration::from_millis(ms))
            }
            (None, Some(ms)) => {
                return Err(Reply::error(
                    400,
                    format!(
                        "movetime_ms {ms}: 1 to {} on this server",
                        limits.max_movetime_ms
                    ),
                ))
            }
            (None, None) => Budget::simulations(DEFAULT_SIMULATIONS),
        };
        let model = req.model.as_deref().unwrap_or("default");
        let engine = self.engine(model, threads)?;
        let engine = engine.lock().unwrap_or_else(|e| e.into_inner());
        let stop = AtomicBool::new(false);
        let thought = engine
            .think(
                &game.position,
                budget,
                Instant::now(),
                &stop,
                Duration::from_secs(3600),
                |_| {},
            )
            .map_err(|e| Reply::error(500, format!("search failed: {e}")))?;
        drop(engine);
        let best = thought.result.best_move;
        let mut moves = req.moves.clone();
        if let Some(mv) = best {
            moves.push(mv.to_string());
        }
        let after = self.replay(req.fen.as_deref(), &moves)?;
        Ok(Reply::json(&json!({
            "bestmove": best.map(|m| m.to_string()),
            "pv": thought.result.pv.iter().map(|m| m.to_string()).collect::<Vec<_>>(),
            "wdl": thought.wdl_per_mille(),
            "cp": thought.centipawns(),
            "mate": thought.mate_in(&game.position),
            "nodes": thought.result.simulations,
            "nps": thought.nodes_per_second,
            "elapsed_ms": thought.elapsed.as_secs_f64() * 1000.0,
            "model": model,
            "position": position_json(&after),
        })))
    }

    /// The play page's game as PGN.
    fn game_pgn(&self, body: &[u8]) -> Result<Reply, Reply> {
        let req: PgnRequest = parse_body(body)?;
        let game = self.replay(req.fen.as_deref(), &req.moves)?;
        let pgn = PgnGame::new(game.start, game.moves)
            .tag("Event", "yari serve")
            .tag("Site", "yari-zero")
            .tag("White", req.white.unwrap_or_else(|| "?".into()))
            .tag("Black", req.black.unwrap_or_else(|| "?".into()))
            .write()
            .map_err(|e| Reply::error(400, e.to_string()))?;
        Ok(Reply::json(&json!({ "pgn": pgn })))
    }

    fn run_page(&self) -> Result<Reply, Reply> {
        let paths = self.run_paths()?;
        run::run_json(paths.root())
            .map(|v| Reply::json(&v))
            .map_err(|e| Reply::error(500, e))
    }

    fn games(&self, query: &HashMap<String, String>) -> Result<Reply, Reply> {
        let paths = self.run_paths()?;
        let limit = match query.get("limit") {
            None => DEFAULT_GAME_LIST,
            Some(l) => l
                .parse()
                .map_err(|_| Reply::error(400, format!("limit {l:?}: not a number")))?,
        };
        let all = self
            .catalog
            .list(paths.root())
            .map_err(|e| Reply::error(500, e.to_string()))?;
        let total = all.len();
        let newest: Vec<_> = all.into_iter().rev().take(limit).collect();
        Ok(Reply::json(&json!({ "games": newest, "total": total })))
    }

    fn load_game(&self, query: &HashMap<String, String>) -> Result<games::GameDetail, Reply> {
        let paths = self.run_paths()?;
        let id = query
            .get("id")
            .ok_or_else(|| Reply::error(400, "no game id (?id=...)"))?;
        games::load(paths.root(), id).map_err(|e| match e {
            games::GamesError::NotFound(_) => Reply::error(404, e.to_string()),
            _ => Reply::error(500, e.to_string()),
        })
    }

    fn run_game(&self, query: &HashMap<String, String>) -> Result<Reply, Reply> {
        let game = self.load_game(query)?;
        let pgn = game.pgn().map_err(|e| Reply::error(500, e.to_string()))?;
        let mut value = serde_json::to_value(&game)
            .map_err(|e| Reply::error(500, format!("encoding the game: {e}")))?;
        value["pgn"] = Value::String(pgn);
        Ok(Reply::json(&value))
    }

    fn run_game_pgn(&self, query: &HashMap<String, String>) -> Result<Reply, Reply> {
        let game = self.load_game(query)?;
        let pgn = game.pgn().map_err(|e| Reply::error(500, e.to_string()))?;
        let name = yari_io::layout::name_part(&game.summary.id, &['-']);
        let mut reply = Reply::new(200, "application/x-chess-pgn", pgn.into_bytes());
        reply.headers.push((
            "Content-Disposition".into(),
            format!("attachment; filename=\"{name}.pgn\""),
        ));
        Ok(reply)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percent_decoding_handles_escapes_plus_and_stray_percent_signs() {
        assert_eq!(percent_decode("a%2Fb+c"), "a/b c");
        assert_eq!(percent_decode("100%"), "100%");
        assert_eq!(percent_decode("%zz"), "%zz");
        let q = query_params("id=selfplay%2Fgen-0001%2Fa.yshard%2F3&limit=5");
        assert_eq!(q["id"], "selfplay/gen-0001/a.yshard/3");
        assert_eq!(q["limit"], "5");
    }
}
