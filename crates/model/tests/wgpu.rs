//! The wgpu backend computes what the CPU does: the forward pass (shipped and random nets), a
//! training step, and checkpoints across devices. CI runs these on lavapipe, Mesa's software
//! Vulkan device: `cargo test --workspace --features yari-cli/wgpu --test wgpu`.
//!
//! Tolerance: every logit within `TOL * max(1, largest |CPU logit| of that output)`, TOL = 1e-3.
//! Both sides are f32; the GPU's convolutions sum in another order (and may use fused
//! multiply-adds), which on the shipped net moves logits by about 1e-5 of their scale;
//! a real fault (a wrong kernel, a lost batch-norm statistic, a perturbed weight) moves them
//! by far more.
#![cfg(feature = "wgpu")]

use burn::module::{Module, ModuleMapper, ModuleVisitor, Param};
use burn::optim::{GradientsParams, SgdConfig};
use burn::tensor::activation::log_softmax;
use burn::tensor::{Device, Distribution, Tensor, TensorData};
use yari_model::checkpoint::{self, CheckpointMeta};
use yari_model::cpu::{CpuNet, CpuPath};
use yari_model::{open_device, BurnEvaluator, Checkpoint, Net, NetConfig, NetEvaluator};
use yari_rules::encoding::{encode_batch, FILES, INPUT_PLANES, POLICY_SIZE, RANKS};
use yari_rules::Position;

const TOL: f32 = 1e-3;

fn wgpu() -> Device {
    open_device("wgpu").unwrap_or_else(|e| {
        panic!("{e}\n(CI installs the software device: apt-get install mesa-vulkan-drivers libvulkan1)")
    })
}

fn cpu() -> Device {
    Device::flex()
}

fn shipped() -> Checkpoint {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../data/models/default.yari"
    );
    Checkpoint::read(path).expect("shipped network")
}

/// Positions with pieces in hand and promotions: a pseudo-random game preferring captures,
/// sampled every few plies.
fn positions() -> Vec<Position> {
    let mut out = vec![Position::startpos()];
    let mut pos = Position::startpos();
    for ply in 0..160usize {
        let moves = pos.legal_moves();
        if moves.is_empty() || pos.outcome().is_some() {
            break;
        }
        let captures: Vec<_> = moves
            .iter()
            .copied()
            .filter(|m| pos.piece_at(m.to()).is_some())
            .collect();
        let pool = if captures.is_empty() {
            moves.to_vec()
        } else {
            captures
        };
        pos.play(pool[(ply * 7919) % pool.len()]);
        if ply % 5 == 4 {
            out.push(pos.clone());
        }
    }
    assert!(out.len() >= 10, "only {} positions", out.len());
    out
}

/// `Err` naming the first element of `got` (wgpu) off `want` (CPU) by more than the tolerance.
fn close(got: &[f32], want: &[f32], what: &str) -> Result<f32, String> {
    if got.len() != want.len() {
        return Err(format!("{what}: {} values vs {}", got.len(), want.len()));
    }
    let scale = want.iter().fold(1.0f32, |m, v| m.max(v.abs()));
    let mut worst = 0.0f32;
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        let d = (g - w).abs();
        if d.is_nan() || d > TOL * scale {
            return Err(format!(
                "{what}[{i}]: wgpu {g} vs cpu {w} (|diff| {d} > {TOL} x scale {scale})"
            ));
        }
        worst = worst.max(d / scale);
    }
    Ok(worst)
}

/// Logits of `net` on both devices, wgpu against the CPU forward pass evaluations use
/// (`CpuNet`) and against burn's own CPU backend.
fn compare_forward(net: &Net, config: NetConfig, positions: &[Position]) -> Result<f32, String> {
    let refs: Vec<&Position> = positions.iter().collect();
    let on_gpu = NetEvaluator::new(net.clone().to_device(&wgpu()), config, wgpu());
    assert!(!on_gpu.uses_cpu_forward());
    // The f32 path: bf16 (the default on AVX-512 BF16 CPUs) is bounded against f32 on its
    // own, in tests/cpu.rs, with a tolerance of its own.
    let cpu_net = CpuNet::from_net_with_path(&net.clone().to_device(&cpu()), &config, CpuPath::F32)
        .expect("the f32 path runs on any CPU");
    let cpu_burn = NetEvaluator::Burn(Box::new(BurnEvaluator::new(
        net.clone().to_device(&cpu()),
        config,
        cpu(),
    )));
    let (gp, gw) = on_gpu.logits(&refs);
    let mut worst = 0.0f32;
    for name in ["CpuNet f32", "flex"] {
        let (cp, cw) = if name == "flex" {
            cpu_burn.logits(&refs)
        } else {
            cpu_net.forward(&encode_batch(&refs), refs.len())
        };
        worst = worst.max(close(&gp, &cp, &format!("policy logits vs {name}"))?);
        worst = worst.max(close(&gw, &cw, &format!("wdl logits vs {name}"))?);
    }
    Ok(worst)
}

/// A net after a few training-mode passes: batch-norm statistics away from (0, 1).
fn random_net(config: &NetConfig, seed: u64) -> Net {
    let device = cpu().autodiff();
    device.seed(seed);
    let net = config.init(&device);
    for _ in 0..3 {
        let x = Tensor::<4>::random(
            [6, INPUT_PLANES, RANKS, FILES],
            Distribution::Normal(0.5, 2.0),
            &device,
        );
        let _ = net.forward(x);
    }
    net.valid()
}

/// Every other test of this (CI's) build asks for no device: they must still run on the CPU.
#[test]
fn the_default_device_of_a_wgpu_build_is_the_cpu() {
    assert_eq!(
        yari_model::default_device(),
        cpu(),
        "BURN_DEVICE={:?}",
        std::env::var("BURN_DEVICE")
    );
}

#[test]
fn forward_matches_cpu_on_the_shipped_network() {
    let ckpt = shipped();
    let config = ckpt.meta.config;
    let net = ckpt.into_net_any(&cpu()).unwrap();
    let mut batch = positions();
    let worst = compare_forward(&net, config, &batch).unwrap();
    eprintln!(
        "shipped net, {} positions: worst |diff| / scale {worst:e}",
        batch.len()
    );
    // Self-play's batch sizes: the same positions over and over, 256 at once.
    let few = batch.clone();
    while batch.len() < 256 {
        batch.extend(few.iter().cloned());
    }
    batch.truncate(256);
    let worst = compare_forward(&net, config, &batch).unwrap();
    eprintln!("shipped net, 256 positions: worst |diff| / scale {worst:e}");
}

#[test]
fn forward_matches_cpu_on_random_nets() {
    for (i, (blocks, channels, value_channels, hidden)) in
        [(1, 8, 4, 16), (2, 12, 3, 10), (0, 5, 2, 7), (3, 32, 8, 32)]
            .into_iter()
            .enumerate()
    {
        let config = NetConfig {
            value_channels,
            value_hidden: hidden,
            ..NetConfig::new(blocks, channels)
        };
        let net = random_net(&config, 11 + i as u64);
        let worst = compare_forward(&net, config, &positions())
            .unwrap_or_else(|e| panic!("{blocks}x{channels}: {e}"));
        eprintln!("random {blocks}x{channels}: worst |diff| / scale {worst:e}");
    }
}

/// Adds `delta` to every element of the first parameter (the stem convolution's weight).
struct Perturb {
    delta: f32,
    done: bool,
}

impl ModuleMapper for Perturb {
    fn map_float<const D: usize>(&mut self, param: Param<Tensor<D>>) -> Param<Tensor<D>> {
        if self.done {
            return param;
        }
        self.done = true;
        let (id, tensor, mapper) = param.consume();
        let device = tensor.device();
        let mut values = tensor
            .to_data()
            .convert::<f32>()
            .try_to_vec::<f32>()
            .unwrap();
        values.iter_mut().for_each(|v| *v += self.delta);
        let shape = tensor.shape();
        let changed = Tensor::<D>::from_data(TensorData::new(values, shape), &device);
        Param::from_mapped_value(id, changed, mapper)
    }
}

/// The comparison above can fail: the shipped net's stem weights moved by 0.05 on the wgpu
/// side only are caught.
#[test]
fn a_perturbed_weight_on_one_device_fails_the_comparison() {
    let ckpt = shipped();
    let config = ckpt.meta.config;
    let net = ckpt.into_net_any(&cpu()).unwrap();
    let refs_positions = positions();
    let refs: Vec<&Position> = refs_positions.iter().collect();
    let perturbed = net.clone().to_device(&wgpu()).map(&mut Perturb {
        delta: 0.05,
        done: false,
    });
    let (gp, gw) = NetEvaluator::new(perturbed, config, wgpu()).logits(&refs);
    let (cp, cw) = NetEvaluator::new(net, config, cpu()).logits(&refs);
    let policy = close(&gp, &cp, "policy");
    let wdl = close(&gw, &cw, "wdl");
    eprintln!("perturbed: policy {policy:?}; wdl {wdl:?}");
    assert!(
        policy.is_err() || wdl.is_err(),
        "a 0.05 change of the stem weights went unnoticed"
    );
}

/// Every float parameter and buffer (batch-norm statistics included), in visiting order.
struct Collect(Vec<Vec<f32>>);

impl ModuleVisitor for Collect {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        let data = param.val().inner().into_data().convert::<f32>();
        self.0.push(data.try_to_vec::<f32>().unwrap());
    }
}

fn weights(net: &Net) -> Vec<Vec<f32>> {
    let mut c = Collect(Vec::new());
    net.visit(&mut c);
    c.0
}

/// One step of the trainer's loss (dense policy cross-entropy plus WDL cross-entropy) and SGD
/// with momentum on `device`; returns the loss and the updated net without autodiff.
fn train_step(net: &Net, device: &Device, batch: &TrainBatch) -> (f32, Net) {
    let device = device.clone().autodiff();
    // `train()` turns gradient tracking (and batch-norm's training mode) back on: a net that
    // went through `valid()` keeps both off across a device move.
    let net = net.clone().to_device(&device).train();
    let n = batch.size;
    let x = Tensor::<4>::from_data(
        TensorData::new(batch.inputs.clone(), [n, INPUT_PLANES, RANKS, FILES]),
        &device,
    );
    let pt = Tensor::<2>::from_data(
        TensorData::new(batch.policy.clone(), [n, POLICY_SIZE]),
        &device,
    );
    let wt = Tensor::<2>::from_data(TensorData::new(batch.wdl.clone(), [n, 3]), &device);
    let (policy, wdl) = net.forward(x);
    let policy_ce = (log_softmax(policy, 1) * pt).sum_dim(1).mean().neg();
    let value_ce = (log_softmax(wdl, 1) * wt).sum_dim(1).mean().neg();
    let loss = policy_ce + value_ce;
    let grads = GradientsParams::from_grads(loss.backward(), &net);
    let mut optim = SgdConfig::new()
        .with_momentum(Some(
            burn::optim::momentum::MomentumConfig::new().with_momentum(0.9),
        ))
        .init();
    let net = optim.step(0.05, net, grads);
    let loss = loss
        .into_data()
        .convert::<f32>()
        .try_to_vec::<f32>()
        .unwrap()[0];
    (loss, net.valid())
}

struct TrainBatch {
    size: usize,
    inputs: Vec<f32>,
    policy: Vec<f32>,
    wdl: Vec<f32>,
}

/// Real positions, each with a target spread over its legal moves and a game result.
fn train_batch(positions: &[Position]) -> TrainBatch {
    let refs: Vec<&Position> = positions.iter().collect();
    let mut policy = vec![0.0f32; positions.len() * POLICY_SIZE];
    let mut wdl = vec![0.0f32; positions.len() * 3];
    for (i, pos) in positions.iter().enumerate() {
        let moves = pos.legal_moves();
        for (k, &m) in moves.iter().enumerate() {
            let idx = yari_rules::encoding::index_of(pos, m);
            policy[i * POLICY_SIZE + idx] = (k + 1) as f32;
        }
        let row = &mut policy[i * POLICY_SIZE..(i + 1) * POLICY_SIZE];
        let sum: f32 = row.iter().sum();
        row.iter_mut().for_each(|p| *p /= sum.max(1e-9));
        wdl[i * 3 + i % 3] = 1.0;
    }
    TrainBatch {
        size: positions.len(),
        inputs: encode_batch(&refs),
        policy,
        wdl,
    }
}

#[test]
fn a_training_step_matches_cpu() {
    let config = NetConfig::new(2, 16);
    let net = random_net(&config, 5);
    let batch = train_batch(&positions());
    let (cpu_loss, cpu_net) = train_step(&net, &cpu(), &batch);
    let (gpu_loss, gpu_net) = train_step(&net, &wgpu(), &batch);
    assert!(cpu_loss.is_finite());
    assert!(
        (gpu_loss - cpu_loss).abs() <= TOL * cpu_loss.abs().max(1.0),
        "loss: wgpu {gpu_loss} vs cpu {cpu_loss}"
    );
    let (before, cpu_after, gpu_after) = (weights(&net), weights(&cpu_net), weights(&gpu_net));
    assert_eq!(cpu_after.len(), gpu_after.len());
    let mut moved = 0.0f32;
    let mut worst = 0.0f32;
    for (k, (c, g)) in cpu_after.iter().zip(&gpu_after).enumerate() {
        worst = worst.max(close(g, c, &format!("parameter {k} after the step")).unwrap());
        moved = moved.max(
            c.iter()
                .zip(&before[k])
                .fold(0.0, |m, (a, b)| m.max((a - b).abs())),
        );
    }
    assert!(
        moved > 1e-3,
        "the step changed nothing (largest change {moved})"
    );
    eprintln!("loss cpu {cpu_loss} wgpu {gpu_loss}; weights worst |diff| / scale {worst:e}; largest update {moved}");
    // And the updated nets (batch-norm statistics from the step included) still agree.
    let gpu_back = gpu_net.to_device(&cpu());
    let refs = positions();
    let r: Vec<&Position> = refs.iter().collect();
    let (ap, aw) = NetEvaluator::build(gpu_back, config, cpu(), CpuPath::F32).logits(&r);
    let (bp, bw) = NetEvaluator::build(cpu_net, config, cpu(), CpuPath::F32).logits(&r);
    close(&ap, &bp, "policy after the step").unwrap();
    close(&aw, &bw, "wdl after the step").unwrap();
}

#[test]
fn a_checkpoint_written_on_one_device_loads_on_the_other() {
    let config = NetConfig::new(1, 8);
    let net = random_net(&config, 3);
    let tmp = tempfile::tempdir().unwrap();
    let refs = positions();
    let r: Vec<&Position> = refs.iter().collect();
    for (from, to) in [(wgpu(), cpu()), (cpu(), wgpu())] {
        let path = tmp.path().join("net.yari");
        let written = net.clone().to_device(&from);
        checkpoint::save(&path, &written, &CheckpointMeta::new(config)).unwrap();
        // The f32 CPU path, as in `compare_forward`: bf16 (the default on AVX-512 BF16 CPUs)
        // moves logits by about 1e-3 of their scale, this file's whole tolerance, and is
        // bounded against f32 in tests/cpu.rs. CI failed here once on a bf16 machine.
        let loaded = NetEvaluator::load(&path, to.clone(), CpuPath::F32).unwrap();
        if to == cpu() {
            assert!(loaded.uses_cpu_forward());
        } else {
            assert_eq!(loaded.burn_device(), Some(&to));
        }
        let (ap, aw) = loaded.logits(&r);
        let (bp, bw) = NetEvaluator::build(written, config, from.clone(), CpuPath::F32).logits(&r);
        close(&ap, &bp, "policy").unwrap();
        close(&aw, &bw, "wdl").unwrap();
        // The file holds the weights themselves, so it does not depend on the writing device.
        let again = checkpoint::to_bytes(
            &net.clone().to_device(&to),
            &Checkpoint::read(&path).unwrap().meta,
        )
        .unwrap();
        assert_eq!(
            Checkpoint::from_bytes(&again).unwrap().weights(),
            Checkpoint::read(&path).unwrap().weights(),
            "{from:?} -> {to:?}"
        );
    }
}

/// A large matmul on wgpu gives the CPU's product: the kernel that `matmul_peak_gflops` times
/// runs in full, and reading its result back waits for it.
#[test]
fn a_large_matmul_matches_cpu() {
    let n = 1024;
    let cpu_a = Tensor::<2>::random([n, n], Distribution::Uniform(-1.0, 1.0), &cpu());
    let cpu_b = Tensor::<2>::random([n, n], Distribution::Uniform(-1.0, 1.0), &cpu());
    let on = |t: &Tensor<2>, d: &Device| Tensor::<2>::from_data(t.to_data(), d);
    let want = cpu_a
        .clone()
        .matmul(cpu_b.clone())
        .into_data()
        .try_to_vec::<f32>()
        .unwrap();
    let got = on(&cpu_a, &wgpu())
        .matmul(on(&cpu_b, &wgpu()))
        .into_data()
        .convert::<f32>()
        .try_to_vec::<f32>()
        .unwrap();
    // Sums of 1024 products of values in [-1, 1]: entries of about 18 in size.
    let worst = close(&got, &want, "1024x1024 matmul").unwrap();
    eprintln!("matmul: largest difference {worst:e}");
}

/// The matmul peak `yari bench nn` prints waits for the device: a product timed from launch
/// to its values in host memory is no faster than the peak says. Without the wait the peak
/// came out about 60,000 times too high on lavapipe.
#[test]
fn the_matmul_peak_waits_for_the_device() {
    let d = wgpu();
    let n = 1024;
    let a = Tensor::<2>::random([n, n], Distribution::Uniform(-1.0, 1.0), &d);
    let b = Tensor::<2>::random([n, n], Distribution::Uniform(-1.0, 1.0), &d);
    let product = || {
        let t = std::time::Instant::now();
        let values = yari_model::bench::read_back(a.clone().matmul(b.clone()));
        assert_eq!(values.len(), n * n);
        t.elapsed().as_secs_f64()
    };
    product();
    let direct = (0..3).map(|_| product()).fold(f64::INFINITY, f64::min);
    let direct_gflops = 2.0 * (n as f64).powi(3) / direct / 1e9;
    let peak = yari_model::bench::matmul_peak_gflops(&d, n, std::time::Duration::from_millis(500));
    eprintln!("1024^3 on wgpu: {direct_gflops:.1} GFLOP/s read back in full, peak {peak:.1}");
    // The peak shares read-back and launch latency over a chain, so it may be a little higher
    // than one product's; 3x is far below what an unsynchronised clock gives.
    assert!(
        peak < 3.0 * direct_gflops,
        "peak {peak} GFLOP/s against {direct_gflops} for a product read back in full"
    );
}
