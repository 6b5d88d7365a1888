//! `yari arena` and `yari ratings`: matches between any two players, and a run's rating list.
//!
//! Player specs (see `yari_arena::spec`): `random`, `alphabeta:N`, `mcts:SIMS`,
//! `model:FILE:SIMS`, `model[c_puct=X,fpu=X,reuse=0|1,mate=N,gumbel=N,pst=X]:FILE:SIMS`, `uci:COMMAND`,
//! `uci[nodes=N,movetime=MS,timeout=S,name=X,Opt=V]:COMMAND`,
//! and `fsf[...]` for Fairy-Stockfish's npm build under `.fsf/` (or `$YARI_FSF_JS`).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use anyhow::Context;
use yari_arena::{
    fit_ratings, read_run_games, run_match, GameConfig, MatchConfig, MatchResult, PlayerSpec,
    SprtConfig, SprtModel, TimeControl,
};

/// Everything about `yari arena` besides the two players, the game count, the SPRT bounds
/// and `--json`.
#[derive(Debug, Clone)]
pub struct ArenaOptions {
    /// Append every game to this JSON-lines file (e.g. `RUN_DIR/arena/NAME.jsonl`, where
    /// `yari ratings RUN_DIR` finds it).
    pub games_file: Option<PathBuf>,
    /// Games in flight at once (0: one per CPU).
    pub concurrency: usize,
    /// Plies after which a game is adjudicated a draw (`None`: no cap).
    pub ply_cap: Option<usize>,
    /// A game clock the arena keeps (UCI players get `go wtime .. btime ..`; others play as
    /// configured and lose if they overstep it).
    pub clock: Option<TimeControl>,
    /// Random plies from the start position before the players take over.
    pub opening_plies: usize,
    pub seed: u64,
    /// SPRT error rates.
    pub alpha: f64,
    pub beta: f64,
    /// Show a progress bar (on a terminal).
    pub progress: bool,
}

impl Default for ArenaOptions {
    fn default() -> Self {
        ArenaOptions {
            games_file: None,
            concurrency: 0,
            ply_cap: Some(yari_rules::DEFAULT_PLY_CAP),
            clock: None,
            opening_plies: 4,
            seed: 0x5eed,
            alpha: 0.05,
            beta: 0.05,
            progress: true,
        }
    }
}

/// Plays `games` games between the players `a` and `b` (specs), stopping early when the
/// SPRT `(elo0, elo1)` decides; prints a table, and with `json` also one JSON object whose
/// `wins`, `draws`, `losses`, `score`, `elo`, `elo_low`, `elo_high` are from A's side
/// (Elo values are `null` when infinite, i.e. after a 100% or 0% score).
pub fn run(
    a: &str,
    b: &str,
    games: usize,
    sprt: Option<(f64, f64)>,
    json: bool,
    options: &ArenaOptions,
) -> anyhow::Result<()> {
    let pa = PlayerSpec::parse(a).with_context(|| format!("player A {a:?}"))?;
    let pb = PlayerSpec::parse(b).with_context(|| format!("player B {b:?}"))?;
    let config = MatchConfig {
        games,
        game: GameConfig {
            ply_cap: options.ply_cap,
            clock: options.clock,
        },
        openings: Vec::new(),
        opening_plies: options.opening_plies,
        concurrency: options.concurrency,
        sprt: sprt.map(|(elo0, elo1)| SprtConfig {
            elo0,
            elo1,
            alpha: options.alpha,
            beta: options.beta,
            model: SprtModel::Pentanomial,
        }),
        progress: options.progress,
        games_file: options.games_file.clone(),
        seed: options.seed,
        game_lines: true,
        interrupt: Some(interrupt_on_signal()),
    };
    // Factories load checkpoints once, before any game starts.
    let fa = pa.factory()?;
    let fb = pb.factory()?;
    let result = run_match(fa.as_ref(), fb.as_ref(), &config).context("arena match")?;
    print!("{}", table(&result, options.games_file.as_deref()));
    if json {
        println!("{}", serde_json::to_string(&summary(&result))?);
    }
    if result.interrupted {
        // The score so far is printed (and every finished game is in the games file).
        std::process::exit(INTERRUPTED);
    }
    Ok(())
}

/// Exit status of a match ended by a signal (128 + SIGINT, as shells report it).
const INTERRUPTED: i32 = 130;

/// The first SIGINT or SIGTERM stops the match: no new game starts, the games in flight end
/// at their next move unscored, and the table of the finished games is printed. A second one
/// ends the process at once (every finished game is already in the games file).
fn interrupt_on_signal() -> Arc<AtomicBool> {
    let flag = Arc::new(AtomicBool::new(false));
    let raised = flag.clone();
    let _ = ctrlc::set_handler(move || {
        if raised.swap(true, Ordering::SeqCst) {
            std::process::exit(INTERRUPTED);
        }
        eprintln!("\ninterrupted: finishing with the games played so far");
    });
    flag
}

/// The match as plain text.
pub fn table(r: &MatchResult, games_file: Option<&Path>) -> String {
    let e = r.wdl.elo();
    let mut out = format!(
        "{} vs {}: {} games{}\n",
        r.a,
        r.b,
        r.wdl.games(),
        if r.stopped_early {
            format!(" (of {} planned; stopped by SPRT)", r.games_planned)
        } else if r.interrupted {
            format!(" (of {} planned; interrupted)", r.games_planned)
        } else {
            String::new()
        }
    );
    out.push_str(&format!(
        "  {:<24} {:>6} {:>6} {:>6} {:>7}\n",
        "player", "wins", "draws", "losses", "score"
    ));
    for (name, wdl) in [(&r.a, r.wdl), (&r.b, r.wdl.flipped())] {
        out.push_str(&format!(
            "  {:<24} {:>6} {:>6} {:>6} {:>6.1}%\n",
            name,
            wdl.wins,
            wdl.draws,
            wdl.losses,
            100.0 * wdl.score()
        ));
    }
    out.push_str(&format!(
        "  Elo ({} vs {}): {:+.1} [{:+.1}, {:+.1}] (95%), LOS {:.1}%\n",
        r.a,
        r.b,
        e.elo,
        e.low,
        e.high,
        100.0 * r.wdl.los()
    ));
    out.push_str(&format!(
        "  pairs [LL, LD, LW+DD, DW, WW]: {:?}\n",
        r.pairs.counts
    ));
    if let Some(s) = &r.sprt {
        out.push_str(&format!(
            "  SPRT: LLR {:.3} in [{:.3}, {:.3}]: {:?}\n",
            s.llr, s.lower, s.upper, s.decision
        ));
    }
    let mut reasons: Vec<_> = r.reasons.iter().collect();
    reasons.sort_by_key(|(reason, _)| reason.as_str());
    let reasons: Vec<String> = reasons
        .iter()
        .map(|(reason, n)| format!("{} {n}", reason.as_str()))
        .collect();
    out.push_str(&format!("  endings: {}\n", reasons.join(", ")));
    for (name, t) in [&r.a, &r.b].into_iter().zip(r.move_times()) {
        out.push_str(&format!(
            "  {name}: {:.1} ms a move on average, longest {:.1} ms ({} moves, timed by the arena)\n",
            t.mean_ms, t.max_ms, t.moves
        ));
    }
    if let Some(path) = games_file {
        out.push_str(&format!("  games appended to {}\n", path.display()));
    }
    out
}

/// The JSON summary printed by `--json`.
pub fn summary(r: &MatchResult) -> serde_json::Value {
    let e = r.wdl.elo();
    let reasons: serde_json::Map<String, serde_json::Value> = r
        .reasons
        .iter()
        .map(|(k, v)| (k.as_str().to_string(), (*v).into()))
        .collect();
    serde_json::json!({
        "a": r.a,
        "b": r.b,
        "games": r.wdl.games(),
        "wins": r.wdl.wins,
        "draws": r.wdl.draws,
        "losses": r.wdl.losses,
        "score": r.wdl.score(),
        "elo": e.elo,
        "elo_low": e.low,
        "elo_high": e.high,
        "los": r.wdl.los(),
        "pairs": r.pairs.counts,
        "sprt": r.sprt,
        "stopped_early": r.stopped_early,
        "interrupted": r.interrupted,
        "reasons": reasons,
        "move_times": r.move_times(),
    })
}

/// Prints the rating list of every game under `RUN_DIR/arena/*.jsonl`, anchored at
/// `random` = 0 (see `yari_arena::ratings` for the model and the layout).
pub fn ratings(run_dir: &Path, json: bool) -> anyhow::Result<()> {
    let (games, skipped) = read_run_games(run_dir)
        .with_context(|| format!("reading games of run {}", run_dir.display()))?;
    if games.is_empty() {
        anyhow::bail!(
            "no games under {}",
            yari_arena::games_dir(run_dir).display()
        );
    }
    let list = fit_ratings(&games, "random");
    if json {
        println!("{}", serde_json::to_string(&list)?);
    } else {
        print!("{}", list.to_table());
        if skipped > 0 {
            println!("({skipped} unreadable lines skipped)");
        }
    }
    Ok(())
}
