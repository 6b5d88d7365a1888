//! `yari serve` and `yari games`: the browser pages and a run's games, from yari-serve.

use std::io::Write;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use yari_serve::games::{self, Catalog};
use yari_serve::{Limits, ServeOptions, Server};

use crate::engine;

/// The one address to listen on: a loopback address as given, any other only when named
/// twice (the confirmation that the server is meant to be reachable from elsewhere).
fn listen_host(hosts: &[IpAddr]) -> Result<IpAddr> {
    let given: Vec<IpAddr> = hosts.to_vec();
    let host = *given.last().context("no --host")?;
    if given.iter().any(|h| *h != host) {
        bail!("--host given with different addresses: {given:?}");
    }
    let named = given.iter().filter(|h| **h == host).count();
    if !yari_serve::is_local(host) && named < 2 {
        bail!(
            "--host {host} would let other machines use this engine and read the run: \
             give --host {host} twice to confirm"
        );
    }
    Ok(host)
}

pub fn serve(
    backend: &yari_model::Backend,
    model: Option<&Path>,
    run_dir: Option<PathBuf>,
    port: u16,
    hosts: &[IpAddr],
    workers: usize,
) -> Result<()> {
    let host = listen_host(hosts)?;
    let (evaluator, model_name) = engine::load_evaluator(backend, model)?;
    let loader = backend.clone();
    let options = ServeOptions {
        model_name,
        evaluator,
        run_dir,
        load_model: Some(Arc::new(move |path: &Path| {
            engine::load_evaluator(&loader, Some(path))
                .map(|(evaluator, _)| evaluator)
                .map_err(|e| format!("{e:#}"))
        })),
        limits: Limits::default(),
    };
    let server = Server::bind(SocketAddr::new(host, port), options)?;
    let addr = server.addr();
    println!("yari serve: open http://{addr}/ (Ctrl-C stops)");
    std::io::stdout().flush()?;
    let stop = server.stop_handle();
    ctrlc::set_handler(move || stop.stop()).context("installing the Ctrl-C handler")?;
    server.run(workers);
    Ok(())
}

pub fn games(run_dir: &Path, pgn: bool, id: Option<&str>) -> Result<()> {
    if !run_dir.is_dir() {
        bail!("no run directory {}", run_dir.display());
    }
    let ids: Vec<String> = match id {
        Some(id) => vec![id.to_string()],
        None if pgn => Catalog::new()
            .list(run_dir)?
            .into_iter()
            .map(|g| g.id)
            .collect(),
        None => {
            let mut out = std::io::stdout().lock();
            for g in Catalog::new().list(run_dir)? {
                writeln!(
                    out,
                    "{}\t{} - {}\t{}\t{}\t{} plies",
                    g.id, g.white, g.black, g.result, g.reason, g.plies
                )?;
            }
            return Ok(());
        }
    };
    let mut out = std::io::stdout().lock();
    for id in ids {
        let game = games::load(run_dir, &id)?;
        if pgn {
            out.write_all(game.pgn()?.as_bytes())?;
        } else {
            writeln!(
                out,
                "{}\t{} - {}\t{}\t{}\t{}",
                game.summary.id,
                game.summary.white,
                game.summary.black,
                game.summary.result,
                game.summary.reason,
                game.moves.join(" ")
            )?;
        }
    }
    Ok(())
}
