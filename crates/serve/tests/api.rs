//! The server's API, called directly and over a real socket: positions and moves, the engine's
//! reply, a run's games and pages, and the refusals (illegal moves, bad FENs, oversized and
//! malformed bodies, foreign hosts, ids that try to leave the run directory).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::sync::Arc;

use serde_json::{json, Value};
use yari_arena::{GameRecord as ArenaGame, Reason, Side};
use yari_io::RunPaths;
use yari_rules::Position;
use yari_search::UniformEvaluator;
use yari_selfplay::{GameEnd, GameRecord, GameResult, Sample};
use yari_serve::{App, Limits, ServeOptions, Server};

fn options(run_dir: Option<&Path>) -> ServeOptions {
    ServeOptions {
        model_name: "uniform".into(),
        evaluator: Arc::new(UniformEvaluator),
        run_dir: run_dir.map(Path::to_path_buf),
        load_model: Some(Arc::new(|_path: &Path| {
            Ok(Arc::new(UniformEvaluator) as Arc<dyn yari_search::Evaluator>)
        })),
        limits: Limits {
            max_threads: 2,
            ..Limits::default()
        },
    }
}

fn post(app: &App, path: &str, body: Value) -> (u16, Value) {
    let reply = app.handle("POST", path, body.to_string().as_bytes());
    (reply.status, reply.body_json().unwrap_or(Value::Null))
}

fn get(app: &App, path: &str) -> (u16, Value) {
    let reply = app.handle("GET", path, b"");
    (reply.status, reply.body_json().unwrap_or(Value::Null))
}

#[test]
fn a_legal_move_is_played_and_an_illegal_one_is_refused_naming_it() {
    let app = App::new(options(None));
    let (status, v) = post(&app, "/api/position", json!({"moves": ["d3d4"]}));
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["side"], "black");
    assert_eq!(v["board"][5][3], "P");
    let (status, v) = post(&app, "/api/position", json!({"moves": ["d3d4", "d4d5"]}));
    assert_eq!(status, 400);
    let e = v["error"].as_str().unwrap();
    assert!(e.contains("move 2") && e.contains("d4d5"), "{e}");
    let (status, v) = post(&app, "/api/position", json!({"fen": "7/7 w - - 0 1"}));
    assert_eq!(status, 400);
    assert!(v["error"].as_str().unwrap().starts_with("bad FEN"), "{v}");
}

#[test]
fn malformed_bodies_unknown_fields_and_wrong_methods_are_refused() {
    let app = App::new(options(None));
    let reply = app.handle("POST", "/api/position", b"{\"moves\": [");
    assert_eq!(reply.status, 400);
    assert!(reply.body_json().unwrap()["error"]
        .as_str()
        .unwrap()
        .contains("bad request body"));
    let (status, v) = post(&app, "/api/position", json!({"movs": []}));
    assert_eq!(status, 400, "{v}");
    assert!(v["error"].as_str().unwrap().contains("movs"), "{v}");
    assert_eq!(get(&app, "/api/position").0, 405);
    assert_eq!(get(&app, "/nothing").0, 404);
    assert_eq!(get(&app, "/assets/../Cargo.toml").0, 404);
    assert_eq!(get(&app, "/api/run").0, 404, "no run directory was given");
}

#[test]
fn the_engine_replies_with_a_legal_move_and_the_position_after_it() {
    let app = App::new(options(None));
    let (status, v) = post(&app, "/api/think", json!({"moves": ["d3d4"], "nodes": 16}));
    assert_eq!(status, 200, "{v}");
    let best = v["bestmove"].as_str().unwrap();
    let mut pos = Position::startpos();
    pos.play_uci("d3d4").unwrap();
    assert!(pos.parse_move(best).is_ok(), "{best} is not legal");
    assert_eq!(v["position"]["moves"], json!(["d3d4", best]));
    assert_eq!(v["position"]["last_move"], best);
    let wdl: u64 = v["wdl"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap())
        .sum();
    assert_eq!(wdl, 1000);
    // Bounds and a finished game.
    assert_eq!(post(&app, "/api/think", json!({"nodes": 0})).0, 400);
    assert_eq!(
        post(&app, "/api/think", json!({"nodes": 10_000_000})).0,
        400
    );
    assert_eq!(
        post(&app, "/api/think", json!({"threads": 3, "nodes": 4})).0,
        400
    );
    assert_eq!(
        post(&app, "/api/think", json!({"nodes": 4, "movetime_ms": 4})).0,
        400
    );
    let (status, v) = post(
        &app,
        "/api/think",
        json!({"fen": "3k3/2p4/7/7/7/7/5+n1/7/5NK[Rp] b - - 0 1", "moves": ["P@g2"], "nodes": 4}),
    );
    assert_eq!(status, 400);
    assert!(v["error"].as_str().unwrap().contains("game is over"), "{v}");
    let (status, v) = post(
        &app,
        "/api/think",
        json!({"nodes": 4, "model": "../../etc/passwd"}),
    );
    assert_eq!(status, 400);
    assert!(
        v["error"].as_str().unwrap().contains("unknown model"),
        "{v}"
    );
}

#[test]
fn the_play_pages_game_exports_as_pgn() {
    let app = App::new(options(None));
    let (status, v) = post(
        &app,
        "/api/pgn",
        json!({"fen": "3k3/2p4/7/7/7/7/5+n1/7/5NK[Rp] b - - 0 1", "moves": ["P@g2"], "white": "You", "black": "yari"}),
    );
    assert_eq!(status, 200, "{v}");
    let pgn = v["pgn"].as_str().unwrap();
    assert!(pgn.contains("[White \"You\"]"), "{pgn}");
    assert!(pgn.contains("[Result \"0-1\"]"), "{pgn}");
    assert!(pgn.contains("[Variant \"yarishogi\"]"), "{pgn}");
    assert!(pgn.contains("1... P@g2 0-1"), "{pgn}");
}

/// A run directory with one self-play shard (two games), one arena file and its state.
fn fake_run(dir: &Path) {
    let run = RunPaths::new(dir);
    let mut pos = Position::startpos();
    let mut moves = Vec::new();
    for text in ["d3d4", "d7d6", "c3c4"] {
        moves.push(pos.play_uci(text).unwrap().to_u16());
    }
    let first = Position::startpos().legal_moves()[0];
    let game = GameRecord {
        game_id: 0,
        start_fen: Position::startpos().fen(),
        moves: moves.clone(),
        samples: vec![Sample {
            ply: 0,
            root_value: 0.25,
            surprise: 0.0,
            policy: vec![(moves[0], 0.75), (first.to_u16(), 0.25)],
        }],
        result: GameResult::Draw,
        end: GameEnd::PlyCap,
        resignation_disabled: false,
        would_resign: None,
    };
    let mate = GameRecord {
        game_id: 1,
        start_fen: "3k3/2p4/7/7/7/7/5+n1/7/5NK[Rp] b - - 0 1".into(),
        moves: vec![
            Position::from_fen("3k3/2p4/7/7/7/7/5+n1/7/5NK[Rp] b - - 0 1")
                .unwrap()
                .parse_move("P@g2")
                .unwrap()
                .to_u16(),
        ],
        samples: vec![],
        result: GameResult::BlackWins,
        end: GameEnd::Checkmate,
        resignation_disabled: false,
        would_resign: None,
    };
    let games_dir = run.generation_games_dir(1);
    std::fs::create_dir_all(&games_dir).unwrap();
    yari_selfplay::write_shard(games_dir.join("shard-000.yshard"), &[game, mate]).unwrap();
    let arena = ArenaGame {
        round: 0,
        white: "gen-0001".into(),
        black: "random".into(),
        opening: 0,
        opening_plies: 0,
        start_fen: Position::startpos().fen(),
        moves: vec!["d3d4".into(), "d7d6".into()],
        result: "1-0".into(),
        winner: Some(Side::White),
        reason: Reason::Time,
        detail: None,
        seed: 7,
        move_ms: vec![12.0, 30.5],
    };
    yari_arena::jsonl::append(&run.arena_dir().join("rate-gen-0001-random.jsonl"), &arena).unwrap();
    std::fs::create_dir_all(run.models_dir()).unwrap();
    std::fs::write(run.model_file(0), b"not read by the fake loader").unwrap();
    std::fs::write(run.model_file(1), b"not read by the fake loader").unwrap();
    std::fs::write(
        run.state_file(),
        json!({"generation": 2, "phase": "Train", "best": "models/gen-0001.yari", "train_target": null, "elapsed_s": 12.5}).to_string(),
    )
    .unwrap();
    std::fs::write(
        run.summary_file(),
        json!([{"generation": 1, "games": 2, "elapsed_s": 10.0, "promoted": true}]).to_string(),
    )
    .unwrap();
    std::fs::write(
        run.config_file(),
        "[run]\nname = \"fake\"\ngenerations = 3\n",
    )
    .unwrap();
}

#[test]
fn a_runs_games_are_listed_replayed_and_exported_and_ids_stay_inside_the_run() {
    let dir = tempfile::tempdir().unwrap();
    fake_run(dir.path());
    let app = App::new(options(Some(dir.path())));
    let (status, v) = get(&app, "/api/games");
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["total"], 3);
    let ids: Vec<&str> = v["games"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        [
            "arena/rate-gen-0001-random.jsonl/0",
            "selfplay/gen-0001/shard-000.yshard/1",
            "selfplay/gen-0001/shard-000.yshard/0"
        ]
    );
    let (status, v) = get(
        &app,
        "/api/game?id=selfplay%2Fgen-0001%2Fshard-000.yshard%2F0",
    );
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["moves"], json!(["d3d4", "d7d6", "c3c4"]));
    assert_eq!(v["annotations"][0]["value"], 0.25);
    assert_eq!(v["annotations"][0]["policy"][0][0], "d3d4");
    assert!(v["annotations"][1]["value"].is_null());
    let pgn = v["pgn"].as_str().unwrap();
    assert!(
        pgn.contains("[Result \"1/2-1/2\"]") && pgn.contains("ply cap"),
        "{pgn}"
    );
    let (_, v) = get(&app, "/api/game?id=selfplay/gen-0001/shard-000.yshard/1");
    assert!(v["pgn"]
        .as_str()
        .unwrap()
        .contains("[Termination \"checkmate\"]"));
    let (_, v) = get(&app, "/api/game?id=arena/rate-gen-0001-random.jsonl/0");
    assert_eq!(v["move_ms"], json!([12.0, 30.5]));
    assert_eq!(v["generation"], 1);
    assert!(v["pgn"]
        .as_str()
        .unwrap()
        .contains("[Termination \"forfeit\"]"));
    let reply = app.handle("GET", "/api/pgn?id=arena/rate-gen-0001-random.jsonl/0", b"");
    assert_eq!(reply.status, 200);
    assert!(String::from_utf8_lossy(&reply.body).starts_with("[Event \"yari-zero arena\"]"));
    assert!(reply
        .headers
        .iter()
        .any(|(k, v)| k == "Content-Disposition" && v.contains("attachment")));
    for bad in [
        "selfplay/gen-0001/../../../etc/passwd/0",
        "arena/../../etc/passwd/0",
        "arena/rate-gen-0001-random.jsonl/9",
        "selfplay/gen-0009/shard-000.yshard/0",
        "../state.json",
        "",
    ] {
        let (status, v) = get(&app, &format!("/api/game?id={bad}"));
        assert_eq!(status, 404, "{bad}: {v}");
    }
}

#[test]
fn the_run_page_reads_progress_budget_and_checkpoints_and_the_models_are_the_runs() {
    let dir = tempfile::tempdir().unwrap();
    fake_run(dir.path());
    let app = App::new(options(Some(dir.path())));
    let (status, v) = get(&app, "/api/run");
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["name"], "fake");
    assert_eq!(v["generation"], 2);
    assert_eq!(v["generations"], 3);
    assert_eq!(v["best"], "gen-0001");
    assert_eq!(v["elapsed_s"], 12.5);
    assert_eq!(v["finished"], false);
    assert_eq!(v["checkpoints"], json!(["gen-0000", "gen-0001"]));
    let (_, info) = get(&app, "/api/info");
    assert_eq!(info["models"], json!(["default", "gen-0000", "gen-0001"]));
    let (status, v) = post(&app, "/api/think", json!({"nodes": 4, "model": "gen-0001"}));
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["model"], "gen-0001");
    assert_eq!(
        post(&app, "/api/think", json!({"nodes": 4, "model": "gen-0007"})).0,
        400
    );
}

/// Sends raw HTTP/1.1 and returns the status line's code and the body.
fn raw(addr: SocketAddr, request: &[u8]) -> (u16, String) {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream.write_all(request).unwrap();
    let mut response = Vec::new();
    let _ = stream.read_to_end(&mut response);
    let text = String::from_utf8_lossy(&response).into_owned();
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let body = text
        .split_once("\r\n\r\n")
        .map_or("", |(_, b)| b)
        .to_string();
    (status, body)
}

#[test]
fn over_a_socket_pages_load_big_bodies_and_foreign_hosts_are_refused() {
    let server = Server::bind("127.0.0.1:0".parse().unwrap(), options(None)).unwrap();
    let addr = server.addr();
    let stop = server.stop_handle();
    let thread = std::thread::spawn(move || server.run(2));
    let host = format!("127.0.0.1:{}", addr.port());
    let (status, body) = raw(
        addr,
        format!("GET / HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n").as_bytes(),
    );
    assert_eq!(status, 200);
    assert!(body.contains("<svg") || body.contains("board"), "{body}");
    let move_body = r#"{"moves":["d3d4"]}"#;
    let (status, body) = raw(
        addr,
        format!(
            "POST /api/position HTTP/1.1\r\nHost: localhost:{}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{move_body}",
            addr.port(),
            move_body.len()
        )
        .as_bytes(),
    );
    assert_eq!(status, 200, "{body}");
    let big = "x".repeat(Limits::default().max_body + 10);
    let (status, body) = raw(
        addr,
        format!(
            "POST /api/position HTTP/1.1\r\nHost: {host}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{big}",
            big.len()
        )
        .as_bytes(),
    );
    assert_eq!(status, 413, "{body}");
    let (status, body) = raw(
        addr,
        b"GET /api/info HTTP/1.1\r\nHost: evil.example:80\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(status, 403, "{body}");
    assert!(body.contains("evil.example"), "{body}");
    stop.stop();
    thread.join().unwrap();
}

#[test]
fn the_host_header_check_knows_the_names_of_this_machine() {
    for ok in [
        "localhost:8080",
        "127.0.0.1:1",
        "[::1]:80",
        "LOCALHOST",
        "127.0.0.1",
    ] {
        assert!(yari_serve::is_local_host_header(ok), "{ok}");
    }
    for bad in ["evil.example", "127.0.0.1.evil.example:80", "[::2]:80", ""] {
        assert!(!yari_serve::is_local_host_header(bad), "{bad}");
    }
}
