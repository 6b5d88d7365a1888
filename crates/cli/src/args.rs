//! The command line: every subcommand and its options.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "yari",
    version,
    about = "Self-play reinforcement learning for Yari Shogi"
)]
pub struct Cli {
    /// Compute device for networks: flex (CPU), wgpu (GPU through Vulkan/Metal/DX12; needs a
    /// build with `--features wgpu`), ndarray, cuda. Default: $YARI_DEVICE, else
    /// $BURN_DEVICE, else the CPU (flex), also in a GPU build.
    #[arg(long, global = true)]
    pub device: Option<String>,
    /// The graphics API of the wgpu device: vulkan, metal, dx12, gl or auto. Default:
    /// $WGPU_BACKEND, else Vulkan on Linux (never a silent fall-back to software OpenGL).
    #[arg(long, global = true)]
    pub graphics_api: Option<String>,
    /// The arithmetic of the CPU forward pass: f32, bf16 or auto (bf16 where the CPU has
    /// AVX-512 BF16). Default: $YARI_CPU_PATH, else auto.
    #[arg(long, global = true)]
    pub cpu_path: Option<String>,
    /// How training computes its gradients: cpu (the hand-written step; CPU devices only),
    /// burn (burn's autodiff) or auto (cpu on a CPU device). Default: $YARI_TRAIN_PATH, else
    /// auto.
    #[arg(long, global = true)]
    pub train_path: Option<String>,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand)]
pub enum Command {
    /// The whole training loop (self-play, train, gate, rate) until the budget is spent.
    /// With no arguments: the built-in default config into data/runs/default; running the
    /// same command on an existing run directory resumes it.
    Run {
        /// Run config (TOML); default: the built-in configs/default.toml.
        #[arg(long)]
        config: Option<PathBuf>,
        /// Run directory; default: data/runs/<run.name from the config>.
        #[arg(long)]
        run_dir: Option<PathBuf>,
    },
    /// Many machines, self-play side: play games with the run's current best network into
    /// RUN_DIR/incoming until the learner finishes the run or a SIGTERM arrives (the finished
    /// games are then written, those in flight dropped).
    Worker {
        /// Run directory, shared with the learner (created by `yari learn --init`).
        #[arg(long)]
        run_dir: PathBuf,
        /// A readable name that starts this worker's shard names (e.g. the Slurm array task).
        #[arg(long, default_value = "worker")]
        tag: String,
        /// Games per batch; the best network is reloaded between batches (default: the run's
        /// games_per_generation).
        #[arg(long)]
        batch_games: Option<usize>,
        /// Stop after this many batches (0: no limit).
        #[arg(long, default_value_t = 0)]
        max_batches: u64,
    },
    /// Many machines, learner side: the train, gate and rate loop of `yari run` on the games
    /// workers write into RUN_DIR/incoming; publishes each new best network in the run.
    Learn {
        /// Run directory, shared with the workers.
        #[arg(long)]
        run_dir: PathBuf,
        /// Run config, used when the run directory is created (default: the built-in one).
        #[arg(long)]
        config: Option<PathBuf>,
        /// Only create the run directory (config and generation 0), then exit; an existing
        /// run is left alone.
        #[arg(long)]
        init: bool,
    },
    /// Verify a run directory: every shard's checksum, every checkpoint, state.json against
    /// the files it names, the JSON-lines logs, stray temporary files. Exits non-zero on damage.
    Check { run_dir: PathBuf },
    /// Play self-play games with a network and write them as record shards.
    Selfplay {
        /// Network checkpoint (default: uniform priors, no network).
        #[arg(long)]
        model: Option<PathBuf>,
        /// Games to play.
        #[arg(long)]
        games: usize,
        /// Output directory for the shards (e.g. RUN_DIR/games/extra-1).
        #[arg(long)]
        out: PathBuf,
        /// Self-play config: a TOML file with the fields of a run config's `[selfplay]` table,
        /// or a whole run config (its `[selfplay]` table is used).
        #[arg(long)]
        config: Option<PathBuf>,
    },
    /// Train the network of a run directory on its self-play games.
    Train {
        /// The run directory whose games to train on and whose trainer to resume.
        #[arg(long)]
        run_dir: PathBuf,
        /// Training config: a TOML file with a run config's `[train]` fields, or a whole run
        /// config (its `[train]` table is used). Default: RUN_DIR/config.toml if the run has
        /// one, else the built-in default.
        #[arg(long)]
        config: Option<PathBuf>,
        /// Optimizer steps (default: the config's steps_per_generation).
        #[arg(long)]
        steps: Option<u64>,
        /// How far the run is, 0 to 1: the lr of the `run_cosine` schedule (`yari run`
        /// passes its own progress; the step-based schedules ignore it).
        #[arg(long, default_value_t = 0.0)]
        run_progress: f64,
    },
    /// Draw a run's metrics (losses, Elo per generation) to PNG files under RUN_DIR/plots.
    Plot { run_dir: PathBuf },
    /// Play a match between two players: random, alphabeta:N, mcts:SIMS, model:FILE:SIMS,
    /// model[c_puct=X,fpu=X,reuse=0|1,mate=N,gumbel=N,pst=X]:FILE:SIMS, uci:COMMAND,
    /// uci[nodes=N,movetime=MS]:COMMAND, fsf[nodes=N].
    Arena {
        /// The first player (results are from its side), as a player spec: e.g.
        /// `model:data/models/default.yari:400`, `fsf[nodes=1000]`, `uci[movetime=200]:yari uci`.
        #[arg(long)]
        a: String,
        /// The second player, as a player spec.
        #[arg(long)]
        b: String,
        /// Games to play, 1 to 1,000,000 (both colours of each opening; fewer when the SPRT
        /// decides).
        #[arg(long, default_value_t = 100, value_parser = parse_match_games)]
        games: usize,
        /// Stop early by SPRT with these Elo bounds, e.g. 0,50.
        #[arg(long, value_parser = parse_pair)]
        sprt: Option<(f64, f64)>,
        /// Append every game to this JSON-lines file.
        #[arg(long)]
        games_file: Option<PathBuf>,
        /// Games in flight at once (0: one per CPU).
        #[arg(long, default_value_t = 0)]
        concurrency: usize,
        /// Plies after which a game is a draw by adjudication.
        #[arg(long, default_value_t = yari_rules::DEFAULT_PLY_CAP)]
        ply_cap: usize,
        /// A game clock, BASE+INC in seconds (e.g. 10+0.1): UCI players get wtime/btime and
        /// a player that oversteps its clock loses on time.
        #[arg(long, value_parser = yari_arena::TimeControl::parse)]
        tc: Option<yari_arena::TimeControl>,
        /// Random plies from the start position before the players take over.
        #[arg(long, default_value_t = 4)]
        opening_plies: usize,
        /// Seed of the random openings and of every game.
        #[arg(long, default_value_t = 0x5eed)]
        seed: u64,
        /// Also print the result as one JSON object.
        #[arg(long)]
        json: bool,
    },
    /// One rating list (Bradley-Terry, random = 0) over every arena game of a run.
    Ratings {
        run_dir: PathBuf,
        /// Print the list as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Write a self-contained network file from a run (its best network by default).
    Export {
        /// The run directory to export from.
        #[arg(long)]
        run_dir: PathBuf,
        /// `best`, or a checkpoint path.
        #[arg(long, default_value = "best")]
        checkpoint: String,
        /// The network file to write (e.g. my-net.yari).
        #[arg(long)]
        out: PathBuf,
        /// Ship the mean of the checkpoint's weights and those of the N-1 generations before
        /// it (stochastic weight averaging); 1 exports the checkpoint as it is.
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
        average: u32,
        /// `yari`: the project's own file; `onnx`: an ONNX model for other tools (batch norm
        /// folded; inputs and outputs in docs/network.md).
        #[arg(long, value_enum, default_value = "yari")]
        format: crate::export_cmd::ExportFormat,
    },
    /// Count the leaf nodes of the legal move tree (the last line printed is the count).
    Perft {
        /// Plies to count, 0 to 20 (depth 6 already takes minutes).
        #[arg(value_parser = clap::value_parser!(u32).range(0..=20))]
        depth: u32,
        /// Position to start from (default: the start position).
        #[arg(long)]
        fen: Option<String>,
        /// Also print the count below each legal move.
        #[arg(long)]
        divide: bool,
    },
    /// Print the sorted legal moves of a position on one line; with no --fen, one line per FEN
    /// read from standard input.
    Legal {
        /// The position, as a Fairy-Stockfish FEN.
        #[arg(long)]
        fen: Option<String>,
    },
    /// Play a game against the network in the terminal.
    Play {
        /// Network file (default: the shipped data/models/default.yari; `uniform` for none).
        #[arg(long)]
        model: Option<PathBuf>,
        /// Your colour.
        #[arg(long, default_value = "white", value_parser = ["white", "black"])]
        color: String,
        /// Simulations per engine move (default 1600).
        #[arg(long, conflicts_with = "movetime")]
        sims: Option<u32>,
        /// Thinking time per engine move, in milliseconds.
        #[arg(long)]
        movetime: Option<u64>,
        #[command(flatten)]
        search: EngineArgs,
    },
    /// Run as a UCI engine (Fairy-Stockfish's dialect, variant yarishogi) on stdin/stdout.
    Uci {
        /// Network file (default: the shipped data/models/default.yari; `uniform` for none).
        #[arg(long)]
        model: Option<PathBuf>,
        #[command(flatten)]
        search: EngineArgs,
    },
    /// A local web server: play the network on a board in the browser, watch a run (with
    /// --run-dir) and replay its games. Prints the address to open.
    Serve {
        /// Network file (default: the shipped data/models/default.yari; `uniform` for none).
        #[arg(long)]
        model: Option<PathBuf>,
        /// A run directory whose progress, checkpoints (playable) and games the pages show.
        #[arg(long)]
        run_dir: Option<PathBuf>,
        /// Port to listen on (0: any free port).
        #[arg(long, default_value_t = 8080)]
        port: u16,
        /// Address to listen on. Anything but a loopback address exposes the server (and its
        /// engine and run directory) to the network, so it takes --host twice to confirm:
        /// `--host 0.0.0.0 --host 0.0.0.0`.
        #[arg(long, default_value = "127.0.0.1", action = clap::ArgAction::Append)]
        host: Vec<std::net::IpAddr>,
        /// Server threads (each search holds one while it thinks).
        #[arg(long, default_value_t = 4)]
        workers: usize,
    },
    /// The games of a run: a line each (id, players, result, reason, plies), or PGN.
    Games {
        run_dir: PathBuf,
        /// Write every game (or the one --id names) as PGN (variant yarishogi).
        #[arg(long)]
        pgn: bool,
        /// Only this game (an id from the list).
        #[arg(long)]
        id: Option<String>,
    },
    /// Measure speed.
    Bench {
        #[command(subcommand)]
        what: BenchCommand,
    },
}

#[derive(Subcommand)]
pub enum BenchCommand {
    /// Self-play positions per second and the share of time spent outside the network, with the
    /// default run's network and self-play settings, or those of --config (an untrained
    /// network; YARI_BENCH_SECONDS sets the duration, RAYON_NUM_THREADS the threads).
    Selfplay {
        /// Print the figures as one JSON object.
        #[arg(long)]
        json: bool,
        /// A run config whose network and self-play settings to measure.
        #[arg(long)]
        config: Option<PathBuf>,
    },
    /// Training samples per second for the default run's network and batch size, or those of
    /// --config.
    Train {
        /// Print the figures as one JSON object.
        #[arg(long)]
        json: bool,
        /// A run config whose network and training settings to measure.
        #[arg(long)]
        config: Option<PathBuf>,
    },
    /// Network positions per second at batch 1, 64 and 256, against the matmul peak (the
    /// `NetConfig::default` net, or the network of --config or --net).
    Nn {
        /// Batch sizes to measure, comma-separated (default: 1,64,256).
        #[arg(long, value_delimiter = ',')]
        batch: Vec<usize>,
        /// Print the figures as one JSON object.
        #[arg(long)]
        json: bool,
        /// A run config whose network to measure.
        #[arg(long, conflicts_with = "net")]
        config: Option<PathBuf>,
        /// The network to measure as BLOCKSxCHANNELS (e.g. 10x128), instead of --config's.
        #[arg(long)]
        net: Option<String>,
        /// Only the device's forward pass and matmul peak: no one-thread CPU comparison,
        /// which for a large net at a large batch takes minutes.
        #[arg(long)]
        device_only: bool,
    },
    /// The engine's nodes per second by threads and batch, next to the network's own
    /// positions per second at the same batch and threads (the shipped network, or --model).
    Search {
        /// Network file (default: the shipped data/models/default.yari).
        #[arg(long)]
        model: Option<PathBuf>,
        /// Thread counts to measure, comma-separated (default: 1 and every core).
        #[arg(long, value_delimiter = ',')]
        threads: Vec<usize>,
        /// Leaves per thread and network call, comma-separated.
        #[arg(long, value_delimiter = ',', default_value = "1,4,8,16")]
        batch: Vec<usize>,
        /// Batches in flight per thread, comma-separated (measured with 2 or more threads).
        #[arg(long, value_delimiter = ',', default_value = "1,2")]
        in_flight: Vec<usize>,
        /// Simulations per position.
        #[arg(long, default_value_t = 4000)]
        nodes: u32,
        /// Print the figures as one JSON object.
        #[arg(long)]
        json: bool,
    },
    /// Perft leaves per second: start position depths 5 and 6, and a middle game with full hands.
    Perft {
        /// Print one JSON object instead of a table.
        #[arg(long)]
        json: bool,
        /// Skip depth 6 (about 64 million leaves) for a quick run.
        #[arg(long)]
        quick: bool,
    },
}

/// Games of a match: 1 to 1,000,000 (a larger count is a typo, and its bookkeeping would be
/// allocated up front).
pub fn parse_match_games(text: &str) -> std::result::Result<usize, String> {
    match text.trim().parse::<u64>() {
        Ok(n) if (1..=1_000_000).contains(&n) => Ok(n as usize),
        _ => Err(format!("{text:?}: a number of games from 1 to 1000000")),
    }
}

/// SPRT bounds `elo0,elo1`: finite, within ±2000, and `elo0 < elo1` (bounds the other way
/// round, or NaN, would make a test that can never decide, or decide anything).
pub fn parse_pair(text: &str) -> std::result::Result<(f64, f64), String> {
    let (a, b) = text
        .split_once(',')
        .ok_or_else(|| format!("expected two numbers like 0,50, got {text:?}"))?;
    let parse = |x: &str| {
        let v = x.trim().parse::<f64>().map_err(|e| format!("{x:?}: {e}"))?;
        if v.is_finite() && v.abs() <= 2000.0 {
            Ok(v)
        } else {
            Err(format!("{x:?}: an Elo bound in [-2000, 2000]"))
        }
    };
    let (elo0, elo1) = (parse(a)?, parse(b)?);
    if elo0 >= elo1 {
        return Err(format!(
            "{text:?}: the first bound (H0's Elo) must be below the second (H1's)"
        ));
    }
    Ok((elo0, elo1))
}

/// How the engine uses the machine (`yari play`, `yari uci`, `yari bench search`); UCI's
/// `Threads` and `Batch` options change the same settings during a session.
#[derive(clap::Args, Clone, Debug)]
pub struct EngineArgs {
    /// Search threads (default: every core).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=512))]
    pub threads: Option<u32>,
    /// Positions per network call and thread.
    #[arg(long, default_value_t = yari_search::engine::DEFAULT_BATCH_PER_THREAD as u32,
          value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub batch: u32,
}

impl EngineArgs {
    pub fn options(&self) -> yari_search::EngineOptions {
        let mut options = yari_search::EngineOptions::all_cores();
        if let Some(t) = self.threads {
            options.threads = t as usize;
        }
        options.batch_per_thread = self.batch as usize;
        options
    }
}
