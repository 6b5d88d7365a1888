//! Small value types: colours, squares, piece kinds, moves.

use std::fmt;

/// Number of files (a–g).
pub const FILES: usize = 7;
/// Number of ranks (1–9).
pub const RANKS: usize = 9;
/// Number of squares; they fit the low 63 bits of a `u64`.
pub const SQUARES: usize = FILES * RANKS;

/// A side. White moves first and starts on ranks 1–3.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Color {
    White = 0,
    Black = 1,
}

impl Color {
    pub const ALL: [Color; 2] = [Color::White, Color::Black];

    #[inline]
    pub const fn index(self) -> usize {
        self as usize
    }

    /// `'w'` or `'b'`, as in FEN.
    pub const fn fen_char(self) -> char {
        match self {
            Color::White => 'w',
            Color::Black => 'b',
        }
    }
}

impl std::ops::Not for Color {
    type Output = Color;
    #[inline]
    fn not(self) -> Color {
        match self {
            Color::White => Color::Black,
            Color::Black => Color::White,
        }
    }
}

impl fmt::Display for Color {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Color::White => "white",
            Color::Black => "black",
        })
    }
}

/// A square, `rank * 7 + file` with rank 0 = rank 1 and file 0 = file a.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Square(u8);

impl Square {
    /// The square at `index` (0..63), or `None` when out of range.
    #[inline]
    pub const fn new(index: usize) -> Option<Square> {
        if index < SQUARES {
            Some(Square(index as u8))
        } else {
            None
        }
    }

    /// Caller guarantees `index < 63`.
    #[inline]
    pub(crate) const fn from_index(index: u32) -> Square {
        debug_assert!(index < SQUARES as u32);
        Square(index as u8)
    }

    /// The square at `file` (0..7) and `rank` (0..9), if on the board.
    #[inline]
    pub const fn from_coords(file: usize, rank: usize) -> Option<Square> {
        if file < FILES && rank < RANKS {
            Some(Square((rank * FILES + file) as u8))
        } else {
            None
        }
    }

    #[inline]
    pub const fn index(self) -> usize {
        self.0 as usize
    }

    /// 0 = file a.
    #[inline]
    pub const fn file(self) -> usize {
        self.0 as usize % FILES
    }

    /// 0 = rank 1.
    #[inline]
    pub const fn rank(self) -> usize {
        self.0 as usize / FILES
    }

    #[inline]
    pub const fn bb(self) -> u64 {
        1u64 << self.0
    }

    /// The same square seen from the other side: the board rotated 180°.
    #[inline]
    pub const fn rotate(self) -> Square {
        Square((SQUARES - 1) as u8 - self.0)
    }

    /// Parses `a1`..`g9`.
    pub fn parse(text: &str) -> Option<Square> {
        let b = text.as_bytes();
        if b.len() != 2 {
            return None;
        }
        let file = b[0].wrapping_sub(b'a') as usize;
        let rank = b[1].wrapping_sub(b'1') as usize;
        Square::from_coords(file, rank)
    }

    pub fn all() -> impl Iterator<Item = Square> {
        (0..SQUARES as u8).map(Square)
    }
}

impl fmt::Display for Square {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}{}",
            (b'a' + self.file() as u8) as char,
            (b'1' + self.rank() as u8) as char
        )
    }
}

/// A kind of piece that can be held in hand and dropped, in FEN hand order (R, B, N, P).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Role {
    Rook = 0,
    Bishop = 1,
    Knight = 2,
    Pawn = 3,
}

impl Role {
    pub const ALL: [Role; 4] = [Role::Rook, Role::Bishop, Role::Knight, Role::Pawn];

    #[inline]
    pub const fn index(self) -> usize {
        self as usize
    }

    /// Uppercase letter, as in drops (`P@c5`) and White's FEN.
    pub const fn char(self) -> char {
        match self {
            Role::Rook => 'R',
            Role::Bishop => 'B',
            Role::Knight => 'N',
            Role::Pawn => 'P',
        }
    }

    pub fn from_char(c: char) -> Option<Role> {
        match c.to_ascii_uppercase() {
            'R' => Some(Role::Rook),
            'B' => Some(Role::Bishop),
            'N' => Some(Role::Knight),
            'P' => Some(Role::Pawn),
            _ => None,
        }
    }

    /// The unpromoted board kind this role is dropped as.
    #[inline]
    pub const fn kind(self) -> Kind {
        match self {
            Role::Rook => Kind::Rook,
            Role::Bishop => Kind::Bishop,
            Role::Knight => Kind::Knight,
            Role::Pawn => Kind::Pawn,
        }
    }
}

/// A kind of piece on the board. The two Golds are distinct kinds because a captured
/// Gold returns to hand as the piece it was promoted from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    Pawn = 0,
    Knight = 1,
    Bishop = 2,
    Rook = 3,
    /// Promoted pawn (yari silver), `+P`.
    Silver = 4,
    /// Promoted knight (gold), `+N`.
    KnightGold = 5,
    /// Promoted bishop (gold), `+B`.
    BishopGold = 6,
    /// Promoted rook (full rook), `+R`.
    PromotedRook = 7,
    King = 8,
}

impl Kind {
    pub const ALL: [Kind; 9] = [
        Kind::Pawn,
        Kind::Knight,
        Kind::Bishop,
        Kind::Rook,
        Kind::Silver,
        Kind::KnightGold,
        Kind::BishopGold,
        Kind::PromotedRook,
        Kind::King,
    ];

    #[inline]
    pub const fn index(self) -> usize {
        self as usize
    }

    /// The role a captured piece of this kind goes to hand as (`None` for the King).
    #[inline]
    pub const fn hand_role(self) -> Option<Role> {
        match self {
            Kind::Pawn | Kind::Silver => Some(Role::Pawn),
            Kind::Knight | Kind::KnightGold => Some(Role::Knight),
            Kind::Bishop | Kind::BishopGold => Some(Role::Bishop),
            Kind::Rook | Kind::PromotedRook => Some(Role::Rook),
            Kind::King => None,
        }
    }

    /// The promoted form, for the four kinds that can promote.
    #[inline]
    pub const fn promoted(self) -> Option<Kind> {
        match self {
            Kind::Pawn => Some(Kind::Silver),
            Kind::Knight => Some(Kind::KnightGold),
            Kind::Bishop => Some(Kind::BishopGold),
            Kind::Rook => Some(Kind::PromotedRook),
            _ => None,
        }
    }

    #[inline]
    pub const fn is_promoted(self) -> bool {
        matches!(
            self,
            Kind::Silver | Kind::KnightGold | Kind::BishopGold | Kind::PromotedRook
        )
    }

    /// FEN text for a White piece of this kind (`P`, `+N`, `K`, ...).
    pub const fn fen_str(self) -> &'static str {
        match self {
            Kind::Pawn => "P",
            Kind::Knight => "N",
            Kind::Bishop => "B",
            Kind::Rook => "R",
            Kind::Silver => "+P",
            Kind::KnightGold => "+N",
            Kind::BishopGold => "+B",
            Kind::PromotedRook => "+R",
            Kind::King => "K",
        }
    }
}

/// A piece: colour and kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Piece {
    pub color: Color,
    pub kind: Kind,
}

impl fmt::Display for Piece {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = self.kind.fen_str();
        match self.color {
            Color::White => f.write_str(s),
            Color::Black => f.write_str(&s.to_ascii_lowercase()),
        }
    }
}

/// A move, packed in 16 bits: a board move (from, to, promotion) or a drop (role, to).
///
/// Bits 0–5: destination; bits 6–11: origin square, or the dropped role; bit 12: promotes;
/// bit 13: drop. A `Move` does not know whose it is: legality is always relative to a position.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Move(u16);

const PROMOTE_BIT: u16 = 1 << 12;
const DROP_BIT: u16 = 1 << 13;

impl Move {
    #[inline]
    pub const fn normal(from: Square, to: Square, promote: bool) -> Move {
        Move((to.0 as u16) | ((from.0 as u16) << 6) | if promote { PROMOTE_BIT } else { 0 })
    }

    #[inline]
    pub const fn drop(role: Role, to: Square) -> Move {
        Move((to.0 as u16) | ((role as u16) << 6) | DROP_BIT)
    }

    #[inline]
    pub const fn to(self) -> Square {
        Square((self.0 & 63) as u8)
    }

    /// Origin square of a board move; `None` for a drop.
    #[inline]
    pub const fn from(self) -> Option<Square> {
        if self.is_drop() {
            None
        } else {
            Some(Square(((self.0 >> 6) & 63) as u8))
        }
    }

    #[inline]
    pub const fn is_drop(self) -> bool {
        self.0 & DROP_BIT != 0
    }

    #[inline]
    pub const fn is_promotion(self) -> bool {
        self.0 & PROMOTE_BIT != 0
    }

    /// The dropped role, for a drop.
    #[inline]
    pub const fn drop_role(self) -> Option<Role> {
        if self.is_drop() {
            Some(Role::ALL[((self.0 >> 6) & 3) as usize])
        } else {
            None
        }
    }

    /// The raw 16-bit code (stable; used by game records).
    #[inline]
    pub const fn to_u16(self) -> u16 {
        self.0
    }

    /// Inverse of [`Move::to_u16`]; `None` for a code no move has.
    pub fn from_u16(code: u16) -> Option<Move> {
        let to = code & 63;
        let mid = (code >> 6) & 63;
        if code >> 14 != 0 || to as usize >= SQUARES {
            return None;
        }
        if code & DROP_BIT != 0 {
            if code & PROMOTE_BIT != 0 || mid > 3 {
                return None;
            }
        } else if mid as usize >= SQUARES {
            return None;
        }
        Some(Move(code))
    }

    /// Parses the text of a move (`a3a4`, `b6b7+`, `P@c5`) without checking legality.
    pub fn parse_uci(text: &str) -> Option<Move> {
        let t = text.trim();
        if let Some((role, sq)) = t.split_once('@') {
            let mut chars = role.chars();
            let c = chars.next()?;
            if chars.next().is_some() || !c.is_ascii_uppercase() {
                return None;
            }
            return Some(Move::drop(Role::from_char(c)?, Square::parse(sq)?));
        }
        if !t.is_ascii() {
            return None;
        }
        let (body, promote) = match t.strip_suffix('+') {
            Some(b) => (b, true),
            None => (t.strip_suffix('=').unwrap_or(t), false),
        };
        if body.len() != 4 {
            return None;
        }
        let from = Square::parse(&body[..2])?;
        let to = Square::parse(&body[2..])?;
        if from == to {
            return None;
        }
        Some(Move::normal(from, to, promote))
    }
}

impl fmt::Display for Move {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.drop_role(), self.from()) {
            (Some(role), _) => write!(f, "{}@{}", role.char(), self.to()),
            (None, Some(from)) => {
                write!(f, "{}{}", from, self.to())?;
                if self.is_promotion() {
                    f.write_str("+")?;
                }
                Ok(())
            }
            (None, None) => unreachable!("a move is a drop or has an origin"),
        }
    }
}

impl fmt::Debug for Move {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}
