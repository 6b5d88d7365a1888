//! A uniformly random player: the anchor of every rating list (`random` = 0 Elo).

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use yari_rules::Move;

use crate::player::{GameView, Player, PlayerError};

/// Picks a uniformly random legal move. Reseeded from the match's per-game seed, so a match
/// replays exactly when run again with the same seed.
#[derive(Debug, Clone)]
pub struct RandomPlayer {
    base_seed: u64,
    rng: StdRng,
}

impl RandomPlayer {
    pub fn new(seed: u64) -> Self {
        RandomPlayer {
            base_seed: seed,
            rng: StdRng::seed_from_u64(seed),
        }
    }
}

impl Player for RandomPlayer {
    fn name(&self) -> &str {
        "random"
    }

    fn new_game(&mut self, seed: u64) -> Result<(), PlayerError> {
        self.rng = StdRng::seed_from_u64(self.base_seed ^ seed.rotate_left(17));
        Ok(())
    }

    fn choose_move(&mut self, game: &GameView<'_>) -> Result<Move, PlayerError> {
        let moves = game.position.legal_moves();
        if moves.is_empty() {
            return Err(PlayerError::NoMove("no legal move".into()));
        }
        Ok(moves[self.rng.random_range(0..moves.len())])
    }
}
