//! `yari serve`: the network played in a browser, a training run watched in a browser, and
//! the run's games replayed there. Every page and asset is embedded in the binary; the pages
//! talk to a small JSON API ([`App::handle`]) that answers from the rules, the engine's own
//! search (the one behind `yari uci`) and the files of one run directory, nothing else.
//!
//! The library knows no network format: the binary hands it an evaluator for the model it
//! was given and a loader for the run's checkpoints, so this crate builds without burn.

mod api;
mod assets;
mod board;
pub mod games;
mod run;

use std::io::Read;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use thiserror::Error;
use yari_search::Evaluator;

pub use api::{App, Reply};

/// Loads a network file of the run (a checkpoint) as an evaluator.
pub type LoadModel = Arc<dyn Fn(&Path) -> Result<Arc<dyn Evaluator>, String> + Send + Sync>;

/// What the server serves.
#[derive(Clone)]
pub struct ServeOptions {
    /// The model's name as the pages show it (its path, or `uniform`).
    pub model_name: String,
    /// The model the play page uses unless it picks a checkpoint.
    pub evaluator: Arc<dyn Evaluator>,
    /// The run whose progress, checkpoints and games the pages show.
    pub run_dir: Option<PathBuf>,
    /// Loads the run's checkpoints for the play page (`None`: only the model above).
    pub load_model: Option<LoadModel>,
    pub limits: Limits,
}

/// Bounds on what one request may ask for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Largest request body, in bytes.
    pub max_body: usize,
    /// Most moves in a game sent to the API.
    pub max_moves: usize,
    /// Most search threads one request may use.
    pub max_threads: usize,
    /// Most simulations one move may search.
    pub max_nodes: u32,
    /// Longest time one move may think, in milliseconds.
    pub max_movetime_ms: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_body: 64 * 1024,
            max_moves: 2000,
            max_threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
            max_nodes: 100_000,
            max_movetime_ms: 60_000,
        }
    }
}

/// Why the server could not start.
#[derive(Debug, Error)]
pub enum ServeError {
    #[error("cannot listen on {addr}: {reason}")]
    Bind { addr: SocketAddr, reason: String },
    #[error("the run directory {0} does not exist")]
    NoRunDir(PathBuf),
}

/// Whether listening on `host` exposes the server beyond this machine.
pub fn is_local(host: IpAddr) -> bool {
    host.is_loopback()
}

/// A bound server: [`Server::run`] answers requests until [`Server::stop_handle`]'s handle
/// is called.
pub struct Server {
    http: Arc<tiny_http::Server>,
    app: Arc<App>,
    addr: SocketAddr,
    workers: Arc<AtomicUsize>,
}

/// Whether a request's `Host` names this machine. A server on the loopback address answers
/// only those: a web page elsewhere that points a host name of its own at 127.0.0.1 (DNS
/// rebinding) cannot reach the API through the user's browser.
pub fn is_local_host_header(host: &str) -> bool {
    let name = match host.strip_prefix('[') {
        Some(rest) => rest.split(']').next().unwrap_or(""),
        None => host.rsplit_once(':').map_or(host, |(name, _port)| name),
    };
    matches!(
        name.to_ascii_lowercase().as_str(),
        "localhost" | "127.0.0.1" | "::1"
    )
}

/// Stops a running server from another thread.
#[derive(Clone)]
pub struct StopHandle {
    http: Arc<tiny_http::Server>,
    workers: Arc<AtomicUsize>,
}

impl StopHandle {
    /// Wakes every worker with a stop (one wake-up each: tiny_http's unblock frees one
    /// waiting `recv`).
    pub fn stop(&self) {
        for _ in 0..self.workers.load(Ordering::SeqCst).max(1) {
            self.http.unblock();
        }
    }
}

impl Server {
    /// Binds `addr` (port 0 picks a free port).
    pub fn bind(addr: SocketAddr, options: ServeOptions) -> Result<Server, ServeError> {
        if let Some(dir) = &options.run_dir {
            if !dir.is_dir() {
                return Err(ServeError::NoRunDir(dir.clone()));
            }
        }
        let http = tiny_http::Server::http(addr).map_err(|e| ServeError::Bind {
            addr,
            reason: e.to_string(),
        })?;
        let addr = http.server_addr().to_ip().unwrap_or(addr);
        Ok(Server {
            http: Arc::new(http),
            app: Arc::new(App::new(options)),
            addr,
            workers: Arc::new(AtomicUsize::new(0)),
        })
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    pub fn stop_handle(&self) -> StopHandle {
        StopHandle {
            http: self.http.clone(),
            workers: self.workers.clone(),
        }
    }

    /// Answers requests on `workers` threads until stopped. A search holds its worker for
    /// as long as it thinks, so the pages keep loading while the engine thinks as long as a
    /// worker is free.
    pub fn run(self, workers: usize) {
        let local_only = is_local(self.addr.ip());
        self.workers.store(workers.max(1), Ordering::SeqCst);
        let workers: Vec<_> = (0..workers.max(1))
            .map(|i| {
                let http = self.http.clone();
                let app = self.app.clone();
                std::thread::Builder::new()
                    .name(format!("yari-serve-{i}"))
                    .spawn(move || {
                        while let Ok(request) = http.recv() {
                            answer(&app, request, local_only);
                        }
                    })
                    .expect("spawning a server thread")
            })
            .collect();
        for worker in workers {
            let _ = worker.join();
        }
    }
}

/// Reads a request (its body bounded), lets the app answer it and sends the reply. A client
/// that went away is not an error worth more than dropping the reply.
fn answer(app: &App, mut request: tiny_http::Request, local_only: bool) {
    let limit = app.limits().max_body;
    let method = request.method().as_str().to_string();
    let url = request.url().to_string();
    let declared = request.body_length().unwrap_or(0);
    let host = request
        .headers()
        .iter()
        .find(|h| h.field.equiv("Host"))
        .map(|h| h.value.as_str().to_string());
    let reply = if local_only && !host.as_deref().is_some_and(is_local_host_header) {
        Reply::error(
            403,
            format!("Host {host:?} is not this machine: open the page at 127.0.0.1 or localhost"),
        )
    } else if declared > limit {
        Reply::error(413, format!("request body over {limit} bytes"))
    } else {
        let mut body = Vec::new();
        let read = request
            .as_reader()
            .take(limit as u64 + 1)
            .read_to_end(&mut body);
        match read {
            Err(e) => Reply::error(400, format!("reading the request body: {e}")),
            Ok(_) if body.len() > limit => {
                Reply::error(413, format!("request body over {limit} bytes"))
            }
            Ok(_) => app.handle(&method, &url, &body),
        }
    };
    let mut response = tiny_http::Response::from_data(reply.body).with_status_code(reply.status);
    for (name, value) in reply.headers {
        if let Ok(header) = tiny_http::Header::from_bytes(name.as_bytes(), value.as_bytes()) {
            response.add_header(header);
        }
    }
    let _ = request.respond(response);
}
