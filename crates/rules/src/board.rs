//! The board state without history: piece placement, hands, side to move. It is `Copy`, so
//! search and perft use copy-make; [`crate::Position`] adds the history repetition needs.

use crate::attacks::{
    attacks, first_blocker, opposite, Bits, ALL, BETWEEN, LAST_RANK, RAYS, SLIDERS_BY_DIR, STEPS,
    ZONE,
};
use crate::types::{Color, Kind, Move, Piece, Role, Square, SQUARES};
use crate::zobrist::{KEYS, MAX_HAND};

/// Moves a position can have fit comfortably; the most seen in the oracle is 249.
pub const MAX_MOVES: usize = 1024;

/// A list of moves on the stack.
pub type MoveList = arrayvec::ArrayVec<Move, MAX_MOVES>;

const FILE_A: u64 = crate::attacks::file_bb(0);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Board {
    by_kind: [u64; 9],
    by_color: [u64; 2],
    mailbox: [Option<Piece>; SQUARES],
    hands: [[u8; 4]; 2],
    turn: Color,
    key: u64,
    checkers: u64,
    halfmove_clock: u32,
    fullmove_number: u32,
}

/// Where move generation puts what it finds: a list, or just a count.
trait MoveSink {
    /// Board moves from `from`: each square of `plain` without promotion, of `promote` with it.
    fn board_moves(&mut self, from: usize, plain: u64, promote: u64);
    fn drops(&mut self, role: Role, to: u64);
}

impl MoveSink for MoveList {
    #[inline(always)]
    fn board_moves(&mut self, from: usize, plain: u64, promote: u64) {
        let from = Square::from_index(from as u32);
        for to in Bits(promote) {
            self.push(Move::normal(from, Square::from_index(to as u32), true));
        }
        for to in Bits(plain) {
            self.push(Move::normal(from, Square::from_index(to as u32), false));
        }
    }
    #[inline(always)]
    fn drops(&mut self, role: Role, to: u64) {
        for sq in Bits(to) {
            self.push(Move::drop(role, Square::from_index(sq as u32)));
        }
    }
}

struct Counter(u64);

impl MoveSink for Counter {
    #[inline(always)]
    fn board_moves(&mut self, _from: usize, plain: u64, promote: u64) {
        self.0 += (plain.count_ones() + promote.count_ones()) as u64;
    }
    #[inline(always)]
    fn drops(&mut self, _role: Role, to: u64) {
        self.0 += to.count_ones() as u64;
    }
}

impl Board {
    pub(crate) fn empty() -> Board {
        Board {
            by_kind: [0; 9],
            by_color: [0; 2],
            mailbox: [None; SQUARES],
            hands: [[0; 4]; 2],
            turn: Color::White,
            key: 0,
            checkers: 0,
            halfmove_clock: 0,
            fullmove_number: 1,
        }
    }

    #[inline]
    pub fn side_to_move(&self) -> Color {
        self.turn
    }

    #[inline]
    pub fn piece_at(&self, sq: Square) -> Option<Piece> {
        self.mailbox[sq.index()]
    }

    /// How many pieces of `role` `color` holds in hand.
    #[inline]
    pub fn hand(&self, color: Color, role: Role) -> u8 {
        self.hands[color.index()][role.index()]
    }

    /// Zobrist key of board, hands and side to move: equal keys mean the same position for
    /// repetition purposes.
    #[inline]
    pub fn key(&self) -> u64 {
        self.key
    }

    #[inline]
    pub fn is_check(&self) -> bool {
        self.checkers != 0
    }

    pub fn halfmove_clock(&self) -> u32 {
        self.halfmove_clock
    }

    pub fn fullmove_number(&self) -> u32 {
        self.fullmove_number
    }

    /// Squares occupied by `color`'s pieces of `kind`.
    #[inline]
    pub fn pieces(&self, color: Color, kind: Kind) -> u64 {
        self.by_kind[kind.index()] & self.by_color[color.index()]
    }

    #[inline]
    pub fn occupied(&self) -> u64 {
        self.by_color[0] | self.by_color[1]
    }

    #[inline]
    pub fn occupied_by(&self, color: Color) -> u64 {
        self.by_color[color.index()]
    }

    /// The square of `color`'s General (a valid board always has exactly one).
    #[inline]
    pub fn king(&self, color: Color) -> usize {
        self.pieces(color, Kind::King).trailing_zeros() as usize
    }

    pub(crate) fn set_turn(&mut self, color: Color) {
        if self.turn != color {
            self.key ^= KEYS.black_to_move;
            self.turn = color;
        }
    }

    pub(crate) fn set_clocks(&mut self, halfmove: u32, fullmove: u32) {
        self.halfmove_clock = halfmove;
        self.fullmove_number = fullmove;
    }

    #[inline(always)]
    pub(crate) fn put(&mut self, sq: usize, piece: Piece) {
        let b = 1u64 << sq;
        self.by_kind[piece.kind.index()] |= b;
        self.by_color[piece.color.index()] |= b;
        self.mailbox[sq] = Some(piece);
        self.key ^= KEYS.piece[piece.color.index()][piece.kind.index()][sq];
    }

    #[inline(always)]
    fn remove(&mut self, sq: usize) -> Piece {
        let piece = self.mailbox[sq].expect("remove from an occupied square");
        let b = 1u64 << sq;
        self.by_kind[piece.kind.index()] ^= b;
        self.by_color[piece.color.index()] ^= b;
        self.mailbox[sq] = None;
        self.key ^= KEYS.piece[piece.color.index()][piece.kind.index()][sq];
        piece
    }

    /// Takes the piece off `sq` (nothing happens on an empty square), as handicap set-ups do.
    /// Taking off the side to move's General, or a piece that leaves a check, is allowed
    /// here: whoever builds such a board checks it is one they want.
    pub fn clear_square(&mut self, sq: Square) {
        if self.mailbox[sq.index()].is_some() {
            self.remove(sq.index());
            self.refresh_checkers();
        }
    }

    /// Sets a hand count; the caller keeps it below [`MAX_HAND`].
    #[inline(always)]
    pub(crate) fn set_hand(&mut self, color: Color, role: Role, count: u8) {
        let (c, r) = (color.index(), role.index());
        debug_assert!((count as usize) < MAX_HAND);
        self.key ^= KEYS.hand[c][r][self.hands[c][r] as usize] ^ KEYS.hand[c][r][count as usize];
        self.hands[c][r] = count;
    }

    /// Recomputes the checkers of the side to move; called once the position is complete.
    pub(crate) fn refresh_checkers(&mut self) {
        let us = self.turn;
        self.checkers = if self.pieces(us, Kind::King) == 0 {
            0
        } else {
            self.attackers_to(self.king(us), !us, self.occupied())
        };
    }

    /// Pieces of `by` that attack `sq` with the given occupancy.
    #[inline]
    pub fn attackers_to(&self, sq: usize, by: Color, occ: u64) -> u64 {
        let theirs = self.by_color[by.index()];
        let rev = &STEPS[(!by).index()];
        let k = &self.by_kind;
        let mut res = (rev[Kind::Pawn as usize][sq] & k[Kind::Pawn as usize])
            | (rev[Kind::Knight as usize][sq] & k[Kind::Knight as usize])
            | (rev[Kind::Bishop as usize][sq] & k[Kind::Bishop as usize])
            | (rev[Kind::Silver as usize][sq] & k[Kind::Silver as usize])
            | (rev[Kind::KnightGold as usize][sq]
                & (k[Kind::KnightGold as usize] | k[Kind::BishopGold as usize]))
            | (rev[Kind::King as usize][sq] & k[Kind::King as usize]);
        res &= theirs;
        let sliders = &SLIDERS_BY_DIR[by.index()];
        for dir in 0..4 {
            if let Some(b) = first_blocker(dir, sq, occ) {
                if theirs & (1u64 << b) != 0 {
                    let kind = self.mailbox[b].expect("blocker is occupied").kind;
                    if sliders[opposite(dir)] & (1 << kind as u16) != 0 {
                        res |= 1u64 << b;
                    }
                }
            }
        }
        res
    }

    #[inline]
    fn is_attacked(&self, sq: usize, by: Color, occ: u64) -> bool {
        self.attackers_to(sq, by, occ) != 0
    }

    /// Plays a move assumed legal (from [`Board::legal_moves`]).
    pub fn play(&mut self, mv: Move) {
        let us = self.turn;
        let to = mv.to().index();
        if let Some(role) = mv.drop_role() {
            let n = self.hand(us, role);
            self.set_hand(us, role, n - 1);
            self.put(
                to,
                Piece {
                    color: us,
                    kind: role.kind(),
                },
            );
            self.halfmove_clock = 0;
        } else {
            let from = mv.from().expect("board move").index();
            let mut piece = self.remove(from);
            if self.mailbox[to].is_some() {
                let captured = self.remove(to);
                let role = captured
                    .kind
                    .hand_role()
                    .expect("the General is never captured");
                let n = self.hand(us, role);
                self.set_hand(us, role, n + 1);
                self.halfmove_clock = 0;
            } else {
                self.halfmove_clock += 1;
            }
            if mv.is_promotion() {
                piece.kind = piece.kind.promoted().expect("promotable kind");
            }
            self.put(to, piece);
        }
        if us == Color::Black {
            self.fullmove_number += 1;
        }
        self.turn = !us;
        self.key ^= KEYS.black_to_move;
        self.refresh_checkers();
    }

    /// All legal moves.
    pub fn legal_moves(&self) -> MoveList {
        let mut list = MoveList::new();
        self.generate(&mut list);
        list
    }

    /// The number of legal moves, without building the list (perft's last ply).
    pub fn count_legal_moves(&self) -> u64 {
        let mut c = Counter(0);
        self.generate(&mut c);
        c.0
    }

    /// A legal move that checkmates the opponent at once, if there is one.
    ///
    /// Search asks this of every position it expands: an exact two-ply look that no learned
    /// value can get wrong, so a search never misses a mate in one and never walks into one
    /// it has looked at. Only checking moves can mate; a quiet move that leaves the opponent
    /// without a move (a stalemate, which also loses here) is not looked for, because it is
    /// rare and finding it would mean counting the replies to every move.
    pub fn mating_move(&self) -> Option<Move> {
        self.legal_moves().into_iter().find(|&mv| {
            let mut child = *self;
            child.play(mv);
            child.is_check() && child.count_legal_moves() == 0
        })
    }

    pub fn is_legal(&self, mv: Move) -> bool {
        self.legal_moves().contains(&mv)
    }

    /// Files holding an unpromoted pawn of `color`, spread over every rank.
    #[inline]
    fn pawn_files(&self, color: Color) -> u64 {
        let pawns = self.pieces(color, Kind::Pawn);
        let mut row = 0u64;
        let mut p = pawns;
        while p != 0 {
            row |= p & 0x7F;
            p >>= 7;
        }
        // 7 bits times a mask with bits 7 apart: no carries, so this copies the row to every rank.
        row * FILE_A
    }

    fn generate<S: MoveSink>(&self, sink: &mut S) {
        let us = self.turn;
        let them = !us;
        let ours = self.by_color[us.index()];
        let theirs = self.by_color[them.index()];
        let occ = ours | theirs;
        let ksq = self.king(us);
        let kbit = 1u64 << ksq;

        // The General first: a step onto a square no enemy attacks once it has left.
        let mut ktargets = STEPS[us.index()][Kind::King as usize][ksq] & !ours;
        let occ_without_king = occ ^ kbit;
        let mut kmoves = 0;
        while ktargets != 0 {
            let t = ktargets.trailing_zeros() as usize;
            ktargets &= ktargets - 1;
            if !self.is_attacked(t, them, occ_without_king) {
                kmoves |= 1u64 << t;
            }
        }
        sink.board_moves(ksq, kmoves, 0);

        if self.checkers.count_ones() > 1 {
            return;
        }
        let (target_mask, drop_mask) = if self.checkers != 0 {
            let checker = self.checkers.trailing_zeros() as usize;
            let between = BETWEEN[ksq][checker];
            (self.checkers | between, between)
        } else {
            (!ours & ALL, !occ & ALL)
        };

        // Pins: only orthogonal lines carry sliders, so four rays from the General cover them.
        let mut pinned = 0u64;
        let mut pin_masks = [(0usize, 0u64); 4];
        let mut npins = 0;
        let their_sliders = &SLIDERS_BY_DIR[them.index()];
        for dir in 0..4 {
            if let Some(b1) = first_blocker(dir, ksq, occ) {
                if ours & (1u64 << b1) != 0 {
                    if let Some(b2) = first_blocker(dir, b1, occ) {
                        if theirs & (1u64 << b2) != 0 {
                            let kind = self.mailbox[b2].expect("occupied").kind;
                            if their_sliders[opposite(dir)] & (1 << kind as u16) != 0 {
                                pinned |= 1u64 << b1;
                                pin_masks[npins] = (b1, RAYS[dir][ksq] & !RAYS[dir][b2]);
                                npins += 1;
                            }
                        }
                    }
                }
            }
        }

        let zone = ZONE[us.index()];
        let last = LAST_RANK[us.index()];
        for from in Bits(ours & !kbit) {
            let kind = self.mailbox[from].expect("own piece").kind;
            let mut t = attacks(us, kind, from, occ) & target_mask;
            if pinned & (1u64 << from) != 0 {
                let mask = pin_masks[..npins]
                    .iter()
                    .find(|(sq, _)| *sq == from)
                    .map(|(_, m)| *m)
                    .unwrap_or(0);
                t &= mask;
            }
            if t == 0 {
                continue;
            }
            match kind {
                Kind::Pawn | Kind::Knight | Kind::Bishop => {
                    let promote = if zone & (1u64 << from) != 0 {
                        t
                    } else {
                        t & zone
                    };
                    sink.board_moves(from, t & !last, promote);
                }
                Kind::Rook => {
                    let promote = if zone & (1u64 << from) != 0 {
                        t
                    } else {
                        t & zone
                    };
                    sink.board_moves(from, t, promote);
                }
                _ => sink.board_moves(from, t, 0),
            }
        }

        if drop_mask != 0 {
            let hand = self.hands[us.index()];
            if hand[Role::Rook.index()] > 0 {
                sink.drops(Role::Rook, drop_mask);
            }
            let not_last = drop_mask & !last;
            if hand[Role::Bishop.index()] > 0 {
                sink.drops(Role::Bishop, not_last);
            }
            if hand[Role::Knight.index()] > 0 {
                sink.drops(Role::Knight, not_last);
            }
            if hand[Role::Pawn.index()] > 0 {
                sink.drops(Role::Pawn, not_last & !self.pawn_files(us));
            }
        }
    }

    /// Counts leaf nodes `depth` plies down; the last ply is counted, not played.
    pub fn perft(&self, depth: u32) -> u64 {
        match depth {
            0 => 1,
            1 => self.count_legal_moves(),
            _ => {
                let mut total = 0;
                for mv in self.legal_moves() {
                    let mut child = *self;
                    child.play(mv);
                    total += child.perft(depth - 1);
                }
                total
            }
        }
    }
}
