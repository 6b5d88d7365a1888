//! `yari learn`: the learner of a many-machine run (see `yari_loop::roles`).

use std::path::Path;
use std::time::Duration;

use anyhow::Result;

pub fn run(
    backend: &yari_model::Backend,
    dir: &Path,
    config: Option<&Path>,
    init: bool,
) -> Result<()> {
    let log = yari_loop::stderr_log;
    if init {
        yari_loop::roles::init_run(config, dir, backend, log)?;
        return Ok(());
    }
    // A signal ends the learner at once: every file is written atomically and every phase is
    // resumable, so there is nothing to clean up.
    let _ = ctrlc::set_handler(|| {
        eprintln!("\ninterrupted: progress is saved; run the same command again to resume");
        std::process::exit(130);
    });
    let mut learner =
        yari_loop::roles::open_learner(config, dir, Duration::from_millis(500), backend, log)?;
    learner.run()?;
    Ok(())
}
