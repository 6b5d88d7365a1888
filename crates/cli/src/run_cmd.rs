//! `yari run` and `yari check`: thin layers over the yari-loop crate, which owns the run
//! directory, the config and the generation loop.

use std::path::Path;

use anyhow::{bail, Result};

/// Opens (or creates) the run directory and runs generations until the budget is spent.
pub fn run(
    backend: &yari_model::Backend,
    config_path: Option<&Path>,
    run_dir: Option<&Path>,
) -> Result<()> {
    // A Ctrl-C (or a SIGTERM) ends the process at once: every file is written atomically and
    // every phase is resumable, so there is nothing to clean up.
    let _ = ctrlc::set_handler(|| {
        eprintln!("\ninterrupted: progress is saved; run the same command again to resume");
        std::process::exit(130);
    });
    let mut run = yari_loop::open_run(
        config_path,
        run_dir,
        "yari run",
        backend,
        yari_loop::stderr_log,
    )?;
    run.run()?;
    Ok(())
}

/// Verifies a run directory; fails when anything is damaged (warnings alone do not fail).
pub fn check(run_dir: &Path) -> Result<()> {
    let report = yari_loop::check_run(run_dir);
    for finding in &report.findings {
        println!("{finding}");
    }
    println!("{}: {}", run_dir.display(), report.summary());
    if report.is_damaged() {
        bail!("{} is damaged (see above)", run_dir.display());
    }
    Ok(())
}
