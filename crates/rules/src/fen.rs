//! FEN text exactly as Fairy-Stockfish writes it for `yarishogi`, and validated parsing.
//!
//! Normal form: `<board>[<hand>] <side> - - <halfmove clock> <fullmove number>`. Accepted on
//! input as well: `[-]` for empty hands, no bracket group, and no `- -` fields (pyffish's
//! `...[-] w 0 1`).

use std::fmt::Write;

use thiserror::Error;

use crate::attacks::{file_bb, LAST_RANK};
use crate::board::Board;
use crate::types::{Color, Kind, Piece, Role, Square, FILES, RANKS};

/// Why a FEN was rejected.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum FenError {
    #[error("empty FEN")]
    Empty,
    #[error("board has {0} ranks, expected 9")]
    WrongRankCount(usize),
    #[error("rank {rank} describes {files} files, expected 7")]
    WrongFileCount { rank: usize, files: usize },
    #[error("unknown piece letter {0:?} on the board")]
    UnknownPiece(char),
    #[error("'+' must be followed by P, N, B or R (found {0:?})")]
    BadPromotion(String),
    #[error(
        "bad hand {0:?}: expected letters R, B, N, P (upper case White, lower case Black) or '-'"
    )]
    BadHand(String),
    #[error("too many {role:?}s: {count} in total, at most {max} exist")]
    TooManyPieces {
        role: Role,
        count: usize,
        max: usize,
    },
    #[error("{0} has no General")]
    MissingGeneral(Color),
    #[error("{0} has more than one General")]
    ExtraGeneral(Color),
    #[error("{piece} on {square} could never move again")]
    ImmobilePiece { piece: String, square: Square },
    #[error("{color} has two unpromoted pawns on file {file}")]
    DoubledPawns { color: Color, file: char },
    #[error("missing side to move")]
    MissingSide,
    #[error("bad side to move {0:?}: expected 'w' or 'b'")]
    BadSide(String),
    #[error("the side not to move ({0}) is in check")]
    OpponentInCheck(Color),
    #[error("bad move counter {0:?}")]
    BadCounter(String),
    #[error("unexpected text after the move counters: {0:?}")]
    TrailingText(String),
}

fn piece_from_char(c: char) -> Option<Piece> {
    let color = if c.is_ascii_uppercase() {
        Color::White
    } else {
        Color::Black
    };
    let kind = match c.to_ascii_uppercase() {
        'P' => Kind::Pawn,
        'N' => Kind::Knight,
        'B' => Kind::Bishop,
        'R' => Kind::Rook,
        'K' => Kind::King,
        _ => return None,
    };
    Some(Piece { color, kind })
}

/// Parses a FEN into a board, checking that it describes a position that can occur.
pub(crate) fn parse(fen: &str) -> Result<Board, FenError> {
    let mut fields = fen.split_whitespace();
    let first = fields.next().ok_or(FenError::Empty)?;
    let (placement, hand) = match first.find('[') {
        Some(i) => {
            let rest = &first[i + 1..];
            let hand = rest
                .strip_suffix(']')
                .ok_or_else(|| FenError::BadHand(rest.to_string()))?;
            (&first[..i], hand)
        }
        None => (first, ""),
    };

    let mut board = Board::empty();
    let ranks: Vec<&str> = placement.split('/').collect();
    if ranks.len() != RANKS {
        return Err(FenError::WrongRankCount(ranks.len()));
    }
    for (i, text) in ranks.iter().enumerate() {
        let rank = RANKS - 1 - i;
        let mut file = 0usize;
        let mut chars = text.chars().peekable();
        while let Some(c) = chars.next() {
            if let Some(d) = c.to_digit(10) {
                if d == 0 {
                    return Err(FenError::UnknownPiece(c));
                }
                file += d as usize;
                continue;
            }
            let (promoted, letter) = if c == '+' {
                match chars.next() {
                    Some(l) => (true, l),
                    None => return Err(FenError::BadPromotion(String::new())),
                }
            } else {
                (false, c)
            };
            let mut piece = piece_from_char(letter).ok_or(FenError::UnknownPiece(letter))?;
            if promoted {
                piece.kind = piece
                    .kind
                    .promoted()
                    .ok_or_else(|| FenError::BadPromotion(letter.to_string()))?;
            }
            if file < FILES {
                board.put(rank * FILES + file, piece);
            }
            file += 1;
        }
        if file != FILES {
            return Err(FenError::WrongFileCount {
                rank: rank + 1,
                files: file,
            });
        }
    }

    // `-` is only another spelling of an empty hand: the piece counts below must still run,
    // or a board with more pieces than exist would be accepted and overflow a hand later.
    let hand = if hand == "-" { "" } else { hand };
    let mut counts = [[0usize; 4]; 2];
    for c in hand.chars() {
        let role = Role::from_char(c)
            .filter(|_| c.is_ascii_alphabetic())
            .ok_or_else(|| FenError::BadHand(hand.to_string()))?;
        let color = if c.is_ascii_uppercase() {
            Color::White
        } else {
            Color::Black
        };
        counts[color.index()][role.index()] += 1;
    }
    for role in Role::ALL {
        let max = if role == Role::Pawn { 14 } else { 4 };
        let on_board = (0..63)
            .filter_map(|s| board.piece_at(Square::from_index(s)))
            .filter(|p| p.kind.hand_role() == Some(role))
            .count();
        let count = on_board + counts[0][role.index()] + counts[1][role.index()];
        if count > max {
            return Err(FenError::TooManyPieces { role, count, max });
        }
        for color in Color::ALL {
            board.set_hand(color, role, counts[color.index()][role.index()] as u8);
        }
    }

    let side = fields.next().ok_or(FenError::MissingSide)?;
    let turn = match side {
        "w" => Color::White,
        "b" => Color::Black,
        _ => return Err(FenError::BadSide(side.to_string())),
    };
    board.set_turn(turn);

    let mut rest: Vec<&str> = fields.collect();
    // Castling and en-passant placeholders, present in the normal form.
    let placeholders = rest.iter().take(2).take_while(|f| **f == "-").count();
    rest.drain(..placeholders);
    let mut counters = [0u32, 1u32];
    for (i, text) in rest.iter().enumerate() {
        if i >= 2 {
            return Err(FenError::TrailingText(rest[2..].join(" ")));
        }
        counters[i] = text
            .parse()
            .map_err(|_| FenError::BadCounter(text.to_string()))?;
    }
    board.set_clocks(counters[0], counters[1].max(1));

    validate(&board)?;
    board.refresh_checkers();
    Ok(board)
}

fn validate(board: &Board) -> Result<(), FenError> {
    for color in Color::ALL {
        match board.pieces(color, Kind::King).count_ones() {
            0 => return Err(FenError::MissingGeneral(color)),
            1 => {}
            _ => return Err(FenError::ExtraGeneral(color)),
        }
        let last = LAST_RANK[color.index()];
        let stuck = (board.pieces(color, Kind::Pawn)
            | board.pieces(color, Kind::Knight)
            | board.pieces(color, Kind::Bishop))
            & last;
        if stuck != 0 {
            let square = Square::from_index(stuck.trailing_zeros());
            let piece = board.piece_at(square).expect("occupied").to_string();
            return Err(FenError::ImmobilePiece { piece, square });
        }
        let pawns = board.pieces(color, Kind::Pawn);
        for file in 0..FILES {
            if (pawns & file_bb(file)).count_ones() > 1 {
                return Err(FenError::DoubledPawns {
                    color,
                    file: (b'a' + file as u8) as char,
                });
            }
        }
    }
    let them = !board.side_to_move();
    let ksq = board.king(them);
    if board.attackers_to(ksq, board.side_to_move(), board.occupied()) != 0 {
        return Err(FenError::OpponentInCheck(them));
    }
    Ok(())
}

/// The FEN of a board, in Fairy-Stockfish's normal form.
pub(crate) fn write(board: &Board) -> String {
    let mut out = String::with_capacity(80);
    for rank in (0..RANKS).rev() {
        let mut empty = 0;
        for file in 0..FILES {
            match board.piece_at(Square::from_index((rank * FILES + file) as u32)) {
                None => empty += 1,
                Some(piece) => {
                    if empty > 0 {
                        write!(out, "{empty}").unwrap();
                        empty = 0;
                    }
                    write!(out, "{piece}").unwrap();
                }
            }
        }
        if empty > 0 {
            write!(out, "{empty}").unwrap();
        }
        if rank > 0 {
            out.push('/');
        }
    }
    out.push('[');
    for color in Color::ALL {
        for role in Role::ALL {
            let c = match color {
                Color::White => role.char(),
                Color::Black => role.char().to_ascii_lowercase(),
            };
            for _ in 0..board.hand(color, role) {
                out.push(c);
            }
        }
    }
    out.push(']');
    write!(
        out,
        " {} - - {} {}",
        board.side_to_move().fen_char(),
        board.halfmove_clock(),
        board.fullmove_number()
    )
    .unwrap();
    out
}
