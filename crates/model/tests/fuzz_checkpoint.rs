//! Fuzz target for the checkpoint reader, run as an ordinary test with a fixed budget
//! (`YARI_FUZZ_CASES=N` for a longer run): arbitrary bytes, and a valid file with bytes
//! changed and the checksum recomputed, so that the metadata parser, the architecture checks
//! and burn's weight loader all see hostile input. Nothing may panic, and no allocation may
//! grow beyond a small multiple of the input.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use proptest::prelude::*;
use yari_model::checkpoint::to_bytes;
use yari_model::{default_device, Checkpoint, CheckpointMeta, NetConfig};

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

fn tiny() -> NetConfig {
    NetConfig {
        value_channels: 2,
        value_hidden: 8,
        ..NetConfig::new(1, 8)
    }
}

fn valid() -> &'static Vec<u8> {
    static BYTES: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    BYTES.get_or_init(|| {
        let net = tiny().init(&default_device());
        to_bytes(&net, &CheckpointMeta::new(tiny())).unwrap()
    })
}

fn reseal(mut bytes: Vec<u8>) -> Vec<u8> {
    if bytes.len() >= 24 {
        let end = bytes.len() - 4;
        let crc = crc32fast::hash(&bytes[..end]);
        bytes[end..].copy_from_slice(&crc.to_le_bytes());
    }
    bytes
}

/// Parses `bytes` and, when they pass as the tiny net, builds it; checks the allocation bound.
fn load_bounded(bytes: &[u8]) -> Result<(), TestCaseError> {
    LARGEST.store(0, Ordering::Relaxed);
    if let Ok(ckpt) = Checkpoint::from_bytes(bytes) {
        // Other shapes pass only if a mutation produced another valid, small config; the
        // limits of `NetConfig::validate` bound them, but building them is not this test.
        if ckpt.meta.config == tiny() {
            let _ = ckpt.into_net_any(&default_device());
        }
    }
    let largest = LARGEST.load(Ordering::Relaxed);
    prop_assert!(
        largest <= 8 * bytes.len() + (4 << 20),
        "a {}-byte input made a {largest}-byte allocation",
        bytes.len()
    );
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases(500)))]

    #[test]
    fn arbitrary_bytes_are_refused_cleanly(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
        load_bounded(&bytes)?;
    }

    #[test]
    fn resealed_mutations_load_or_are_refused_cleanly(
        edits in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..6),
    ) {
        let mut bytes = valid().clone();
        for (at, value) in edits {
            let at = 8 + at % (bytes.len() - 12);
            bytes[at] = value;
        }
        load_bounded(&reseal(bytes))?;
    }

    /// Mutations confined to the weights (burnpack) part, where burn's own parser reads
    /// lengths and offsets from the file.
    #[test]
    fn resealed_weight_mutations_load_or_are_refused_cleanly(
        edits in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..4),
    ) {
        let mut bytes = valid().clone();
        let meta_len = u32::from_le_bytes(bytes[8..12].try_into().unwrap()) as usize;
        let start = 20 + meta_len;
        let len = bytes.len() - 4 - start;
        for (at, value) in edits {
            bytes[start + at % len] = value;
        }
        load_bounded(&reseal(bytes))?;
    }
}
