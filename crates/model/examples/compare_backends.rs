//! Compares the compiled-in backends on the net and on a large matmul.
//!
//! `cargo run --release -p yari-model --example compare_backends --features ndarray -- [blocks channels]`

use std::time::Duration;

use yari_model::bench::{bench_forward, matmul_peak_gflops};
use yari_model::{available_backends, device_named, NetConfig};

fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .map(|a| a.parse().expect("blocks and channels are integers"))
        .collect();
    let config = match args.as_slice() {
        [b, c] => NetConfig::new(*b, *c),
        _ => NetConfig::default(),
    };
    let backends: Vec<&str> = match std::env::var("YARI_BACKENDS") {
        Ok(list) => list.split(',').map(|s| &*s.to_string().leak()).collect(),
        Err(_) => available_backends(),
    };
    let batches: Vec<usize> = std::env::var("YARI_BATCHES")
        .map(|l| l.split(',').map(|s| s.parse().unwrap()).collect())
        .unwrap_or_else(|_| vec![1, 64, 256]);
    println!(
        "net {}x{}: {:.1} MFLOP/position",
        config.blocks,
        config.channels,
        config.flops_per_position() as f64 / 1e6
    );
    let t = Duration::from_millis(1500);
    for name in backends {
        let Some(device) = device_named(name) else {
            println!("{name}: not compiled in");
            continue;
        };
        let net = config.init(&device);
        let peak = matmul_peak_gflops(&device, 2048, t);
        print!("{name}: peak {peak:.1} GFLOP/s;");
        for &b in &batches {
            let r = bench_forward(&net, &config, &device, b, t);
            print!(
                " b{}: {:.0} pos/s {:.1} GFLOP/s ({:.0}%);",
                b,
                r.positions_per_s,
                r.gflops,
                100.0 * r.gflops / peak
            );
        }
        println!();
    }
}
