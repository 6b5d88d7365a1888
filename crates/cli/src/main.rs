//! `yari`: the command-line front end of yari-zero. Each subcommand is a thin layer over the
//! library crates; the generation loop and the run directory are yari-loop's.

mod arena_cmd;
mod args;
mod backend_args;
mod bench_nn;
mod bench_search;
mod engine;
mod export_cmd;
mod learn_cmd;
mod play_cmd;
mod rules_cmd;
mod run_cmd;
mod selfplay_cmd;
mod serve_cmd;
mod train_cmd;
mod uci_cmd;
mod worker_cmd;

use std::time::Duration;

use anyhow::Result;
use clap::Parser;

use args::{BenchCommand, Cli, Command};

fn main() -> Result<()> {
    keep_freed_memory();
    end_quietly_on_a_closed_pipe();
    match run_cli() {
        Err(e) if is_closed_pipe(&e) => std::process::exit(CLOSED_PIPE),
        other => other,
    }
}

/// Exit status of a process whose standard output was closed by its reader (128 + SIGPIPE, as
/// a shell reports a tool killed by it).
const CLOSED_PIPE: i32 = 128 + 13;

/// Whether `e` is a write to standard output after its reader went away.
fn is_closed_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

fn run_cli() -> Result<()> {
    let cli = Cli::parse();
    yari_arena::set_fsf_js(backend_args::fsf_js());
    // Opened before any work, so a missing GPU driver is a clear error, not a panic mid-run;
    // the commands that need no network get the CPU's defaults without opening anything.
    let backend = if matches!(
        cli.command,
        Command::Perft { .. } | Command::Legal { .. } | Command::Games { .. }
    ) {
        yari_model::Backend::cpu()
    } else {
        let backend = backend_args::open(&cli)?.install()?;
        if matches!(
            cli.command,
            Command::Worker { .. }
                | Command::Selfplay { .. }
                | Command::Train { .. }
                | Command::Bench { .. }
        ) {
            let r = backend.record();
            eprintln!(
                "backends: {}, inference {}, training {}",
                r.device, r.inference, r.training
            );
        }
        backend
    };
    let backend = &backend;
    match cli.command {
        Command::Perft { depth, fen, divide } => rules_cmd::perft(depth, fen.as_deref(), divide),
        Command::Legal { fen } => rules_cmd::legal(fen.as_deref()),
        Command::Run { config, run_dir } => {
            run_cmd::run(backend, config.as_deref(), run_dir.as_deref())
        }
        Command::Check { run_dir } => run_cmd::check(&run_dir),
        Command::Worker {
            run_dir,
            tag,
            batch_games,
            max_batches,
        } => worker_cmd::run(backend, &run_dir, tag, batch_games, max_batches),
        Command::Learn {
            run_dir,
            config,
            init,
        } => learn_cmd::run(backend, &run_dir, config.as_deref(), init),
        Command::Selfplay {
            model,
            games,
            out,
            config,
        } => {
            let config = match config {
                Some(p) => yari_loop::section_from_file(&p, "selfplay")?,
                None => yari_loop::RunConfig::load(None)?.selfplay,
            };
            selfplay_cmd::run(backend, model.as_deref(), games, &out, config)
        }
        Command::Train {
            run_dir,
            config,
            steps,
            run_progress,
        } => {
            // Without --config, the run's own config (the one its checkpoints were made
            // with), and the built-in default only where there is no run yet.
            let own = yari_loop::RunDir::new(&run_dir).paths().config_file();
            let config = match config {
                Some(p) => yari_loop::section_from_file(&p, "train")?,
                None if own.is_file() => yari_loop::RunConfig::load(Some(&own))?.train,
                None => yari_loop::RunConfig::load(None)?.train,
            };
            train_cmd::run(backend, &run_dir, config, steps, run_progress)
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
            tc,
            opening_plies,
            seed,
            json,
        } => {
            let options = arena_cmd::ArenaOptions {
                games_file,
                concurrency,
                ply_cap: Some(ply_cap),
                clock: tc,
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
            format,
        } => export_cmd::run(backend, &run_dir, &checkpoint, &out, average, format),
        Command::Bench { what } => match what {
            BenchCommand::Selfplay { json, config } => {
                // The network and self-play settings of the built-in default run by default.
                let config = yari_loop::RunConfig::load(config.as_deref())?;
                selfplay_cmd::bench(
                    backend,
                    json,
                    config.train.net,
                    config.selfplay,
                    backend_args::bench_seconds()?,
                )
            }
            BenchCommand::Train { json, config } => train_cmd::bench(
                backend,
                json,
                yari_loop::RunConfig::load(config.as_deref())?.train,
            ),
            BenchCommand::Perft { json, quick } => rules_cmd::bench_perft(json, quick),
            BenchCommand::Search {
                model,
                threads,
                batch,
                in_flight,
                nodes,
                json,
            } => {
                let (evaluator, _) = engine::load_evaluator(backend, model.as_deref())?;
                let threads = match threads.is_empty() {
                    true => {
                        let all = yari_search::EngineOptions::all_cores().threads;
                        if all > 1 {
                            vec![1, all]
                        } else {
                            vec![1]
                        }
                    }
                    false => threads,
                };
                bench_search::run(evaluator, threads, batch, in_flight, nodes, json)
            }
            BenchCommand::Nn {
                batch,
                json,
                config,
                net,
                device_only,
            } => {
                let net = match (config, net) {
                    (Some(p), _) => yari_loop::RunConfig::load(Some(&p))?.train.net,
                    (None, Some(shape)) => bench_nn::parse_net(&shape)?,
                    (None, None) => yari_model::NetConfig::default(),
                };
                if device_only {
                    bench_nn::run_device_only(backend, net, batch, json)
                } else {
                    bench_nn::run(backend, net, batch, json)
                }
            }
        },
        Command::Play {
            model,
            color,
            sims,
            movetime,
            search,
        } => {
            let (evaluator, _) = engine::load_evaluator(backend, model.as_deref())?;
            let person = if color == "black" {
                yari_rules::Color::Black
            } else {
                yari_rules::Color::White
            };
            let budget = match movetime {
                Some(ms) => engine::Budget::movetime(Duration::from_millis(ms)),
                None => engine::Budget::simulations(sims.unwrap_or(engine::DEFAULT_SIMULATIONS)),
            };
            play_cmd::run(
                &engine::engine(evaluator, search.options())?,
                person,
                budget,
                &mut std::io::stdin().lock(),
                &mut std::io::stdout(),
            )
        }
        Command::Serve {
            model,
            run_dir,
            port,
            host,
            workers,
        } => serve_cmd::serve(backend, model.as_deref(), run_dir, port, &host, workers),
        Command::Games { run_dir, pgn, id } => serve_cmd::games(&run_dir, pgn, id.as_deref()),
        Command::Uci { model, search } => {
            let (evaluator, name) = engine::load_evaluator(backend, model.as_deref())?;
            uci_cmd::run(evaluator, search.options(), &name)
        }
    }
}

/// Keeps memory that the process frees for its next allocation instead of handing it back to
/// the kernel. The training step allocates and frees its activation and im2col buffers (1 to
/// 18 MB each) every step; with glibc's defaults each such buffer is a fresh `mmap` (or a
/// trimmed heap top) and every page of it faults in again, zeroed by the kernel (the
/// measurement: docs/experiments.md, "Inference arithmetic").
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn keep_freed_memory() {
    // glibc's upper limit for the mmap threshold on 64-bit targets (HEAP_MAX_SIZE / 2).
    const MMAP_THRESHOLD: libc::c_int = 32 << 20;
    // SAFETY: mallopt only sets two of glibc's allocator parameters; it is called first thing
    // in main, before any other thread exists, and either value it may refuse leaves glibc's
    // default in place (a slower process, not an unsound one).
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD);
        libc::mallopt(libc::M_TRIM_THRESHOLD, libc::c_int::MAX);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn keep_freed_memory() {}

/// `yari check RUN | head -2`: when the reader of standard output goes away, the process ends
/// quietly with the status a shell reports for SIGPIPE (141), as Unix tools do, instead of the
/// panic `println!` raises on a closed pipe. SIGPIPE itself stays ignored (Rust's default):
/// the arena writes to engines that may die, and a dead engine must be an error, not the end
/// of the match. Files are written atomically, so ending here loses nothing already written.
fn end_quietly_on_a_closed_pipe() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let message = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or("");
        if message.starts_with("failed printing to stdout") && message.contains("Broken pipe") {
            std::process::exit(CLOSED_PIPE);
        }
        default(info);
    }));
}
