//! The tensor encoding over every oracle position: indices are a bijection on legal moves, and
//! a position and its colour-flipped, rotated twin look the same to the network.

use std::collections::HashSet;

use serde_json::Value;
use yari_rules::encoding::{encode, index_of, move_at, INPUT_SIZE, POLICY_SIZE};
use yari_rules::Position;

fn oracle_fens() -> Vec<String> {
    let path = format!(
        "{}/tests/data/dev_positions.jsonl",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            v["fen"].as_str().unwrap().to_string()
        })
        .collect()
}

fn swap_case(c: char) -> char {
    if c.is_ascii_uppercase() {
        c.to_ascii_lowercase()
    } else {
        c.to_ascii_uppercase()
    }
}

/// The same position with the board rotated 180°, colours swapped and the other side to move.
fn flip_fen(fen: &str) -> String {
    let (board, rest) = fen.split_once('[').unwrap();
    let (hand, rest) = rest.split_once(']').unwrap();
    let ranks: Vec<String> = board
        .split('/')
        .rev()
        .map(|rank| {
            // Tokenise into squares ('+X' is one token), reverse, swap colours.
            let mut tokens: Vec<String> = Vec::new();
            let mut chars = rank.chars();
            while let Some(c) = chars.next() {
                if c == '+' {
                    tokens.push(format!("+{}", swap_case(chars.next().unwrap())));
                } else if c.is_ascii_digit() {
                    tokens.push(c.to_string());
                } else {
                    tokens.push(swap_case(c).to_string());
                }
            }
            tokens.reverse();
            tokens.concat()
        })
        .collect();
    let hand: String = hand.chars().map(swap_case).collect();
    let mut fields: Vec<String> = rest.split_whitespace().map(str::to_string).collect();
    fields[0] = if fields[0] == "w" { "b" } else { "w" }.to_string();
    format!("{}[{}] {}", ranks.join("/"), hand, fields.join(" "))
}

#[test]
fn legal_moves_map_to_distinct_indices_and_back() {
    for fen in oracle_fens() {
        let pos = Position::from_fen(&fen).unwrap();
        let mut seen = HashSet::new();
        for &mv in pos.legal_moves().iter() {
            let i = index_of(&pos, mv);
            assert!(i < POLICY_SIZE);
            assert!(seen.insert(i), "two moves share index {i} in {fen}");
            assert_eq!(move_at(&pos, i), Some(mv), "{mv} in {fen}");
        }
    }
}

#[test]
fn flipped_twin_encodes_identically() {
    let mut a = vec![0.0f32; INPUT_SIZE];
    let mut b = vec![0.0f32; INPUT_SIZE];
    for fen in oracle_fens() {
        let pos = Position::from_fen(&fen).unwrap();
        let twin = Position::from_fen(&flip_fen(&fen)).unwrap();
        assert_ne!(pos.side_to_move(), twin.side_to_move());
        encode(&pos, &mut a);
        encode(&twin, &mut b);
        assert_eq!(a, b, "planes of {fen}");
        let ia: HashSet<usize> = pos
            .legal_moves()
            .iter()
            .map(|&m| index_of(&pos, m))
            .collect();
        let ib: HashSet<usize> = twin
            .legal_moves()
            .iter()
            .map(|&m| index_of(&twin, m))
            .collect();
        assert_eq!(ia, ib, "policy indices of {fen}");
    }
}
