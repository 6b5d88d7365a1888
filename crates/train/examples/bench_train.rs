//! Training throughput of the default net and batch size: the same measurement as
//! `yari bench train`, runnable before the CLI is wired (`cargo run -p yari-train --example
//! bench_train [SECONDS]`). Prints one JSON object.

use std::time::Duration;

fn main() -> Result<(), yari_train::TrainError> {
    let secs: u64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(10);
    let b = yari_train::bench_train(
        &yari_train::TrainConfig::default(),
        Duration::from_secs(secs),
    )?;
    println!("{}", serde_json::to_string(&b).expect("serialises"));
    Ok(())
}
