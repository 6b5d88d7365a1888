//! Precomputed attack tables. The board has 63 squares, so a `u64` bitboard holds it with
//! bit `rank * 7 + file`. Every long-range move in Yari Shogi is orthogonal, so four ray
//! tables and a first-blocker lookup give all sliding attacks.

use crate::types::{Color, Kind, FILES, RANKS, SQUARES};

/// All 63 squares.
pub const ALL: u64 = (1u64 << SQUARES) - 1;

/// Ray directions. `N` is towards rank 9.
pub const N: usize = 0;
pub const S: usize = 1;
pub const E: usize = 2;
pub const W: usize = 3;

const DIR_DELTA: [(i32, i32); 4] = [(1, 0), (-1, 0), (0, 1), (0, -1)];

#[inline]
pub const fn opposite(dir: usize) -> usize {
    dir ^ 1
}

const fn bit(rank: i32, file: i32) -> u64 {
    if rank < 0 || rank >= RANKS as i32 || file < 0 || file >= FILES as i32 {
        0
    } else {
        1u64 << (rank * FILES as i32 + file)
    }
}

const fn build_rays() -> [[u64; SQUARES]; 4] {
    let mut t = [[0u64; SQUARES]; 4];
    let mut d = 0;
    while d < 4 {
        let mut s = 0;
        while s < SQUARES {
            let (dr, df) = DIR_DELTA[d];
            let mut r = (s / FILES) as i32 + dr;
            let mut f = (s % FILES) as i32 + df;
            let mut bb = 0;
            while bit(r, f) != 0 {
                bb |= bit(r, f);
                r += dr;
                f += df;
            }
            t[d][s] = bb;
            s += 1;
        }
        d += 1;
    }
    t
}

/// `RAYS[dir][sq]`: the squares from `sq` (exclusive) to the edge in `dir`.
pub static RAYS: [[u64; SQUARES]; 4] = build_rays();

/// Step offsets `(rank, file)` of each kind for White; Black's are negated.
const fn white_steps(kind: usize) -> &'static [(i32, i32)] {
    match kind {
        0 => &[(1, 0)],                                       // pawn
        1 => &[(2, 1), (2, -1)],                              // knight jumps (slide separate)
        2 => &[(1, 1), (1, -1)],                              // bishop diagonal steps
        4 => &[(1, 0), (1, 1), (1, -1)],                      // silver
        5 | 6 => &[(1, 0), (1, 1), (1, -1), (0, 1), (0, -1)], // golds
        8 => &[
            (1, 0),
            (1, 1),
            (1, -1),
            (0, 1),
            (0, -1),
            (-1, 0),
            (-1, 1),
            (-1, -1),
        ],
        _ => &[],
    }
}

const fn build_steps() -> [[[u64; SQUARES]; 9]; 2] {
    let mut t = [[[0u64; SQUARES]; 9]; 2];
    let mut c = 0;
    while c < 2 {
        let sign = if c == 0 { 1 } else { -1 };
        let mut k = 0;
        while k < 9 {
            let steps = white_steps(k);
            let mut s = 0;
            while s < SQUARES {
                let r = (s / FILES) as i32;
                let f = (s % FILES) as i32;
                let mut bb = 0;
                let mut i = 0;
                while i < steps.len() {
                    bb |= bit(r + sign * steps[i].0, f + sign * steps[i].1);
                    i += 1;
                }
                t[c][k][s] = bb;
                s += 1;
            }
            k += 1;
        }
        c += 1;
    }
    t
}

/// `STEPS[color][kind][sq]`: the non-sliding part of each kind's moves.
pub static STEPS: [[[u64; SQUARES]; 9]; 2] = build_steps();

/// Slide directions of each kind for White, as a bit set over `N, S, E, W`.
const WHITE_SLIDES: [u8; 9] = [
    0,                                         // pawn
    1 << N,                                    // knight
    1 << N,                                    // bishop
    (1 << N) | (1 << E) | (1 << W),            // rook
    1 << S,                                    // silver
    1 << S,                                    // knight gold
    1 << S,                                    // bishop gold
    (1 << N) | (1 << S) | (1 << E) | (1 << W), // promoted rook
    0,                                         // king
];

/// Slide directions of `kind` for `color`.
#[inline]
pub const fn slide_dirs(color: Color, kind: Kind) -> u8 {
    let w = WHITE_SLIDES[kind as usize];
    match color {
        Color::White => w,
        // Black's forward is South: swap the N and S bits.
        Color::Black => (w & 0b1100) | ((w & 1) << 1) | ((w >> 1) & 1),
    }
}

/// Which kinds slide in `dir` for `color`, as a bit set over kind indices.
const fn build_sliders_by_dir() -> [[u16; 4]; 2] {
    let mut t = [[0u16; 4]; 2];
    let mut c = 0;
    while c < 2 {
        let color = if c == 0 { Color::White } else { Color::Black };
        let mut k = 0;
        while k < 9 {
            let dirs = slide_dirs(color, Kind::ALL[k]);
            let mut d = 0;
            while d < 4 {
                if dirs & (1 << d) != 0 {
                    t[c][d] |= 1 << k;
                }
                d += 1;
            }
            k += 1;
        }
        c += 1;
    }
    t
}

/// `SLIDERS_BY_DIR[color][dir]`: kinds (bit set) that slide in `dir` for `color`.
pub static SLIDERS_BY_DIR: [[u16; 4]; 2] = build_sliders_by_dir();

/// The squares attacked by a slide from `sq` in `dir`, up to and including the first blocker.
#[inline(always)]
pub fn ray_attacks(dir: usize, sq: usize, occ: u64) -> u64 {
    let ray = RAYS[dir][sq];
    let blockers = ray & occ;
    if blockers == 0 {
        return ray;
    }
    let first = if dir == N || dir == E {
        blockers.trailing_zeros()
    } else {
        63 - blockers.leading_zeros()
    };
    ray ^ RAYS[dir][first as usize]
}

/// First occupied square from `sq` in `dir`, if any.
#[inline(always)]
pub fn first_blocker(dir: usize, sq: usize, occ: u64) -> Option<usize> {
    let blockers = RAYS[dir][sq] & occ;
    if blockers == 0 {
        None
    } else if dir == N || dir == E {
        Some(blockers.trailing_zeros() as usize)
    } else {
        Some(63 - blockers.leading_zeros() as usize)
    }
}

/// Everything a piece of `color` and `kind` on `sq` attacks, given the occupancy.
#[inline(always)]
pub fn attacks(color: Color, kind: Kind, sq: usize, occ: u64) -> u64 {
    let mut bb = STEPS[color as usize][kind as usize][sq];
    let dirs = slide_dirs(color, kind);
    if dirs != 0 {
        if dirs & (1 << N) != 0 {
            bb |= ray_attacks(N, sq, occ);
        }
        if dirs & (1 << S) != 0 {
            bb |= ray_attacks(S, sq, occ);
        }
        if dirs & (1 << E) != 0 {
            bb |= ray_attacks(E, sq, occ);
        }
        if dirs & (1 << W) != 0 {
            bb |= ray_attacks(W, sq, occ);
        }
    }
    bb
}

const fn build_between() -> [[u64; SQUARES]; SQUARES] {
    let rays = build_rays();
    let mut t = [[0u64; SQUARES]; SQUARES];
    let mut a = 0;
    while a < SQUARES {
        let mut d = 0;
        while d < 4 {
            let (dr, df) = DIR_DELTA[d];
            let mut r = (a / FILES) as i32 + dr;
            let mut f = (a % FILES) as i32 + df;
            while bit(r, f) != 0 {
                let b = (r * FILES as i32 + f) as usize;
                // Squares strictly between a and b: ray from a minus ray from b minus b.
                t[a][b] = rays[d][a] & !rays[d][b] & !(1u64 << b);
                r += dr;
                f += df;
            }
            d += 1;
        }
        a += 1;
    }
    t
}

/// `BETWEEN[a][b]`: squares strictly between two orthogonally aligned squares, else empty.
pub static BETWEEN: [[u64; SQUARES]; SQUARES] = build_between();

/// Ranks as bitboards, rank 0 = rank 1.
pub const fn rank_bb(rank: usize) -> u64 {
    0x7Fu64 << (rank * FILES)
}

/// Files as bitboards, file 0 = file a.
pub const fn file_bb(file: usize) -> u64 {
    let mut bb = 0;
    let mut r = 0;
    while r < RANKS {
        bb |= 1u64 << (r * FILES + file);
        r += 1;
    }
    bb
}

/// The promotion zone of each colour: the three furthest ranks.
pub const ZONE: [u64; 2] = [
    rank_bb(6) | rank_bb(7) | rank_bb(8),
    rank_bb(0) | rank_bb(1) | rank_bb(2),
];

/// The last rank of each colour, where an unpromoted pawn, knight or bishop could never move.
pub const LAST_RANK: [u64; 2] = [rank_bb(8), rank_bb(0)];

/// Iterates the set bits of a bitboard as square indices.
#[derive(Clone, Copy)]
pub struct Bits(pub u64);

impl Iterator for Bits {
    type Item = usize;
    #[inline(always)]
    fn next(&mut self) -> Option<usize> {
        if self.0 == 0 {
            None
        } else {
            let s = self.0.trailing_zeros() as usize;
            self.0 &= self.0 - 1;
            Some(s)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn black_slides_mirror_white() {
        assert_eq!(
            slide_dirs(Color::Black, Kind::Rook),
            (1 << S) | (1 << E) | (1 << W)
        );
        assert_eq!(slide_dirs(Color::Black, Kind::Silver), 1 << N);
        assert_eq!(slide_dirs(Color::Black, Kind::PromotedRook), 0b1111);
    }

    #[test]
    fn between_is_symmetric_and_orthogonal_only() {
        for (a, row) in BETWEEN.iter().enumerate() {
            for (b, &between) in row.iter().enumerate() {
                assert_eq!(between, BETWEEN[b][a]);
            }
        }
        // a1 (0) and a9 (56): ranks 2..8 on file a.
        assert_eq!(BETWEEN[0][56].count_ones(), 7);
        // a1 and b2 are diagonal: nothing.
        assert_eq!(BETWEEN[0][8], 0);
    }
}
