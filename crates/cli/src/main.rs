//! `yari`: the command-line front end of yari-zero. Each subcommand is a thin layer over the
//! library crates.

mod arena_cmd;
mod bench_nn;
mod engine;
mod export_cmd;
mod play_cmd;
mod run_cmd;
mod selfplay_cmd;
mod train_cmd;
mod uci_cmd;

use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use clap::{Parser, Subcommand};
use yari_rules::{Position, START_FEN};

#[derive(Parser)]
#[command(
    name = "yari",
    version,
    about = "Self-play reinforcement learning for Yari Shogi"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
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
    /// Play self-play games with a network and write them as record shards.
    Selfplay {
        /// Network checkpoint (default: uniform priors, no network).
        #[arg(long)]
        model: Option<PathBuf>,
        #[arg(long)]
        games: usize,
        /// Output directory for the shards (e.g. RUN_DIR/games/extra-1).
        #[arg(long)]
        out: PathBuf,
        /// Self-play config: a TOML file with the fields of a run config's [selfplay] table,
        /// or a whole run config (its [selfplay] table is used).
        #[arg(long)]
        config: Option<PathBuf>,
    },
    /// Train the network of a run directory on its self-play games.
    Train {
        #[arg(long)]
        run_dir: PathBuf,
        /// Training config: a TOML file with a run config's [train] fields, or a whole run
        /// config (its [train] table is used).
        #[arg(long)]
        config: Option<PathBuf>,
        /// Optimizer steps (default: the config's steps_per_generation).
        #[arg(long)]
        steps: Option<u64>,
    },
    /// Draw a run's metrics (losses, Elo per generation) to PNG files under RUN_DIR/plots.
    Plot { run_dir: PathBuf },
    /// Play a match between two players: random, alphabeta:N, mcts:SIMS, model:FILE:SIMS,
    /// model[c_puct=X,fpu=X,reuse=0|1,mate=N,gumbel=N,pst=X]:FILE:SIMS, uci:COMMAND,
    /// uci[nodes=N,movetime=MS]:COMMAND, fsf[nodes=N].
    Arena {
        #[arg(long)]
        a: String,
        #[arg(long)]
        b: String,
        #[arg(long, default_value_t = 100)]
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
        /// Random plies from the start position before the players take over.
        #[arg(long, default_value_t = 4)]
        opening_plies: usize,
        #[arg(long, default_value_t = 0x5eed)]
        seed: u64,
        /// Also print the result as one JSON object.
        #[arg(long)]
        json: bool,
    },
    /// One rating list (Bradley-Terry, random = 0) over every arena game of a run.
    Ratings {
        run_dir: PathBuf,
        #[arg(long)]
        json: bool,
    },
    /// Write a self-contained network file from a run (its best network by default).
    Export {
        #[arg(long)]
        run_dir: PathBuf,
        /// `best`, or a checkpoint path.
        #[arg(long, default_value = "best")]
        checkpoint: String,
        #[arg(long)]
        out: PathBuf,
        /// Ship the mean of the checkpoint's weights and those of the N-1 generations before
        /// it (stochastic weight averaging); 1 exports the checkpoint as it is.
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
        average: u32,
    },
    /// Count the leaf nodes of the legal move tree (the last line printed is the count).
    Perft {
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
    },
    /// Run as a UCI engine (Fairy-Stockfish's dialect, variant yarishogi) on stdin/stdout.
    Uci {
        /// Network file (default: the shipped data/models/default.yari; `uniform` for none).
        #[arg(long)]
        model: Option<PathBuf>,
    },
    /// Measure speed.
    Bench {
        #[command(subcommand)]
        what: BenchCommand,
    },
}

#[derive(Subcommand)]
enum BenchCommand {
    /// Self-play positions per second and the share of time spent outside the network, with the
    /// default run's network and self-play settings, or those of --config (an untrained
    /// network; YARI_BENCH_SECONDS sets the duration, RAYON_NUM_THREADS the threads).
    Selfplay {
        #[arg(long)]
        json: bool,
        /// A run config whose network and self-play settings to measure.
        #[arg(long)]
        config: Option<PathBuf>,
    },
    /// Training samples per second for the default run's network and batch size, or those of
    /// --config.
    Train {
        #[arg(long)]
        json: bool,
        /// A run config whose network and training settings to measure.
        #[arg(long)]
        config: Option<PathBuf>,
    },
    /// Network positions per second at batch 1, 64 and 256, against the matmul peak (the
    /// 6x64 reference net, or the network of --config).
    Nn {
        #[arg(long)]
        batch: Option<usize>,
        #[arg(long)]
        json: bool,
        /// A run config whose network to measure.
        #[arg(long)]
        config: Option<PathBuf>,
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

fn main() -> Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Command::Perft { depth, fen, divide } => perft(depth, fen.as_deref(), divide),
        Command::Legal { fen } => legal(fen.as_deref()),
        Command::Run { config, run_dir } => run_cmd::run(config.as_deref(), run_dir.as_deref()),
        Command::Selfplay {
            model,
            games,
            out,
            config,
        } => {
            let config = match config {
                Some(p) => run_cmd::section_from_file(&p, "selfplay")?,
                None => run_cmd::RunConfig::load(None)?.selfplay,
            };
            selfplay_cmd::run(model.as_deref(), games, &out, config)
        }
        Command::Train {
            run_dir,
            config,
            steps,
        } => {
            let config = match config {
                Some(p) => run_cmd::section_from_file(&p, "train")?,
                None => run_cmd::RunConfig::load(None)?.train,
            };
            train_cmd::run(&run_dir, config, steps)
        }
        Command::Plot { run_dir } => train_cmd::plot(&run_dir),
        Command::Arena {
            a,
            b,
            games,
            sprt,
            games_file,
            concurrency,
            ply_cap,
            opening_plies,
            seed,
            json,
        } => {
            let options = arena_cmd::ArenaOptions {
                games_file,
                concurrency,
                ply_cap: Some(ply_cap),
                opening_plies,
                seed,
                ..arena_cmd::ArenaOptions::default()
            };
            arena_cmd::run(&a, &b, games, sprt, json, &options)
        }
        Command::Ratings { run_dir, json } => arena_cmd::ratings(&run_dir, json),
        Command::Export {
            run_dir,
            checkpoint,
            out,
            average,
        } => export_cmd::run(&run_dir, &checkpoint, &out, average),
        Command::Bench { what } => match what {
            BenchCommand::Selfplay { json, config } => {
                // The network and self-play settings of the built-in default run by default.
                let config = run_cmd::RunConfig::load(config.as_deref())?;
                selfplay_cmd::bench(json, config.train.net, config.selfplay)
            }
            BenchCommand::Train { json, config } => {
                train_cmd::bench(json, run_cmd::RunConfig::load(config.as_deref())?.train)
            }
            BenchCommand::Perft { json, quick } => bench_perft(json, quick),
            BenchCommand::Nn {
                batch,
                json,
                config,
            } => {
                let net = match config {
                    Some(p) => run_cmd::RunConfig::load(Some(&p))?.train.net,
                    None => yari_model::NetConfig::default(),
                };
                bench_nn::run(net, batch, json)
            }
        },
        Command::Play {
            model,
            color,
            sims,
            movetime,
        } => {
            let (evaluator, _) = engine::load_evaluator(model.as_deref())?;
            let person = if color == "black" {
                yari_rules::Color::Black
            } else {
                yari_rules::Color::White
            };
            let budget = match movetime {
                Some(ms) => engine::Budget {
                    simulations: None,
                    movetime: Some(Duration::from_millis(ms)),
                },
                None => engine::Budget::simulations(sims.unwrap_or(engine::DEFAULT_SIMULATIONS)),
            };
            play_cmd::run(
                &engine::Engine::new(evaluator),
                person,
                budget,
                &mut std::io::stdin().lock(),
                &mut std::io::stdout(),
            )
        }
        Command::Uci { model } => {
            let (evaluator, name) = engine::load_evaluator(model.as_deref())?;
            uci_cmd::run(engine::Engine::new(evaluator), &name)
        }
    }
}

fn parse_pair(text: &str) -> std::result::Result<(f64, f64), String> {
    let (a, b) = text
        .split_once(',')
        .ok_or_else(|| format!("expected two numbers like 0,50, got {text:?}"))?;
    let parse = |x: &str| x.trim().parse::<f64>().map_err(|e| format!("{x:?}: {e}"));
    Ok((parse(a)?, parse(b)?))
}

fn parse_fen(fen: Option<&str>) -> Result<Position> {
    let fen = fen.unwrap_or(START_FEN);
    Position::from_fen(fen).with_context(|| format!("invalid FEN {fen:?}"))
}

fn perft(depth: u32, fen: Option<&str>, divide: bool) -> Result<()> {
    let pos = parse_fen(fen)?;
    let mut out = std::io::stdout().lock();
    let nodes = if divide && depth > 0 {
        let rows = pos.divide(depth);
        for (mv, n) in &rows {
            writeln!(out, "{mv}: {n}")?;
        }
        rows.iter().map(|(_, n)| n).sum()
    } else {
        pos.perft(depth)
    };
    writeln!(out, "{nodes}")?;
    Ok(())
}

fn legal_line(fen: &str) -> String {
    match Position::from_fen(fen) {
        Ok(pos) => {
            let mut moves: Vec<String> = pos.legal_moves().iter().map(|m| m.to_string()).collect();
            moves.sort();
            moves.join(" ")
        }
        Err(e) => format!("error: {e}"),
    }
}

fn legal(fen: Option<&str>) -> Result<()> {
    let mut out = std::io::stdout().lock();
    if let Some(fen) = fen {
        let line = legal_line(fen);
        writeln!(out, "{line}")?;
        if line.starts_with("error:") {
            bail!("invalid FEN {fen:?}");
        }
        return Ok(());
    }
    // One answer per input line, every line answered; the exit status then says whether
    // any of them was an error, so scripts need not parse the output to notice.
    let (mut lines, mut bad, mut first_bad) = (0usize, 0usize, 0usize);
    let mut input = std::io::stdin().lock();
    let mut buf = Vec::new();
    loop {
        buf.clear();
        if input
            .read_until(b'\n', &mut buf)
            .context("reading standard input")?
            == 0
        {
            break;
        }
        lines += 1;
        let answer = match std::str::from_utf8(&buf) {
            Ok(text) => legal_line(text.trim()),
            Err(e) => format!("error: line is not UTF-8 ({e})"),
        };
        if answer.starts_with("error:") {
            bad += 1;
            if first_bad == 0 {
                first_bad = lines;
            }
        }
        writeln!(out, "{answer}")?;
    }
    if bad > 0 {
        bail!("{bad} of {lines} input lines were not valid FENs (the first: line {first_bad})");
    }
    Ok(())
}

/// The oracle's `c_hands_both_all4_white`: both sides hold all four droppable kinds, so most
/// moves are drops (perft(3) = 2,165,546 by Fairy-Stockfish).
const FULL_HANDS_FEN: &str = "2nk1br/7/p1ppppp/7/7/7/P1PPPPP/7/2BK1NR[RBNPrbnp] w - - 0 1";

fn bench_perft(json: bool, quick: bool) -> Result<()> {
    let mut cases = vec![("start", START_FEN, 5u32)];
    if !quick {
        cases.push(("start", START_FEN, 6));
    }
    cases.push(("full_hands", FULL_HANDS_FEN, 4));
    let mut results = Vec::new();
    for (name, fen, depth) in cases {
        let pos = parse_fen(Some(fen))?;
        let t = Instant::now();
        let leaves = pos.perft(depth);
        let secs = t.elapsed().as_secs_f64();
        let rate = leaves as f64 / secs;
        if !json {
            println!(
                "{name:>10} depth {depth}: {leaves:>12} leaves in {secs:>7.3} s = {:>7.1} M leaves/s",
                rate / 1e6
            );
        }
        results.push((name, depth, leaves, secs, rate));
    }
    if json {
        // The headline figure is the start position at the deepest depth measured.
        let headline = results
            .iter()
            .filter(|r| r.0 == "start")
            .max_by_key(|r| r.1)
            .map(|r| r.4)
            .unwrap_or(0.0);
        let cases: Vec<serde_json::Value> = results
            .iter()
            .map(|(name, depth, leaves, secs, rate)| {
                serde_json::json!({"position": name, "depth": depth, "leaves": leaves,
                    "seconds": secs, "leaves_per_s": rate})
            })
            .collect();
        println!(
            "{}",
            serde_json::json!({"leaves_per_s": headline, "threads": 1, "cases": cases})
        );
    }
    Ok(())
}
