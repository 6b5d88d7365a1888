//! Checks the rules against data computed with Fairy-Stockfish (pyffish), copied from
//! `shared/oracle/` into `tests/data/`.

use serde_json::Value;
use yari_rules::{Color, EndReason, Position};

fn lines(name: &str) -> Vec<Value> {
    let path = format!("{}/tests/data/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{path}: {e}"))
        .lines()
        .map(|l| serde_json::from_str(l).expect("valid JSON line"))
        .collect()
}

fn color(s: &str) -> Color {
    match s {
        "w" => Color::White,
        "b" => Color::Black,
        _ => panic!("bad colour {s}"),
    }
}

#[test]
fn positions_match_oracle() {
    let rows = lines("dev_positions.jsonl");
    assert!(rows.len() > 4000);
    for row in rows {
        let fen = row["fen"].as_str().unwrap();
        let pos = Position::from_fen(fen).unwrap_or_else(|e| panic!("{fen}: {e}"));
        assert_eq!(pos.fen(), fen, "FEN round trip");
        let mut legal: Vec<String> = pos.legal_moves().iter().map(|m| m.to_string()).collect();
        legal.sort();
        let expected: Vec<&str> = row["legal"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m.as_str().unwrap())
            .collect();
        assert_eq!(legal, expected, "legal moves of {fen}");
        assert_eq!(pos.is_check(), row["in_check"].as_bool().unwrap(), "{fen}");
        assert_eq!(
            pos.board().count_legal_moves() as usize,
            expected.len(),
            "count of {fen}"
        );
        let outcome = pos.outcome();
        match row["result_kind"].as_str() {
            None => assert_eq!(outcome, None, "{fen}"),
            Some(kind) => {
                let o = outcome.unwrap_or_else(|| panic!("{fen} should be over"));
                let reason = match kind {
                    "checkmate" => EndReason::Checkmate,
                    "stalemate" => EndReason::Stalemate,
                    _ => panic!("unknown result kind {kind}"),
                };
                assert_eq!(o.reason, reason, "{fen}");
                assert_eq!(o.winner, Some(color(row["winner"].as_str().unwrap())));
            }
        }
    }
}

fn check_perft(max_nodes: u64) -> usize {
    let mut checked = 0;
    for row in lines("dev_perft.jsonl") {
        let nodes = row["nodes"].as_u64().unwrap();
        if nodes > max_nodes {
            continue;
        }
        let fen = row["fen"].as_str().unwrap();
        let depth = row["depth"].as_u64().unwrap() as u32;
        let pos = Position::from_fen(fen).unwrap();
        assert_eq!(pos.perft(depth), nodes, "perft({depth}) of {fen}");
        if let Some(divide) = row["divide"].as_object() {
            let ours = pos.divide(depth);
            assert_eq!(ours.len(), divide.len(), "divide of {fen}");
            for (mv, n) in ours {
                assert_eq!(
                    divide.get(&mv.to_string()).and_then(Value::as_u64),
                    Some(n),
                    "divide {mv} of {fen}"
                );
            }
        }
        checked += 1;
    }
    checked
}

#[test]
fn perft_matches_oracle_small() {
    assert!(check_perft(300_000) > 80);
}

#[test]
#[ignore = "all oracle perft counts, tens of millions of nodes: run with --ignored --release"]
fn perft_matches_oracle_all() {
    assert_eq!(check_perft(u64::MAX), 110);
}

#[test]
fn games_replay_to_the_same_end() {
    let games = lines("games.jsonl");
    assert!(games.len() > 300);
    for game in games {
        let id = &game["id"];
        let mut pos = Position::from_fen(game["start_fen"].as_str().unwrap()).unwrap();
        let moves = game["moves"].as_array().unwrap();
        for (ply, mv) in moves.iter().enumerate() {
            assert_eq!(pos.outcome(), None, "game {id} ended early at ply {ply}");
            pos.play_uci(mv.as_str().unwrap())
                .unwrap_or_else(|e| panic!("game {id}, ply {ply}: {e}"));
        }
        let end = &game["end"];
        let outcome = pos.outcome();
        let expected = match end["type"].as_str().unwrap() {
            "move_limit" => {
                assert_eq!(outcome, None, "game {id}");
                assert_eq!(
                    pos.outcome_with_ply_cap(Some(moves.len()))
                        .map(|o| o.reason),
                    Some(EndReason::PlyCap)
                );
                continue;
            }
            "checkmate" => EndReason::Checkmate,
            "stalemate" => EndReason::Stalemate,
            "repetition" => EndReason::Repetition,
            "perpetual_check" => EndReason::PerpetualCheck,
            other => panic!("unknown end {other}"),
        };
        let o = outcome.unwrap_or_else(|| panic!("game {id} should be over"));
        assert_eq!(o.reason, expected, "game {id}");
        let winner = match end["result"].as_str().unwrap() {
            "1-0" => Some(Color::White),
            "0-1" => Some(Color::Black),
            "1/2-1/2" => None,
            r => panic!("bad result {r}"),
        };
        assert_eq!(o.winner, winner, "game {id}");
        assert_eq!(o.result_str(), end["result"].as_str().unwrap());
    }
}

/// Counted with Fairy-Stockfish's npm build (`go perft 4`, 230,148,343) for the perft benchmark's
/// full-hands position: almost every move is a drop, so this checks bulk-counted drops deeply.
#[test]
fn perft_full_hands_depth_4_matches_fairy_stockfish() {
    let pos =
        Position::from_fen("2nk1br/7/p1ppppp/7/7/7/P1PPPPP/7/2BK1NR[RBNPrbnp] w - - 0 1").unwrap();
    assert_eq!(pos.perft(4), 230_148_343);
}

/// `mating_move` against the oracle's games: before every move of every game it finds a mate
/// exactly when one of the legal moves ends the game by checkmate (the rules' own verdict,
/// checked against Fairy-Stockfish above), and whatever it returns does mate. The games that
/// Fairy-Stockfish ended by checkmate give the positions where a mate must be found.
#[test]
fn mating_move_finds_exactly_the_mates_in_one() {
    let mut mates_found = 0;
    let mut final_mates = 0;
    for game in lines("games.jsonl") {
        let mut pos = Position::from_fen(game["start_fen"].as_str().unwrap()).unwrap();
        let moves = game["moves"].as_array().unwrap();
        for (ply, mv) in moves.iter().enumerate() {
            let mates: Vec<_> = pos
                .legal_moves()
                .into_iter()
                .filter(|&m| {
                    let mut child = pos.clone();
                    child.play(m);
                    child.outcome().map(|o| o.reason) == Some(EndReason::Checkmate)
                })
                .collect();
            match pos.mating_move() {
                Some(m) => {
                    assert!(mates.contains(&m), "{m} does not mate in {}", pos.fen());
                    mates_found += 1;
                }
                None => assert!(mates.is_empty(), "missed {:?} in {}", mates, pos.fen()),
            }
            if ply + 1 == moves.len() && game["end"]["type"] == "checkmate" {
                assert!(pos.mating_move().is_some(), "the game's last move mates");
                final_mates += 1;
            }
            pos.play_uci(mv.as_str().unwrap()).unwrap();
        }
    }
    assert!(final_mates > 50, "only {final_mates} games end in mate");
    assert!(mates_found >= final_mates);
}

/// Whether `mv` starts a mate by checks within `plies` plies, by the rules' own verdicts
/// (`outcome`, history included): a slow, plain restatement of `forced_mate`.
fn mates_by_checks(pos: &Position, mv: yari_rules::Move, plies: u32) -> bool {
    let mut child = pos.clone();
    child.play(mv);
    if !child.is_check() {
        return false;
    }
    match child.outcome() {
        Some(o) => return o.reason == EndReason::Checkmate,
        None if plies < 3 => return false,
        None => {}
    }
    child.legal_moves().iter().all(|&reply| {
        let mut after = child.clone();
        after.play(reply);
        after.outcome().is_none()
            && after
                .legal_moves()
                .iter()
                .any(|&m| mates_by_checks(&after, m, plies - 2))
    })
}

/// `forced_mate(3)` against the plain restatement above, before every move of the oracle's
/// games that end in checkmate (the stretch where mates are near): it finds a mate exactly
/// when one exists, prefers a mate in one, and what it returns mates.
#[test]
fn forced_mate_finds_exactly_the_mates_by_checks() {
    let (mut checked, mut in_three) = (0, 0);
    for game in lines("games.jsonl") {
        if game["end"]["type"] != "checkmate" {
            continue;
        }
        let mut pos = Position::from_fen(game["start_fen"].as_str().unwrap()).unwrap();
        let moves = game["moves"].as_array().unwrap();
        for (ply, mv) in moves.iter().enumerate() {
            if ply + 12 >= moves.len() {
                checked += 1;
                let found = pos.forced_mate(3);
                let any = pos
                    .legal_moves()
                    .iter()
                    .any(|&m| mates_by_checks(&pos, m, 3));
                assert_eq!(found.is_some(), any, "{}", pos.fen());
                if let Some(m) = found {
                    assert!(mates_by_checks(&pos, m, 3), "{m} in {}", pos.fen());
                    if pos.mating_move().is_some() {
                        assert!(mates_by_checks(&pos, m, 1), "not the mate in one");
                    } else {
                        in_three += 1;
                    }
                }
                assert_eq!(pos.forced_mate(1), pos.mating_move());
                assert_eq!(pos.forced_mate(0), None);
            }
            pos.play_uci(mv.as_str().unwrap()).unwrap();
        }
    }
    assert!(checked > 2000, "{checked} positions");
    assert!(in_three > 20, "only {in_three} mates in three");
}
