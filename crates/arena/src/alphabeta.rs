//! A fixed-depth alpha-beta searcher with a material evaluation: the non-learning baseline.
//!
//! It knows nothing a network could learn, so "beats alphabeta:N" is a meaningful, stable
//! yardstick across runs. Besides material it only counts how far its unpromoted pieces have
//! advanced (a couple of centipawns per rank): without that tie-breaker a material-only
//! searcher shuffles its General back and forth and every game against a similar player ends
//! in a repetition. Among moves of equal score, the root order is shuffled by the game's
//! seed, so the player is reproducible per game but does not replay one game forever.

use yari_rules::{Color, Kind, Move, Position, Role, Square};

use crate::player::{GameView, Player, PlayerError};

/// Score of being mated now; `MATE - ply` scores prefer quicker mates and slower losses.
pub const MATE: i32 = 1_000_000;

/// Material value of a piece on the board, in centipawns.
///
/// Why these numbers: yari pieces are weaker than their shogi namesakes because they mostly
/// move forward; a forward Rook still slides three ways and is the strongest unpromoted piece.
/// Promoted pieces gain the backward moves that make them real defenders, hence the jump.
pub const fn kind_value(kind: Kind) -> i32 {
    match kind {
        Kind::Pawn => 100,
        Kind::Knight => 320,
        Kind::Bishop => 300,
        Kind::Rook => 550,
        Kind::Silver => 420,
        Kind::KnightGold => 480,
        Kind::BishopGold => 480,
        Kind::PromotedRook => 800,
        Kind::King => 0,
    }
}

/// Value of a piece in hand. A bit above the board value: a hand piece can be dropped
/// anywhere, and keeping it unspent is an option worth something.
pub const fn hand_value(role: Role) -> i32 {
    kind_value(role.kind()) * 11 / 10
}

/// Centipawns per rank an unpromoted Pawn, Knight, Bishop or Rook has advanced.
pub const ADVANCE: i32 = 2;

/// The evaluation: material plus advancement, from `color`'s point of view.
pub fn evaluate(pos: &Position, color: Color) -> i32 {
    let mut score = material(pos, color);
    for sq in Square::all() {
        if let Some(p) = pos.piece_at(sq) {
            if matches!(
                p.kind,
                Kind::Pawn | Kind::Knight | Kind::Bishop | Kind::Rook
            ) {
                let advanced = match p.color {
                    Color::White => sq.rank() as i32,
                    Color::Black => 8 - sq.rank() as i32,
                };
                score += if p.color == color { ADVANCE } else { -ADVANCE } * advanced;
            }
        }
    }
    score
}

/// Material balance from `color`'s point of view.
pub fn material(pos: &Position, color: Color) -> i32 {
    let mut score = 0;
    for sq in Square::all() {
        if let Some(p) = pos.piece_at(sq) {
            let v = kind_value(p.kind);
            score += if p.color == color { v } else { -v };
        }
    }
    for role in Role::ALL {
        score += hand_value(role) * (pos.hand(color, role) as i32 - pos.hand(!color, role) as i32);
    }
    score
}

/// Negamax alpha-beta to a fixed depth.
#[derive(Debug, Clone)]
pub struct AlphaBetaPlayer {
    depth: u32,
    name: String,
    nodes: u64,
    /// Orders equal root moves; set per game by [`Player::new_game`].
    seed: u64,
}

impl AlphaBetaPlayer {
    /// `depth` plies; depth 0 is clamped to 1 (a player must look at its own moves).
    pub fn new(depth: u32) -> Self {
        let depth = depth.max(1);
        AlphaBetaPlayer {
            depth,
            name: format!("alphabeta:{depth}"),
            nodes: 0,
            seed: 0,
        }
    }

    /// Nodes visited by the last search.
    pub fn nodes(&self) -> u64 {
        self.nodes
    }

    /// The best move and its score (side to move's view), or `None` when the game is over.
    pub fn search(&mut self, pos: &Position) -> Option<(Move, i32)> {
        self.nodes = 0;
        if pos.outcome().is_some() {
            return None;
        }
        let mut moves = ordered_moves(pos);
        // Shuffle within each ordering class (captures of one value, promotions, quiet
        // moves), keyed by the game seed: the first of equally good moves wins, so this
        // decides between them without making the search itself random.
        let key = |mv: &Move| splitmix(self.seed ^ u64::from(mv.to_u16()));
        moves.sort_by_key(|mv| (std::cmp::Reverse(order_key(pos, *mv)), key(mv)));
        let mut best: Option<(Move, i32)> = None;
        let mut alpha = -MATE - 1;
        let beta = MATE + 1;
        for mv in moves {
            let mut child = pos.clone();
            child.play(mv);
            let score = -self.negamax(&child, self.depth - 1, 1, -beta, -alpha);
            if best.is_none_or(|(_, s)| score > s) {
                best = Some((mv, score));
            }
            alpha = alpha.max(score);
        }
        best
    }

    fn negamax(&mut self, pos: &Position, depth: u32, ply: i32, mut alpha: i32, beta: i32) -> i32 {
        self.nodes += 1;
        if let Some(outcome) = pos.outcome() {
            // Terminal by the rules: mate and stalemate lose for the side to move, a
            // repetition is a draw, a perpetual check loses for the checking side.
            return match outcome.winner {
                None => 0,
                Some(w) if w == pos.side_to_move() => MATE - ply,
                Some(_) => -(MATE - ply),
            };
        }
        if depth == 0 {
            return evaluate(pos, pos.side_to_move());
        }
        let mut best = -MATE - 1;
        for mv in ordered_moves(pos) {
            let mut child = pos.clone();
            child.play(mv);
            let score = -self.negamax(&child, depth - 1, ply + 1, -beta, -alpha);
            if score > best {
                best = score;
            }
            if score > alpha {
                alpha = score;
            }
            if alpha >= beta {
                break;
            }
        }
        best
    }
}

/// Legal moves with captures first (most valuable victim first), then promotions, then the
/// rest in generation order: good ordering is what makes alpha-beta cut.
fn ordered_moves(pos: &Position) -> Vec<Move> {
    let mut scored: Vec<(i32, Move)> = pos
        .legal_moves()
        .iter()
        .map(|&mv| (order_key(pos, mv), mv))
        .collect();
    // Stable: equal keys keep generation order, so the player stays deterministic.
    scored.sort_by_key(|&(k, _)| std::cmp::Reverse(k));
    scored.into_iter().map(|(_, m)| m).collect()
}

/// Move-ordering key: captures by victim value (least valuable attacker first), then
/// promotions, then quiet moves and drops.
fn order_key(pos: &Position, mv: Move) -> i32 {
    let mut key = 0;
    if !mv.is_drop() {
        if let Some(victim) = pos.piece_at(mv.to()) {
            key += 10_000 + kind_value(victim.kind) * 10;
            if let Some(from) = mv.from() {
                if let Some(attacker) = pos.piece_at(from) {
                    key -= kind_value(attacker.kind) / 10;
                }
            }
        }
        if mv.is_promotion() {
            key += 1_000;
        }
    }
    key
}

/// SplitMix64 finaliser: a cheap, well-mixed hash of the seed and a move.
fn splitmix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

impl Player for AlphaBetaPlayer {
    fn name(&self) -> &str {
        &self.name
    }

    fn new_game(&mut self, seed: u64) -> Result<(), PlayerError> {
        self.seed = seed;
        Ok(())
    }

    fn choose_move(&mut self, game: &GameView<'_>) -> Result<Move, PlayerError> {
        self.search(game.position)
            .map(|(mv, _)| mv)
            .ok_or_else(|| PlayerError::NoMove("game is over".into()))
    }
}
