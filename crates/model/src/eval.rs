//! The network's implementation of search's evaluation interface ([`yari_search::Evaluator`]).

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Condvar, Mutex};

use burn::tensor::{Device, Tensor, TensorData};
use rayon::prelude::*;
use yari_rules::encoding::{encode_batch, index_of, FILES, INPUT_PLANES, POLICY_SIZE, RANKS};
use yari_rules::{Move, Position};

use crate::checkpoint::{Checkpoint, CheckpointError};
use crate::cpu::{CpuNet, CpuNetError, CpuPath};
use crate::device::is_cpu;
use crate::net::{Net, NetConfig};
use yari_search::{Evaluation, Evaluator};

/// The network behind search's evaluation interface, as [`NetEvaluator::build`] (the one
/// factory; [`crate::Backend::evaluator`] calls it with the process's choices) makes it for a
/// device: the CPU forward pass on a CPU device, burn's on any other.
#[derive(Debug)]
pub enum NetEvaluator {
    /// [`CpuNet`]'s forward pass (the same function, faster than burn's CPU backend on the
    /// small nets self-play uses: `docs/experiments.md`).
    Cpu(Box<CpuEvaluator>),
    /// burn's forward pass on its device.
    Burn(Box<BurnEvaluator>),
}

/// Evaluates with [`CpuNet`], the hand-written CPU forward pass.
#[derive(Debug)]
pub struct CpuEvaluator {
    /// Kept for export and inspection; evaluations never touch it.
    net: Net,
    config: NetConfig,
    cpu: CpuNet,
}

/// Evaluates with burn's forward pass on any burn device. On a GPU, calls made at the same
/// time from several threads (the arena's games, one per thread, each asking for one
/// position) are merged into one forward pass, since a GPU pays per call, not per position.
#[derive(Debug)]
pub struct BurnEvaluator {
    net: Net,
    config: NetConfig,
    device: Device,
    coalescer: Option<Coalescer>,
}

/// Merges concurrent forward passes: the first caller to find the device idle runs every
/// queued request as one batch while later callers queue up for the next one.
#[derive(Debug, Default)]
struct Coalescer {
    queue: Mutex<Queue>,
    done: Condvar,
}

#[derive(Debug, Default)]
struct Queue {
    /// A batch is being computed.
    busy: bool,
    /// A batch panicked: its callers would wait forever, so every caller panics instead.
    failed: bool,
    next_ticket: u64,
    waiting: Vec<(u64, Vec<f32>, usize)>,
    results: HashMap<u64, (Vec<f32>, Vec<f32>)>,
}

/// Clears `busy` and wakes the queue when a batch ends, also when its forward pass panics.
struct BatchGuard<'a> {
    coalescer: &'a Coalescer,
    finished: bool,
}

impl Drop for BatchGuard<'_> {
    fn drop(&mut self) {
        let mut q = self
            .coalescer
            .queue
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        q.busy = false;
        q.failed |= !self.finished;
        self.coalescer.done.notify_all();
    }
}

impl Coalescer {
    /// `forward(input, n)` of this request, computed in one batch with whatever else is
    /// queued when the device becomes free.
    fn run(
        &self,
        input: Vec<f32>,
        n: usize,
        forward: impl Fn(Vec<f32>, usize) -> (Vec<f32>, Vec<f32>),
    ) -> (Vec<f32>, Vec<f32>) {
        let lock = || self.queue.lock().unwrap_or_else(|e| e.into_inner());
        let mut q = lock();
        let ticket = q.next_ticket;
        q.next_ticket += 1;
        q.waiting.push((ticket, input, n));
        loop {
            if let Some(out) = q.results.remove(&ticket) {
                return out;
            }
            assert!(!q.failed, "a batched evaluation failed on another thread");
            if q.busy {
                q = self.done.wait(q).unwrap_or_else(|e| e.into_inner());
                continue;
            }
            q.busy = true;
            let batch = std::mem::take(&mut q.waiting);
            drop(q);
            let mut guard = BatchGuard {
                coalescer: self,
                finished: false,
            };
            let total: usize = batch.iter().map(|r| r.2).sum();
            let mut input = Vec::with_capacity(batch.iter().map(|r| r.1.len()).sum());
            for (_, x, _) in &batch {
                input.extend_from_slice(x);
            }
            let (policy, wdl) = forward(input, total);
            let mut split = HashMap::with_capacity(batch.len());
            let mut at = 0;
            for (t, _, k) in &batch {
                split.insert(
                    *t,
                    (
                        policy[at * POLICY_SIZE..(at + k) * POLICY_SIZE].to_vec(),
                        wdl[at * 3..(at + k) * 3].to_vec(),
                    ),
                );
                at += k;
            }
            q = lock();
            q.results.extend(split);
            guard.finished = true;
            drop(q);
            drop(guard);
            q = lock();
        }
    }
}

/// Panics if `config` does not fit this build's encoding (input planes or policy size), since
/// every evaluation would then misread the net's output.
fn assert_fits_encoding(config: &NetConfig) {
    assert_eq!(config.input_planes, INPUT_PLANES, "net input planes");
    assert_eq!(config.policy_size(), POLICY_SIZE, "net policy size");
}

impl CpuEvaluator {
    /// Folds `net` (whose shape is `config`) into the CPU forward pass on `path`. Errors: a
    /// path this CPU cannot run, or a net that does not have `config`'s shape.
    ///
    /// # Panics
    ///
    /// If `config` does not fit this build's encoding.
    pub fn new(net: Net, config: NetConfig, path: CpuPath) -> Result<Self, CpuNetError> {
        assert_fits_encoding(&config);
        let cpu = CpuNet::from_net_with_path(&net, &config, path)?;
        Ok(Self { net, config, cpu })
    }
}

impl BurnEvaluator {
    /// Wraps a net already on `device`.
    ///
    /// # Panics
    ///
    /// If `config` does not fit this build's encoding.
    pub fn new(net: Net, config: NetConfig, device: Device) -> Self {
        assert_fits_encoding(&config);
        let coalescer = (!is_cpu(&device)).then(Coalescer::default);
        Self {
            net,
            config,
            device,
            coalescer,
        }
    }

    /// burn's forward pass of `n` encoded positions on the device.
    fn forward(&self, input: Vec<f32>, n: usize) -> (Vec<f32>, Vec<f32>) {
        let x = Tensor::<4>::from_data(
            TensorData::new(input, [n, INPUT_PLANES, RANKS, FILES]),
            &self.device,
        );
        let (policy, wdl) = self.net.forward(x);
        // One read-back per batch, not one per output: on a GPU each read is a round trip
        // that waits for the device.
        let rows = Tensor::cat(vec![policy, wdl], 1)
            .into_data()
            .try_into_vec::<f32>()
            .expect("logits are f32");
        let width = POLICY_SIZE + 3;
        debug_assert_eq!(rows.len(), n * width);
        let mut policy = Vec::with_capacity(n * POLICY_SIZE);
        let mut wdl = Vec::with_capacity(n * 3);
        for row in rows.chunks_exact(width) {
            policy.extend_from_slice(&row[..POLICY_SIZE]);
            wdl.extend_from_slice(&row[POLICY_SIZE..]);
        }
        (policy, wdl)
    }
}

impl NetEvaluator {
    /// The factory: `net` (already on `device`) behind the CPU forward pass at `cpu_path` when
    /// `device` is a CPU device, behind burn's forward pass otherwise. A net the CPU path
    /// cannot take (never seen: it would need a weight of the wrong size) evaluates through
    /// burn; [`NetEvaluator::cpu_path`] then says `None`.
    ///
    /// # Panics
    ///
    /// If `config` does not fit this build's encoding (input planes or policy size).
    pub fn build(net: Net, config: NetConfig, device: Device, cpu_path: CpuPath) -> Self {
        if is_cpu(&device) {
            if let Ok(cpu) = CpuNet::from_net_with_path(&net, &config, cpu_path) {
                assert_fits_encoding(&config);
                return NetEvaluator::Cpu(Box::new(CpuEvaluator { net, config, cpu }));
            }
        }
        NetEvaluator::Burn(Box::new(BurnEvaluator::new(net, config, device)))
    }

    /// [`NetEvaluator::build`] on the fastest CPU path this CPU supports (what a process
    /// that was not told otherwise runs).
    pub fn new(net: Net, config: NetConfig, device: Device) -> Self {
        Self::build(net, config, device, CpuPath::best_supported())
    }

    /// Loads a checkpoint of any architecture onto `device` ([`NetEvaluator::new`]).
    pub fn from_checkpoint(
        path: impl AsRef<Path>,
        device: Device,
    ) -> Result<Self, CheckpointError> {
        Self::load(path, device, CpuPath::best_supported())
    }

    /// Loads a checkpoint of any architecture onto `device` ([`NetEvaluator::build`]).
    pub fn load(
        path: impl AsRef<Path>,
        device: Device,
        cpu_path: CpuPath,
    ) -> Result<Self, CheckpointError> {
        let ckpt = Checkpoint::read(path)?;
        let config = ckpt.meta.config;
        let net = ckpt.into_net_any(&device)?;
        Ok(Self::build(net, config, device, cpu_path))
    }

    /// Whether evaluations go through [`CpuNet`] rather than burn.
    pub fn uses_cpu_forward(&self) -> bool {
        matches!(self, NetEvaluator::Cpu(_))
    }

    /// The arithmetic of the [`CpuNet`] forward pass, if evaluations use it.
    pub fn cpu_path(&self) -> Option<CpuPath> {
        match self {
            NetEvaluator::Cpu(e) => Some(e.cpu.path()),
            NetEvaluator::Burn(_) => None,
        }
    }

    /// The wrapped net.
    pub fn net(&self) -> &Net {
        match self {
            NetEvaluator::Cpu(e) => &e.net,
            NetEvaluator::Burn(e) => &e.net,
        }
    }

    /// The net's architecture.
    pub fn config(&self) -> &NetConfig {
        match self {
            NetEvaluator::Cpu(e) => &e.config,
            NetEvaluator::Burn(e) => &e.config,
        }
    }

    /// The burn device of a [`NetEvaluator::Burn`]; `None` for the CPU forward pass.
    pub fn burn_device(&self) -> Option<&Device> {
        match self {
            NetEvaluator::Cpu(_) => None,
            NetEvaluator::Burn(e) => Some(&e.device),
        }
    }

    /// Raw network outputs for a batch: policy logits (`n * POLICY_SIZE`, row-major) and
    /// WDL logits (`n * 3`). Exposed so tests and tools can look past the legal-move mask.
    pub fn logits(&self, positions: &[&Position]) -> (Vec<f32>, Vec<f32>) {
        let n = positions.len();
        let input = encode_batch(positions);
        match self {
            NetEvaluator::Cpu(e) => e.cpu.forward(&input, n),
            NetEvaluator::Burn(e) => match &e.coalescer {
                Some(c) => c.run(input, n, |x, n| e.forward(x, n)),
                None => e.forward(input, n),
            },
        }
    }
}

impl Evaluator for NetEvaluator {
    fn evaluate(&self, positions: &[&Position]) -> Vec<Evaluation> {
        if positions.is_empty() {
            return Vec::new();
        }
        let (policy, wdl) = self.logits(positions);
        let evaluation = |(i, pos): (usize, &&Position)| {
            let row = &policy[i * POLICY_SIZE..(i + 1) * POLICY_SIZE];
            let moves = pos.legal_moves();
            let mut priors: Vec<(Move, f32)> =
                moves.iter().map(|&m| (m, row[index_of(pos, m)])).collect();
            softmax_in_place(priors.iter_mut().map(|(_, p)| p));
            let mut v = [wdl[3 * i], wdl[3 * i + 1], wdl[3 * i + 2]];
            softmax_in_place(v.iter_mut());
            Evaluation { priors, wdl: v }
        };
        // A GPU's batch of a thousand positions spends milliseconds here (move generation,
        // softmax) on the thread that feeds the device: spread it over the cores. A CPU
        // device's calls are already one per core.
        if !self.uses_cpu_forward() && positions.len() >= 256 {
            positions.par_iter().enumerate().map(evaluation).collect()
        } else {
            positions.iter().enumerate().map(evaluation).collect()
        }
    }
}

/// Numerically stable softmax over the referenced values.
fn softmax_in_place<'a>(values: impl Iterator<Item = &'a mut f32>) {
    let mut values: Vec<&mut f32> = values.collect();
    let max = values.iter().map(|v| **v).fold(f32::NEG_INFINITY, f32::max);
    let mut sum = 0.0;
    for v in values.iter_mut() {
        **v = (**v - max).exp();
        sum += **v;
    }
    for v in values.iter_mut() {
        **v /= sum;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Barrier;

    /// Each caller gets the outputs of its own positions, whatever batch they were computed
    /// in, and callers arriving together share forward passes.
    #[test]
    fn coalesced_calls_get_their_own_results_in_fewer_passes() {
        let coalescer = Coalescer::default();
        let calls = AtomicUsize::new(0);
        // A fake net: every output of a position is its one input value.
        let forward = |x: Vec<f32>, n: usize| {
            calls.fetch_add(1, Ordering::SeqCst);
            assert_eq!(x.len(), n);
            std::thread::sleep(std::time::Duration::from_millis(20));
            let policy: Vec<f32> = x.iter().flat_map(|&v| vec![v; POLICY_SIZE]).collect();
            let wdl: Vec<f32> = x.iter().flat_map(|&v| [v, -v, 2.0 * v]).collect();
            (policy, wdl)
        };
        let threads = 8;
        let rounds = 5;
        let barrier = Barrier::new(threads);
        std::thread::scope(|s| {
            for t in 0..threads {
                let (coalescer, forward, barrier) = (&coalescer, &forward, &barrier);
                s.spawn(move || {
                    for r in 0..rounds {
                        barrier.wait();
                        // Thread t asks for t % 3 + 1 positions valued (t, r, i).
                        let n = t % 3 + 1;
                        let x: Vec<f32> = (0..n).map(|i| (100 * t + 10 * r + i) as f32).collect();
                        let (policy, wdl) = coalescer.run(x.clone(), n, forward);
                        assert_eq!(policy.len(), n * POLICY_SIZE);
                        for (i, v) in x.iter().enumerate() {
                            assert!(policy[i * POLICY_SIZE..(i + 1) * POLICY_SIZE]
                                .iter()
                                .all(|p| p == v));
                            assert_eq!(wdl[i * 3..i * 3 + 3], [*v, -*v, 2.0 * *v]);
                        }
                    }
                });
            }
        });
        let passes = calls.load(Ordering::SeqCst);
        assert!(
            passes < threads * rounds / 2,
            "{passes} forward passes for {} calls",
            threads * rounds
        );
    }

    #[test]
    fn a_failed_batch_fails_its_other_callers_instead_of_hanging_them() {
        let coalescer = Coalescer::default();
        let barrier = Barrier::new(2);
        let results: Vec<bool> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..2)
                .map(|_| {
                    let (coalescer, barrier) = (&coalescer, &barrier);
                    s.spawn(move || {
                        barrier.wait();
                        coalescer.run(vec![0.0], 1, |_, _| {
                            std::thread::sleep(std::time::Duration::from_millis(50));
                            panic!("device lost")
                        })
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().is_err()).collect()
        });
        assert_eq!(results, [true, true]);
    }
}
