//! Arbitrary input never panics: FEN parsing and move parsing return errors instead.
//!
//! These are the rules' fuzz targets, run as ordinary tests with a fixed budget;
//! `YARI_FUZZ_CASES=N` raises the number of cases per target for a longer run.

use proptest::prelude::*;
use yari_rules::{FenError, Position, START_FEN};

const SAMPLE_FENS: [&str; 3] = [
    START_FEN,
    "3k3/1r2b2/1pn+N1r1/p1N1pp1/1PpbN1p/P3PPP/R1K4/1B5/RB5[Ppp] b - - 2 27",
    "k1+Bb3/3N3/+Bn2p1B/1n2Pp1/2PP1P1/r3r1p/Np2+r2/PP2RKP/3+p3[PP] w - - 7 67",
];

/// Cases per target: `YARI_FUZZ_CASES` when set, else `default`.
fn cases(default: u32) -> u32 {
    std::env::var("YARI_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A FEN built from a random placement (any number of any piece, promoted or not) and one of
/// the hand spellings, so that the parser's counting and placement checks are reached.
fn placement_fen() -> impl Strategy<Value = String> {
    let square = prop_oneof![
        6 => Just(None),
        1 => proptest::sample::select(&["p", "n", "b", "r", "+p", "+n", "+b", "+r",
            "P", "N", "B", "R", "+P", "+N", "+B", "+R"][..]).prop_map(Some),
    ];
    let hand = prop_oneof![
        Just(String::new()),
        Just("[-]".to_string()),
        Just("[]".to_string()),
        "\\[[RBNPrbnp]{0,20}\\]",
    ];
    (
        proptest::collection::vec(square, 63),
        hand,
        prop_oneof![Just("w"), Just("b")],
        0u32..300,
        (0usize..63, 0usize..63),
    )
        .prop_map(|(mut squares, hand, side, clock, (k, big_k))| {
            squares[k] = Some("k");
            squares[big_k] = Some("K");
            let mut ranks = Vec::new();
            for rank in squares.chunks(7) {
                let mut text = String::new();
                let mut empty = 0;
                for sq in rank {
                    match sq {
                        None => empty += 1,
                        Some(p) => {
                            if empty > 0 {
                                text.push_str(&empty.to_string());
                                empty = 0;
                            }
                            text.push_str(p);
                        }
                    }
                }
                if empty > 0 {
                    text.push_str(&empty.to_string());
                }
                ranks.push(text);
            }
            format!("{}{hand} {side} - - {clock} 1", ranks.join("/"))
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases(3000)))]

    /// Whatever parses must print and re-parse to the same position, and every legal move
    /// (captures into the hand included) must be playable from it, for two plies.
    #[test]
    fn random_placements_parse_or_error(fen in placement_fen(), pick in any::<u64>()) {
        if let Ok(pos) = Position::from_fen(&fen) {
            let again = Position::from_fen(&pos.fen()).unwrap();
            prop_assert_eq!(again.fen(), pos.fen());
            for mv in pos.legal_moves() {
                let mut next = pos.clone();
                next.play(mv);
                let _ = next.outcome();
                let replies = next.legal_moves();
                if !replies.is_empty() {
                    next.play(replies[(pick % replies.len() as u64) as usize]);
                }
                let printed = next.fen();
                prop_assert_eq!(Position::from_fen(&printed).unwrap().fen(), printed);
            }
        }
    }

    #[test]
    fn any_text_parses_or_errors(text in "\\PC{0,80}") {
        let _ = Position::from_fen(&text);
    }

    #[test]
    fn fen_like_text_parses_or_errors(text in "[1-9kKpPnNbBrR+/\\[\\]-]{0,70}( [wb])?( -)?( -)?( [0-9]{1,3})?( [0-9]{1,3})?") {
        if let Ok(pos) = Position::from_fen(&text) {
            // Whatever parses must print and re-parse to the same position.
            let again = Position::from_fen(&pos.fen()).unwrap();
            prop_assert_eq!(again.fen(), pos.fen());
        }
    }

    #[test]
    fn mutated_fens_parse_or_error(which in 0usize..3, at in 0usize..100, c in proptest::char::any()) {
        let mut chars: Vec<char> = SAMPLE_FENS[which].chars().collect();
        let at = at % chars.len();
        chars[at] = c;
        let text: String = chars.into_iter().collect();
        if let Ok(pos) = Position::from_fen(&text) {
            let _ = pos.legal_moves();
            let _ = pos.outcome();
        }
    }

    #[test]
    fn any_move_text_is_parsed_safely(text in "\\PC{0,8}") {
        let mut pos = Position::startpos();
        let _ = pos.play_uci(&text);
    }
}

#[test]
fn each_invalid_fen_names_its_problem() {
    type Check = fn(&FenError) -> bool;
    let cases: &[(&str, Check)] = &[
        ("", |e| matches!(e, FenError::Empty)),
        ("rnnkbbr/7/ppppppp/7/7/7/PPPPPPP/RBBKNNR[] w", |e| {
            matches!(e, FenError::WrongRankCount(8))
        }),
        ("rnnkbbr/8/ppppppp/7/7/7/PPPPPPP/7/RBBKNNR[] w", |e| {
            matches!(e, FenError::WrongFileCount { rank: 8, files: 8 })
        }),
        ("rnnkbbr/7/ppppppp/7/7/7/PPPPPPP/6/RBBKNNR[] w", |e| {
            matches!(e, FenError::WrongFileCount { rank: 2, files: 6 })
        }),
        ("rnnkbbr/7/ppppppp/7/3X3/7/PPPPPPP/7/RBBKNNR[] w", |e| {
            matches!(e, FenError::UnknownPiece('X'))
        }),
        ("rnnkbbr/7/ppppppp/7/3+K3/7/PPPPPPP/7/RBBKNNR[] w", |e| {
            matches!(e, FenError::BadPromotion(_))
        }),
        ("rnnkbbr/7/ppppppp/7/7/7/PPPPPPP/7/RBBKNNR[PX] w", |e| {
            matches!(e, FenError::BadHand(_))
        }),
        ("rnnkbbr/7/ppppppp/7/7/7/PPPPPPP/7/RBBKNNR[+P] w", |e| {
            matches!(e, FenError::BadHand(_))
        }),
        ("rnnkbbr/7/ppppppp/7/7/7/PPPPPPP/7/RBBKNNR[RRR] w", |e| {
            matches!(e, FenError::TooManyPieces { .. })
        }),
        ("rnn1bbr/7/ppppppp/7/7/7/PPPPPPP/7/RBBKNNR[] w", |e| {
            matches!(e, FenError::MissingGeneral(yari_rules::Color::Black))
        }),
        ("rnnkbbr/7/ppppppp/7/3K3/7/PPPPPPP/7/RBBKNNR[] w", |e| {
            matches!(e, FenError::ExtraGeneral(yari_rules::Color::White))
        }),
        ("rnnkbPr/7/ppppppp/7/7/7/PPPPPP1/7/RBBKNNR[] w", |e| {
            matches!(e, FenError::ImmobilePiece { .. })
        }),
        ("rnnkbbr/7/ppppppp/7/7/P6/PPPPPP1/7/RBBKNNR[] w", |e| {
            matches!(e, FenError::DoubledPawns { file: 'a', .. })
        }),
        ("rnnkbbr/7/ppppppp/7/7/7/PPPPPPP/7/RBBKNNR[]", |e| {
            matches!(e, FenError::MissingSide)
        }),
        ("rnnkbbr/7/ppppppp/7/7/7/PPPPPPP/7/RBBKNNR[] x", |e| {
            matches!(e, FenError::BadSide(_))
        }),
        ("3k3/7/7/7/7/7/7/7/3RK2[] w - - 0 1", |e| {
            matches!(e, FenError::OpponentInCheck(yari_rules::Color::Black))
        }),
        (
            "rnnkbbr/7/ppppppp/7/7/7/PPPPPPP/7/RBBKNNR[] w - - x 1",
            |e| matches!(e, FenError::BadCounter(_)),
        ),
        (
            "rnnkbbr/7/ppppppp/7/7/7/PPPPPPP/7/RBBKNNR[] w - - 0 1 9",
            |e| matches!(e, FenError::TrailingText(_)),
        ),
    ];
    for (fen, expected) in cases {
        let err = Position::from_fen(fen).expect_err(fen);
        assert!(expected(&err), "{fen}: got {err:?} ({err})");
        assert!(!err.to_string().is_empty());
    }
}

#[test]
fn accepted_fen_forms_normalise() {
    for text in [
        "rnnkbbr/7/ppppppp/7/7/7/PPPPPPP/7/RBBKNNR[-] w 0 1",
        "rnnkbbr/7/ppppppp/7/7/7/PPPPPPP/7/RBBKNNR w - - 0 1",
        "rnnkbbr/7/ppppppp/7/7/7/PPPPPPP/7/RBBKNNR[] w",
    ] {
        assert_eq!(Position::from_fen(text).unwrap().fen(), START_FEN, "{text}");
    }
    let pos = Position::from_fen("rnnk1br/7/ppppppp/7/7/7/PPPPPPP/7/RBBK1NR[pnbrPNB] w - - 0 1");
    assert!(pos.is_err(), "too many bishops: {pos:?}");
    // Hand letters in any order come out in FSF's order: White then Black, R B N P each.
    let pos =
        Position::from_fen("rnnk1b1/7/1pppppp/7/7/7/1PPPPPP/7/RB1K1N1[pbrPNB] w - - 0 1").unwrap();
    assert_eq!(
        pos.fen(),
        "rnnk1b1/7/1pppppp/7/7/7/1PPPPPP/7/RB1K1N1[BNPrbp] w - - 0 1"
    );
}

/// `[-]` (pyffish's empty hand) once skipped the piece-count check, so 21 rooks were accepted
/// and a capture then overflowed the hand counter.
#[test]
fn dash_hand_is_counted_like_an_empty_hand() {
    let board = "rrrkrrr/rrrrrrr/7/7/7/7/7/RRRRRRR/3K3";
    for hand in ["[-]", "[]", ""] {
        let fen = format!("{board}{hand} w - - 0 1");
        let err = Position::from_fen(&fen).expect_err(&fen);
        assert!(
            matches!(
                err,
                FenError::TooManyPieces {
                    count: 20,
                    max: 4,
                    ..
                }
            ),
            "{fen}: {err}"
        );
    }
    let pos = Position::from_fen("rnnkbbr/7/ppppppp/7/7/7/PPPPPPP/7/RBBKNNR[-] w 0 1").unwrap();
    assert_eq!(pos.fen(), START_FEN);
}

/// The placement generator is only a fuzz target if a fair share of what it makes parses
/// (and so reaches move generation and captures into the hand).
#[test]
fn placement_generator_reaches_valid_positions() {
    use proptest::strategy::ValueTree;
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let strategy = placement_fen();
    let parsed = (0..1000)
        .filter(|_| {
            let fen = strategy.new_tree(&mut runner).unwrap().current();
            Position::from_fen(&fen).is_ok()
        })
        .count();
    assert!(parsed >= 100, "only {parsed} of 1000 generated FENs parse");
}
