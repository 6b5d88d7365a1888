//! `yari worker`: a self-play worker of a many-machine run (see `yari_loop::roles`).

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::Result;

static STOP: AtomicBool = AtomicBool::new(false);

pub fn run(
    backend: &yari_model::Backend,
    dir: &Path,
    tag: String,
    batch_games: Option<usize>,
    max_batches: u64,
) -> Result<()> {
    // The first SIGTERM / SIGINT (Slurm's scancel and time limit send SIGTERM) lets the games
    // already finished be written; a second one ends the process at once.
    let _ = ctrlc::set_handler(|| {
        if STOP.swap(true, Ordering::SeqCst) {
            eprintln!("second signal: exiting now");
            std::process::exit(130);
        }
        eprintln!("signal: writing the finished games, dropping those in flight");
    });
    let options = yari_loop::WorkerOptions {
        tag,
        batch_games,
        poll: Duration::from_secs(1),
        max_batches,
        progress: false,
    };
    let run = yari_loop::RunDir::new(dir);
    yari_loop::roles::run_worker(&run, &options, backend, &STOP, yari_loop::stderr_log)?;
    Ok(())
}
