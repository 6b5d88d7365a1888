//! Zobrist keys for board, hands and side to move, fixed at compile time.

use crate::types::SQUARES;

/// Hand counts per role never exceed 14 (all pawns).
pub const MAX_HAND: usize = 15;

const fn splitmix(state: u64) -> (u64, u64) {
    let s = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = s;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    (s, z ^ (z >> 31))
}

pub struct Keys {
    pub piece: [[[u64; SQUARES]; 9]; 2],
    pub hand: [[[u64; MAX_HAND]; 4]; 2],
    pub black_to_move: u64,
}

const fn build() -> Keys {
    let mut keys = Keys {
        piece: [[[0; SQUARES]; 9]; 2],
        hand: [[[0; MAX_HAND]; 4]; 2],
        black_to_move: 0,
    };
    let mut state = 0x5941_5249_5A45_524Fu64; // "YARIZERO"
    let mut c = 0;
    while c < 2 {
        let mut k = 0;
        while k < 9 {
            let mut s = 0;
            while s < SQUARES {
                let (st, v) = splitmix(state);
                state = st;
                keys.piece[c][k][s] = v;
                s += 1;
            }
            k += 1;
        }
        let mut r = 0;
        while r < 4 {
            let mut n = 1; // count 0 keeps key 0 so an empty hand contributes nothing
            while n < MAX_HAND {
                let (st, v) = splitmix(state);
                state = st;
                keys.hand[c][r][n] = v;
                n += 1;
            }
            r += 1;
        }
        c += 1;
    }
    let (_, v) = splitmix(state);
    keys.black_to_move = v;
    keys
}

pub static KEYS: Keys = build();
