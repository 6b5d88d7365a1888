//! The tensor view of a position and the fixed policy action space, both from the side to
//! move's point of view: when Black is to move the board is rotated 180° and the colours
//! swapped, so the network always plays "upwards". The start position is point-symmetric,
//! so a position and its colour-flipped, rotated twin encode identically.
//!
//! # Input planes `[INPUT_PLANES, 9, 7]`
//! Plane-major, `index = plane * 63 + rank * 7 + file`, with rank 0 the mover's back rank
//! and file 0 the mover's left (file a for White, file g for Black).
//!
//! | planes | meaning |
//! |---|---|
//! | 0–8 | the mover's pieces, one plane per kind: P, N, B, R, +P, +N, +B, +R, K (1 = occupied) |
//! | 9–17 | the opponent's pieces, same order |
//! | 18–21 | the mover's hand: R, B, N, P counts divided by 4, 4, 4, 14 (constant planes) |
//! | 22–25 | the opponent's hand, same scaling |
//! | 26 | 1 if the current position already occurred once before (a third time would end the game) |
//! | 27 | 1 if the mover is in check |
//! | 28 | constant 1, so convolutions see the board edge against zero padding |
//! | 29 | plies played since set-up, divided by 512 and capped at 1 (self-play has a ply cap) |
//!
//! # Policy `[POLICY_PLANES, 9, 7]`
//! `index = plane * 63 + square`, the square being the origin of a board move and the
//! destination of a drop, in the mover's frame. "Forward" is towards the opponent.
//!
//! | planes | move |
//! |---|---|
//! | 0–7 | forward by 1–8 ranks |
//! | 8–15 | backward by 1–8 ranks |
//! | 16–21 | right (towards higher files in the mover's frame) by 1–6 |
//! | 22–27 | left by 1–6 |
//! | 28–31 | one diagonal step: forward-right, forward-left, backward-right, backward-left |
//! | 32–33 | knight jump: two forward and one right, two forward and one left |
//! | 34–41 | forward by 1–8, promoting |
//! | 42–47 | right by 1–6, promoting |
//! | 48–53 | left by 1–6, promoting |
//! | 54–55 | diagonal forward-right, forward-left, promoting |
//! | 56–57 | knight jump right, left, promoting |
//! | 58–61 | drop of R, B, N, P |
//!
//! Unpromoted pieces never move backward, so backward moves never promote: every legal move
//! has exactly one index.

use crate::types::{Color, Kind, Move, Role, Square, SQUARES};
use crate::Position;

/// Board height (ranks) of every plane.
pub const RANKS: usize = 9;
/// Board width (files) of every plane.
pub const FILES: usize = 7;
/// Number of input planes `C` of the `[C, 9, 7]` position tensor.
pub const INPUT_PLANES: usize = 30;
/// Number of policy planes; the policy is `[POLICY_PLANES, 9, 7]` flattened.
pub const POLICY_PLANES: usize = 62;
/// Size of the flat policy action space.
pub const POLICY_SIZE: usize = POLICY_PLANES * RANKS * FILES;
/// Floats in one encoded position.
pub const INPUT_SIZE: usize = INPUT_PLANES * SQUARES;
/// Version of the encoding, recorded in checkpoints: bump it whenever a plane or an index
/// changes meaning.
pub const ENCODING_VERSION: u32 = 1;

const HAND_SCALE: [f32; 4] = [1.0 / 4.0, 1.0 / 4.0, 1.0 / 4.0, 1.0 / 14.0];
const DROP_PLANE: usize = 58;

/// Maps an absolute square into the mover's frame (and back: the map is its own inverse).
#[inline]
fn relative(sq: Square, mover: Color) -> Square {
    match mover {
        Color::White => sq,
        Color::Black => sq.rotate(),
    }
}

/// Writes the `INPUT_SIZE` floats of `pos` into `out` (which must hold at least that many).
pub fn encode(pos: &Position, out: &mut [f32]) {
    let out = &mut out[..INPUT_SIZE];
    out.fill(0.0);
    let us = pos.side_to_move();
    let board = pos.board();
    for (side, color) in [us, !us].into_iter().enumerate() {
        for kind in Kind::ALL {
            let plane = side * 9 + kind.index();
            let mut bb = board.pieces(color, kind);
            while bb != 0 {
                let sq = Square::from_index(bb.trailing_zeros());
                bb &= bb - 1;
                out[plane * SQUARES + relative(sq, us).index()] = 1.0;
            }
        }
        for role in Role::ALL {
            let plane = 18 + side * 4 + role.index();
            let v = pos.hand(color, role) as f32 * HAND_SCALE[role.index()];
            if v != 0.0 {
                out[plane * SQUARES..(plane + 1) * SQUARES].fill(v);
            }
        }
    }
    let constant = |out: &mut [f32], plane: usize, v: f32| {
        out[plane * SQUARES..(plane + 1) * SQUARES].fill(v);
    };
    if pos.repetitions() >= 1 {
        constant(out, 26, 1.0);
    }
    if pos.is_check() {
        constant(out, 27, 1.0);
    }
    constant(out, 28, 1.0);
    constant(out, 29, (pos.plies_played() as f32 / 512.0).min(1.0));
}

/// Encodes many positions into one contiguous `[N, C, 9, 7]` buffer.
pub fn encode_batch(positions: &[&Position]) -> Vec<f32> {
    let mut out = vec![0.0; positions.len() * INPUT_SIZE];
    for (pos, chunk) in positions.iter().zip(out.chunks_exact_mut(INPUT_SIZE)) {
        encode(pos, chunk);
    }
    out
}

/// The policy index of `mv` in `pos` (its mover's frame). Defined for every move that can be
/// legal; a geometrically impossible move (none of the planes' shapes) maps to `None`.
pub fn try_index_of(pos: &Position, mv: Move) -> Option<usize> {
    let us = pos.side_to_move();
    let to = relative(mv.to(), us);
    if let Some(role) = mv.drop_role() {
        return Some((DROP_PLANE + role.index()) * SQUARES + to.index());
    }
    let from = relative(mv.from()?, us);
    let dr = to.rank() as i32 - from.rank() as i32;
    let df = to.file() as i32 - from.file() as i32;
    let promote = mv.is_promotion();
    let plane = match (dr, df) {
        (d, 0) if d > 0 => {
            if promote {
                34 + d - 1
            } else {
                d - 1
            }
        }
        (d, 0) if d < 0 && !promote => 8 + (-d) - 1,
        (0, d) if d > 0 => {
            if promote {
                42 + d - 1
            } else {
                16 + d - 1
            }
        }
        (0, d) if d < 0 => {
            if promote {
                48 + (-d) - 1
            } else {
                22 + (-d) - 1
            }
        }
        (1, 1) => {
            if promote {
                54
            } else {
                28
            }
        }
        (1, -1) => {
            if promote {
                55
            } else {
                29
            }
        }
        (-1, 1) if !promote => 30,
        (-1, -1) if !promote => 31,
        (2, 1) => {
            if promote {
                56
            } else {
                32
            }
        }
        (2, -1) => {
            if promote {
                57
            } else {
                33
            }
        }
        _ => return None,
    };
    Some(plane as usize * SQUARES + from.index())
}

/// The policy index of a legal move of `pos`.
///
/// # Panics
/// If `mv` has no index, which no legal move lacks; use [`try_index_of`] for untrusted moves.
pub fn index_of(pos: &Position, mv: Move) -> usize {
    try_index_of(pos, mv).unwrap_or_else(|| panic!("move {mv} has no policy index"))
}

/// The legal move of `pos` with policy index `index`, if there is one.
pub fn move_at(pos: &Position, index: usize) -> Option<Move> {
    if index >= POLICY_SIZE {
        return None;
    }
    let us = pos.side_to_move();
    let plane = index / SQUARES;
    let sq = Square::new(index % SQUARES)?;
    if plane >= DROP_PLANE {
        let mv = Move::drop(Role::ALL[plane - DROP_PLANE], relative(sq, us));
        return pos.is_legal(mv).then_some(mv);
    }
    let (dr, df, promote): (i32, i32, bool) = match plane {
        0..=7 => (plane as i32 + 1, 0, false),
        8..=15 => (-(plane as i32 - 8 + 1), 0, false),
        16..=21 => (0, plane as i32 - 16 + 1, false),
        22..=27 => (0, -(plane as i32 - 22 + 1), false),
        28 => (1, 1, false),
        29 => (1, -1, false),
        30 => (-1, 1, false),
        31 => (-1, -1, false),
        32 => (2, 1, false),
        33 => (2, -1, false),
        34..=41 => (plane as i32 - 34 + 1, 0, true),
        42..=47 => (0, plane as i32 - 42 + 1, true),
        48..=53 => (0, -(plane as i32 - 48 + 1), true),
        54 => (1, 1, true),
        55 => (1, -1, true),
        56 => (2, 1, true),
        57 => (2, -1, true),
        _ => return None,
    };
    let rank = sq.rank() as i32 + dr;
    let file = sq.file() as i32 + df;
    if rank < 0 || file < 0 {
        return None;
    }
    let to = Square::from_coords(file as usize, rank as usize)?;
    let mv = Move::normal(relative(sq, us), relative(to, us), promote);
    pos.is_legal(mv).then_some(mv)
}

/// `true` at the index of every legal move of `pos`, `false` elsewhere.
pub fn legal_mask(pos: &Position) -> Vec<bool> {
    let mut mask = vec![false; POLICY_SIZE];
    for &mv in pos.legal_moves().iter() {
        mask[index_of(pos, mv)] = true;
    }
    mask
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn start_position_planes() {
        let pos = Position::startpos();
        let mut x = vec![0.0; INPUT_SIZE];
        encode(&pos, &mut x);
        // Our seven pawns on relative rank 3 (index 2).
        let pawns = &x[0..SQUARES];
        assert_eq!(pawns.iter().sum::<f32>(), 7.0);
        assert!((14..21).all(|s| pawns[s] == 1.0));
        // Their General on d9.
        assert_eq!(x[17 * SQUARES + Square::parse("d9").unwrap().index()], 1.0);
        assert!(x[28 * SQUARES..29 * SQUARES].iter().all(|&v| v == 1.0));
        assert!(x[18 * SQUARES..28 * SQUARES].iter().all(|&v| v == 0.0));
    }

    #[test]
    fn black_sees_the_board_rotated() {
        let mut pos = Position::startpos();
        pos.play_uci("d3d4").unwrap();
        let mut x = vec![0.0; INPUT_SIZE];
        encode(&pos, &mut x);
        // Black's own General on d9 appears on its relative back rank, file d (rotated: 62-59=3).
        assert_eq!(x[8 * SQUARES + 3], 1.0);
        // White's advanced pawn d4 (index 24) appears rotated at 38 among the opponent's pawns.
        assert_eq!(x[9 * SQUARES + 38], 1.0);
    }

    #[test]
    fn drop_and_promotion_indices_round_trip() {
        let pos = Position::from_fen("k6/7/2P4/7/7/7/7/7/3K3[Pr] w - - 0 1").unwrap();
        for &mv in pos.legal_moves().iter() {
            let i = index_of(&pos, mv);
            assert!(i < POLICY_SIZE);
            assert_eq!(move_at(&pos, i), Some(mv));
        }
        assert_eq!(move_at(&pos, POLICY_SIZE), None);
        assert_eq!(
            legal_mask(&pos).iter().filter(|&&b| b).count(),
            pos.legal_moves().len()
        );
    }
}
