//! Synthetic game records: realistic shapes for benchmarks and tests, without a search.

use rand::seq::IndexedRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use yari_rules::{Position, START_FEN};
use yari_selfplay::{GameEnd, GameRecord, GameResult, Sample};

/// Games of uniformly random legal moves, every position a sample whose target puts half its
/// mass on the move played and spreads the rest over the other legal moves (a stand-in for a
/// search's visit distribution). For benchmarks and tests: realistic shapes without search.
pub fn random_games(games: usize, max_plies: usize, seed: u64) -> Vec<GameRecord> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    (0..games)
        .map(|game_id| {
            let mut pos = Position::startpos();
            let mut moves = Vec::new();
            let mut samples = Vec::new();
            let outcome = loop {
                if let Some(o) = pos.outcome_with_ply_cap(Some(max_plies)) {
                    break o;
                }
                let legal = pos.legal_moves();
                let legal: Vec<_> = legal.iter().copied().collect();
                let mv = *legal
                    .choose(&mut rng)
                    .expect("a game goes on only with legal moves");
                let rest = if legal.len() > 1 {
                    0.5 / (legal.len() - 1) as f32
                } else {
                    0.0
                };
                let policy = legal
                    .iter()
                    .map(|&m| {
                        let p = if m == mv {
                            1.0 - rest * (legal.len() - 1) as f32
                        } else {
                            rest
                        };
                        (m.to_u16(), p)
                    })
                    .collect();
                samples.push(Sample {
                    ply: moves.len() as u32,
                    root_value: rng.random_range(-1.0..1.0),
                    surprise: 0.0,
                    policy,
                });
                moves.push(mv.to_u16());
                pos.play(mv);
            };
            GameRecord {
                game_id: game_id as u64,
                start_fen: START_FEN.to_string(),
                moves,
                samples,
                result: GameResult::from_winner(outcome.winner),
                end: GameEnd::from(outcome.reason),
                resignation_disabled: false,
                would_resign: None,
            }
        })
        .collect()
}
