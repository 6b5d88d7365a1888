//! Fuzz target for the shard reader, run as an ordinary test with a fixed budget
//! (`YARI_FUZZ_CASES=N` for a longer run): arbitrary bytes, and valid shards with bytes
//! changed and the checksum recomputed, so that the payload decoder itself sees hostile
//! lengths and codes. Nothing may panic, and no allocation may grow beyond a small multiple
//! of the input (a hostile length field must not become a huge `Vec`).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use proptest::prelude::*;
use rand::{Rng, SeedableRng};
use yari_rules::Position;
use yari_selfplay::record::{decode_shard, encode_shard, GameEnd, GameRecord, GameResult, Sample};

/// The system allocator, remembering the largest single request.
struct Counting;

static LARGEST: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    // SAFETY: forwards to the system allocator unchanged; only records the size.
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LARGEST.fetch_max(layout.size(), Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LARGEST.fetch_max(new_size, Ordering::Relaxed);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

fn cases(default: u32) -> u32 {
    std::env::var("YARI_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Two short random games with a sample at every ply: a valid shard to mutate.
fn valid_shard() -> Vec<u8> {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
    let games: Vec<GameRecord> = (0..2)
        .map(|id| {
            let mut pos = Position::startpos();
            let (mut moves, mut samples) = (Vec::new(), Vec::new());
            for ply in 0..12 {
                let legal = pos.legal_moves();
                if legal.is_empty() || pos.outcome().is_some() {
                    break;
                }
                let p = 1.0 / legal.len() as f32;
                samples.push(Sample {
                    ply: ply as u32,
                    root_value: 0.25,
                    surprise: 0.5,
                    policy: legal.iter().map(|m| (m.to_u16(), p)).collect(),
                });
                let mv = legal[rng.random_range(0..legal.len())];
                moves.push(mv.to_u16());
                pos.play(mv);
            }
            GameRecord {
                game_id: id,
                start_fen: yari_rules::START_FEN.to_string(),
                moves,
                samples,
                result: GameResult::Draw,
                end: GameEnd::PlyCap,
                resignation_disabled: false,
                would_resign: None,
            }
        })
        .collect();
    let bytes = encode_shard(&games).unwrap();
    assert_eq!(decode_shard(&bytes).unwrap(), games);
    bytes
}

/// `bytes` with the checksum recomputed, as a deliberately crafted file would have.
fn reseal(mut bytes: Vec<u8>) -> Vec<u8> {
    if bytes.len() >= 24 {
        let end = bytes.len() - 4;
        let crc = crc32fast::hash(&bytes[..end]);
        bytes[end..].copy_from_slice(&crc.to_le_bytes());
    }
    bytes
}

/// Decodes and checks that no allocation exceeded `64 x input + 1 MiB`.
fn decode_bounded(bytes: &[u8]) -> Result<(), TestCaseError> {
    LARGEST.store(0, Ordering::Relaxed);
    let _ = decode_shard(bytes);
    let largest = LARGEST.load(Ordering::Relaxed);
    // Proptest runs cases on this thread only, so the figure is this decode's.
    prop_assert!(
        largest <= 64 * bytes.len() + (1 << 20),
        "a {}-byte input made a {largest}-byte allocation",
        bytes.len()
    );
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases(2000)))]

    #[test]
    fn arbitrary_bytes_are_refused_cleanly(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
        decode_bounded(&bytes)?;
    }

    #[test]
    fn resealed_mutations_are_refused_cleanly(
        edits in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..6),
        cut in proptest::option::of(any::<usize>()),
    ) {
        let mut bytes = valid_shard_cached().clone();
        for (at, value) in edits {
            let at = 8 + at % (bytes.len() - 8);
            bytes[at] = value;
        }
        if let Some(cut) = cut {
            bytes.truncate(20 + cut % (bytes.len() - 20));
            // Keep the header's payload length honest so the decoder, not the framing
            // check, meets the cut.
            let payload = (bytes.len() - 20) as u64;
            bytes[12..20].copy_from_slice(&payload.to_le_bytes());
            bytes.extend_from_slice(&[0; 4]);
        }
        decode_bounded(&reseal(bytes))?;
    }

    /// The length fields themselves set to extremes (game count, FEN, move and sample
    /// counts), each at its offset in the first game.
    #[test]
    fn hostile_length_fields_are_refused_cleanly(
        which in 0usize..4,
        value in prop_oneof![Just(u32::MAX), Just(u32::MAX / 2), Just(65_535u32), any::<u32>()],
    ) {
        let mut bytes = valid_shard_cached().clone();
        let fen_len = yari_rules::START_FEN.len();
        match which {
            0 => bytes[8..12].copy_from_slice(&value.to_le_bytes()),
            1 => bytes[28..30].copy_from_slice(&(value as u16).to_le_bytes()),
            2 => bytes[30 + fen_len..34 + fen_len].copy_from_slice(&value.to_le_bytes()),
            _ => {
                let moves = u32::from_le_bytes(bytes[30 + fen_len..34 + fen_len].try_into().unwrap());
                let at = 34 + fen_len + 2 * moves as usize + 4;
                bytes[at..at + 4].copy_from_slice(&value.to_le_bytes());
            }
        }
        decode_bounded(&reseal(bytes))?;
    }
}

fn valid_shard_cached() -> &'static Vec<u8> {
    static SHARD: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    SHARD.get_or_init(valid_shard)
}

#[test]
fn the_reader_refuses_devices_by_path() {
    let err = yari_selfplay::record::read_shard("/dev/zero")
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("/dev/zero") && err.contains("not a regular file"),
        "{err}"
    );
}
