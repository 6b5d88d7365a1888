//! `yari bench selfplay` and `yari selfplay` without the CLI: compiles the CLI's own
//! `selfplay_cmd` module so the figures come from the same code.
//!
//! `cargo run -p yari-selfplay --example bench_selfplay -- [--json]` benchmarks
//! (`YARI_BENCH_SECONDS` sets the duration, `RAYON_NUM_THREADS` the threads);
//! `... -- --games N --out DIR [--model FILE]` plays and writes shards.

#[path = "../../cli/src/selfplay_cmd.rs"]
mod selfplay_cmd;

use std::path::PathBuf;

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let value = |flag: &str| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    match (value("--games"), value("--out")) {
        (Some(games), Some(out)) => {
            let model = value("--model").map(PathBuf::from);
            let config = yari_selfplay::SelfplayConfig::default();
            selfplay_cmd::run(model.as_deref(), games.parse()?, out.as_ref(), config)
        }
        _ => selfplay_cmd::bench(args.iter().any(|a| a == "--json")),
    }
}
