//! Player specs: the text form of a player on the command line and in game records.
//!
//! | spec | player |
//! |---|---|
//! | `random` or `random:SEED` | uniformly random legal moves (the rating anchor) |
//! | `alphabeta:N` | fixed depth-N alpha-beta on material |
//! | `mcts:SIMS` | MCTS with uniform priors and no value knowledge, SIMS simulations per move |
//! | `model:FILE:SIMS` | MCTS guided by the checkpoint FILE |
//! | `model[SOPTS]:FILE:SIMS` | the same with search settings changed, see below |
//! | `uci:COMMAND` | an external UCI engine, COMMAND split on whitespace (quotes group) |
//! | `uci[OPTS]:COMMAND` | the same with options, see below |
//! | `fsf` / `fsf[OPTS]` | Fairy-Stockfish's npm build: `node --no-experimental-fetch JS`, where JS is the binary's `YARI_FSF_JS` and defaults to `.fsf/node_modules/fairy-stockfish-nnue.wasm/uci.js` |
//!
//! `OPTS` is a comma-separated list of `key=value`:
//! `nodes=N` (`go nodes N`, the default with N = 1000), `movetime=MS` (`go movetime MS`),
//! `depth=D` (`go depth D`), `timeout=SECONDS` (deadline for each answer, default 30),
//! `name=NAME` (the player's name in records; default: the spec text itself), and any other
//! `Key=Value` is sent as `setoption name Key value Value` (e.g. `Threads=1,Hash=16`).
//!
//! Every number is range-checked when the spec is parsed (depth 1 to 32, simulations 1 to
//! 10^7, UCI times at most a day), so a typo is refused by name before any game starts.
//!
//! Example: `uci[nodes=2000,Hash=16,name=fsf2k]:node --no-experimental-fetch .fsf/node_modules/fairy-stockfish-nnue.wasm/uci.js`.
//!
//! `SOPTS` overrides the engine's default search (the one `yari play` and `yari uci` use),
//! to measure a search setting rather than a network: `c_puct=X`, `fpu=X` (first-play
//! urgency reduction), `reuse=0|1` (keep the subtree of the moves played for the next
//! search), `mate=N` (plies of the leaf mate search), `gumbel=N` (Gumbel root search
//! with sequential halving over N moves and no root noise; 0 is PUCT) and `pst=X` (softmax
//! temperature of the network's priors), `batch=N` (N leaves per network call, gathered
//! under virtual loss: the engine's batched search on the game's thread), e.g.
//! `model[c_puct=2,reuse=0]:net.yari:1600`.

use std::path::PathBuf;
use std::time::Duration;

use thiserror::Error;

use crate::uci::{SearchLimit, UciConfig};

/// Where `fsf` looks for the npm build's `uci.js` unless [`set_fsf_js`] says otherwise.
pub const DEFAULT_FSF_JS: &str = ".fsf/node_modules/fairy-stockfish-nnue.wasm/uci.js";

/// The command that installs Fairy-Stockfish's npm build where `fsf` looks for it.
pub const FSF_INSTALL: &str = "npm install --prefix .fsf fairy-stockfish-nnue.wasm";

/// The `uci.js` that `fsf` players run, when the binary set one ([`set_fsf_js`]).
static FSF_JS: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();

/// Sets the `uci.js` of Fairy-Stockfish's npm build that `fsf` specs run (default
/// [`DEFAULT_FSF_JS`]); the binary calls it once, from its flag or `YARI_FSF_JS`. Returns
/// false when a path was already set (the first one stays).
pub fn set_fsf_js(path: PathBuf) -> bool {
    FSF_JS.set(path).is_ok()
}

/// The `uci.js` that `fsf` specs run.
pub fn fsf_js() -> PathBuf {
    FSF_JS
        .get()
        .cloned()
        .unwrap_or_else(|| PathBuf::from(DEFAULT_FSF_JS))
}

/// Deepest `alphabeta:N`: the material search doubles its time every ply or so, and depth 6
/// already takes minutes a move, so anything near this is a typo, not a player.
pub const MAX_ALPHABETA_DEPTH: u32 = 32;
/// Longest `timeout=` and `movetime=` of a UCI engine: a day, beyond which `Instant`
/// arithmetic is not far from overflowing and no match would ever end anyway.
pub const MAX_UCI_SECONDS: u64 = 86_400;

/// Checks `value` against `range`, naming the option when it is outside.
fn in_range<T: PartialOrd + std::fmt::Display>(
    spec: &str,
    what: &'static str,
    value: T,
    range: std::ops::RangeInclusive<T>,
    text: &'static str,
) -> Result<T, SpecError> {
    if range.contains(&value) {
        Ok(value)
    } else {
        Err(SpecError::OutOfRange {
            spec: spec.to_string(),
            what,
            value: value.to_string(),
            range: text,
        })
    }
}

/// A spec that could not be understood.
#[derive(Debug, Error, PartialEq)]
pub enum SpecError {
    #[error("unknown player {0:?}: expected random, alphabeta:N, mcts:SIMS, model:FILE:SIMS, uci:COMMAND or fsf")]
    Unknown(String),
    #[error("bad number {value:?} in player spec {spec:?}")]
    Number { spec: String, value: String },
    #[error("{what} = {value} in player spec {spec:?} is out of range: must be {range}")]
    OutOfRange {
        spec: String,
        what: &'static str,
        value: String,
        range: &'static str,
    },
    #[error("bad option {option:?} in player spec {spec:?}: expected key=value")]
    Option { spec: String, option: String },
    #[error("empty engine command in player spec {0:?}")]
    EmptyCommand(String),
    #[error("unbalanced quote in engine command {0:?}")]
    Quote(String),
}

/// A parsed player spec.
#[derive(Debug, Clone, PartialEq)]
pub enum PlayerSpec {
    Random {
        seed: u64,
    },
    AlphaBeta {
        depth: u32,
    },
    Mcts {
        sims: u32,
    },
    Model {
        path: PathBuf,
        sims: u32,
        options: SearchOptions,
    },
    Uci(UciConfig),
}

/// Search settings a `model[...]` spec changes; `None` keeps the engine's default.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SearchOptions {
    pub c_puct: Option<f32>,
    pub fpu_reduction: Option<f32>,
    pub reuse_tree: Option<bool>,
    pub mate_search_plies: Option<u32>,
    /// Gumbel root search considering this many moves, without root noise (0: PUCT).
    pub gumbel_considered: Option<usize>,
    /// Softmax temperature of the priors ([`yari_search::SearchConfig::policy_temperature`]).
    pub policy_temperature: Option<f32>,
    /// Leaves per network call, gathered under virtual loss (the engine's batched search);
    /// `None`: one at a time.
    pub batch: Option<usize>,
}

impl SearchOptions {
    /// Parses `key=value,...` (the text between the brackets of `model[...]`).
    fn parse(spec: &str, opts: &str) -> Result<SearchOptions, SpecError> {
        let mut out = SearchOptions::default();
        for option in opts.split(',').map(str::trim).filter(|o| !o.is_empty()) {
            let bad_option = || SpecError::Option {
                spec: spec.to_string(),
                option: option.to_string(),
            };
            let (key, value) = option.split_once('=').ok_or_else(bad_option)?;
            let (key, value) = (key.trim(), value.trim());
            let bad = || SpecError::Number {
                spec: spec.to_string(),
                value: value.to_string(),
            };
            // The same ranges as `SearchConfig::validate`, so a spec fails here, by name,
            // rather than when the first game starts.
            let float = |v: &str, what, range, text| -> Result<f32, SpecError> {
                let x: f32 = v.parse().map_err(|_| bad())?;
                if !x.is_finite() {
                    return Err(bad());
                }
                in_range(spec, what, x, range, text)
            };
            match key {
                "c_puct" => out.c_puct = Some(float(value, "c_puct", 1e-6..=1e6, "in (0, 1e6]")?),
                "fpu" => out.fpu_reduction = Some(float(value, "fpu", 0.0..=2.0, "in [0, 2]")?),
                "reuse" => {
                    out.reuse_tree = Some(match value {
                        "0" | "false" => false,
                        "1" | "true" => true,
                        _ => return Err(bad()),
                    })
                }
                "mate" => {
                    let plies: u32 = value.parse().map_err(|_| bad())?;
                    if !matches!(plies, 0 | 1 | 3 | 5) {
                        return Err(SpecError::OutOfRange {
                            spec: spec.to_string(),
                            what: "mate",
                            value: value.to_string(),
                            range: "0, 1, 3 or 5",
                        });
                    }
                    out.mate_search_plies = Some(plies);
                }
                "gumbel" => {
                    let n: usize = value.parse().map_err(|_| bad())?;
                    out.gumbel_considered =
                        Some(in_range(spec, "gumbel", n, 0..=1024, "in 0..=1024")?);
                }
                "pst" => {
                    out.policy_temperature = Some(float(value, "pst", 0.1..=10.0, "in [0.1, 10]")?)
                }
                "batch" => {
                    let n: usize = value.parse().map_err(|_| bad())?;
                    out.batch = Some(in_range(spec, "batch", n, 1..=4096, "in 1..=4096")?);
                }
                _ => return Err(bad_option()),
            }
        }
        Ok(out)
    }

    /// The `[...]` text of these options, empty when none is set.
    fn text(&self) -> String {
        let mut parts = Vec::new();
        if let Some(x) = self.c_puct {
            parts.push(format!("c_puct={x}"));
        }
        if let Some(x) = self.fpu_reduction {
            parts.push(format!("fpu={x}"));
        }
        if let Some(x) = self.reuse_tree {
            parts.push(format!("reuse={}", u8::from(x)));
        }
        if let Some(x) = self.mate_search_plies {
            parts.push(format!("mate={x}"));
        }
        if let Some(x) = self.gumbel_considered {
            parts.push(format!("gumbel={x}"));
        }
        if let Some(x) = self.policy_temperature {
            parts.push(format!("pst={x}"));
        }
        if let Some(x) = self.batch {
            parts.push(format!("batch={x}"));
        }
        if parts.is_empty() {
            String::new()
        } else {
            format!("[{}]", parts.join(","))
        }
    }
}

impl PlayerSpec {
    /// Parses the text forms listed in the module documentation.
    pub fn parse(text: &str) -> Result<PlayerSpec, SpecError> {
        let text = text.trim();
        let number = |value: &str| -> Result<u64, SpecError> {
            value.trim().parse().map_err(|_| SpecError::Number {
                spec: text.to_string(),
                value: value.to_string(),
            })
        };
        if text == "random" {
            return Ok(PlayerSpec::Random { seed: 0 });
        }
        if let Some(seed) = text.strip_prefix("random:") {
            return Ok(PlayerSpec::Random {
                seed: number(seed)?,
            });
        }
        // Checked before narrowing: `as u32` once turned depth 4294967296 into 0 (played as 1).
        let sims = |value: &str| -> Result<u32, SpecError> {
            let n = in_range(
                text,
                "simulations",
                number(value)?,
                1..=u64::from(yari_search::MAX_SIMULATIONS),
                "in 1..=10000000",
            )?;
            Ok(n as u32)
        };
        if let Some(depth) = text.strip_prefix("alphabeta:") {
            let depth = in_range(
                text,
                "depth",
                number(depth)?,
                1..=u64::from(MAX_ALPHABETA_DEPTH),
                "in 1..=32",
            )?;
            return Ok(PlayerSpec::AlphaBeta {
                depth: depth as u32,
            });
        }
        if let Some(value) = text.strip_prefix("mcts:") {
            return Ok(PlayerSpec::Mcts { sims: sims(value)? });
        }
        if let Some(rest) = text.strip_prefix("model") {
            let (options, rest) = if let Some(rest) = rest.strip_prefix(':') {
                (SearchOptions::default(), rest)
            } else if let Some(rest) = rest.strip_prefix('[') {
                let (opts, after) = rest
                    .split_once("]:")
                    .ok_or_else(|| SpecError::Unknown(text.to_string()))?;
                (SearchOptions::parse(text, opts)?, after)
            } else {
                return Err(SpecError::Unknown(text.to_string()));
            };
            let (path, sims_text) = rest
                .rsplit_once(':')
                .ok_or_else(|| SpecError::Unknown(text.to_string()))?;
            return Ok(PlayerSpec::Model {
                path: PathBuf::from(path),
                sims: sims(sims_text)?,
                options,
            });
        }
        if text == "fsf" || text.starts_with("fsf[") {
            let opts = match text.strip_prefix("fsf") {
                Some("") => "",
                Some(o) => o
                    .strip_prefix('[')
                    .and_then(|o| o.strip_suffix(']'))
                    .ok_or_else(|| SpecError::Unknown(text.to_string()))?,
                None => unreachable!(),
            };
            let js = fsf_js();
            let argv = vec![
                "node".into(),
                "--no-experimental-fetch".into(),
                js.display().to_string(),
            ];
            let mut config = uci_spec(text, argv, opts)?;
            config.requires = Some((js, FSF_INSTALL.to_string()));
            return Ok(PlayerSpec::Uci(config));
        }
        if let Some(rest) = text.strip_prefix("uci") {
            let (opts, command) = if let Some(command) = rest.strip_prefix(':') {
                ("", command)
            } else if let Some(rest) = rest.strip_prefix('[') {
                let (opts, after) = rest
                    .split_once("]:")
                    .ok_or_else(|| SpecError::Unknown(text.to_string()))?;
                (opts, after)
            } else {
                return Err(SpecError::Unknown(text.to_string()));
            };
            let argv = split_command(command).ok_or_else(|| SpecError::Quote(command.into()))?;
            if argv.is_empty() {
                return Err(SpecError::EmptyCommand(text.to_string()));
            }
            return uci_spec(text, argv, opts).map(PlayerSpec::Uci);
        }
        Err(SpecError::Unknown(text.to_string()))
    }

    /// The player's name in records: `random`, `alphabeta:3`, `mcts:800`,
    /// `model:FILE:SIMS`, or the engine's configured name.
    pub fn name(&self) -> String {
        match self {
            PlayerSpec::Random { seed: 0 } => "random".into(),
            // Every seed plays the same strength; one name keeps one rating.
            PlayerSpec::Random { .. } => "random".into(),
            PlayerSpec::AlphaBeta { depth } => format!("alphabeta:{}", (*depth).max(1)),
            PlayerSpec::Mcts { sims } => format!("mcts:{sims}"),
            PlayerSpec::Model {
                path,
                sims,
                options,
            } => format!("model{}:{}:{sims}", options.text(), path.display()),
            PlayerSpec::Uci(c) => c.name.clone(),
        }
    }
}

fn uci_spec(spec: &str, argv: Vec<String>, opts: &str) -> Result<UciConfig, SpecError> {
    let mut config = UciConfig::new(argv);
    config.name = spec.to_string();
    for option in opts.split(',').map(str::trim).filter(|o| !o.is_empty()) {
        let (key, value) = option.split_once('=').ok_or_else(|| SpecError::Option {
            spec: spec.to_string(),
            option: option.to_string(),
        })?;
        let (key, value) = (key.trim(), value.trim());
        let bad = || SpecError::Number {
            spec: spec.to_string(),
            value: value.to_string(),
        };
        match key {
            "nodes" => {
                let n = value.parse().map_err(|_| bad())?;
                config.limit = SearchLimit::Nodes(in_range(
                    spec,
                    "nodes",
                    n,
                    1..=1_000_000_000_000,
                    "in 1..=10^12",
                )?)
            }
            "movetime" => {
                let ms = value.parse().map_err(|_| bad())?;
                let max = MAX_UCI_SECONDS * 1000;
                config.limit = SearchLimit::MoveTime(in_range(
                    spec,
                    "movetime",
                    ms,
                    1..=max,
                    "in 1..=86400000 (ms)",
                )?)
            }
            "depth" => {
                let d = value.parse().map_err(|_| bad())?;
                config.limit =
                    SearchLimit::Depth(in_range(spec, "depth", d, 1..=1000, "in 1..=1000")?)
            }
            "timeout" => {
                let secs: f64 = value.parse().map_err(|_| bad())?;
                if secs.is_nan() {
                    return Err(bad());
                }
                // A float range check before the conversion: `Duration::from_secs_f64` panics
                // on values it cannot hold (`timeout=1e20`).
                let secs = in_range(
                    spec,
                    "timeout",
                    secs,
                    0.001..=MAX_UCI_SECONDS as f64,
                    "in [0.001, 86400] seconds",
                )?;
                config.timeout = Duration::from_secs_f64(secs);
            }
            "name" => config.name = value.to_string(),
            _ => config.options.push((key.to_string(), value.to_string())),
        }
    }
    Ok(config)
}

/// Splits a command line on whitespace; single or double quotes group words (no escapes
/// beyond that: this is for engine paths and flags, not a shell). `None` on an open quote.
pub fn split_command(command: &str) -> Option<Vec<String>> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut quote: Option<char> = None;
    for c in command.chars() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => word.push(c),
            None if c == '"' || c == '\'' => {
                quote = Some(c);
                in_word = true;
            }
            None if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            None => {
                word.push(c);
                in_word = true;
            }
        }
    }
    if quote.is_some() {
        return None;
    }
    if in_word {
        words.push(word);
    }
    Some(words)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_form() {
        assert_eq!(
            PlayerSpec::parse("random").unwrap(),
            PlayerSpec::Random { seed: 0 }
        );
        assert_eq!(
            PlayerSpec::parse("random:7").unwrap(),
            PlayerSpec::Random { seed: 7 }
        );
        assert_eq!(
            PlayerSpec::parse("alphabeta:3").unwrap(),
            PlayerSpec::AlphaBeta { depth: 3 }
        );
        assert_eq!(
            PlayerSpec::parse("mcts:800").unwrap(),
            PlayerSpec::Mcts { sims: 800 }
        );
        assert_eq!(
            PlayerSpec::parse("model:runs/a:b/ckpt.bin:64").unwrap(),
            PlayerSpec::Model {
                path: "runs/a:b/ckpt.bin".into(),
                sims: 64,
                options: SearchOptions::default(),
            }
        );
        let spec = PlayerSpec::parse(
            "model[c_puct=2.5, fpu=0, reuse=0, mate=1, gumbel=8, pst=1.5, batch=16]:n.yari:800",
        )
        .unwrap();
        assert_eq!(
            spec,
            PlayerSpec::Model {
                path: "n.yari".into(),
                sims: 800,
                options: SearchOptions {
                    c_puct: Some(2.5),
                    fpu_reduction: Some(0.0),
                    reuse_tree: Some(false),
                    mate_search_plies: Some(1),
                    gumbel_considered: Some(8),
                    policy_temperature: Some(1.5),
                    batch: Some(16),
                },
            }
        );
        assert_eq!(
            spec.name(),
            "model[c_puct=2.5,fpu=0,reuse=0,mate=1,gumbel=8,pst=1.5,batch=16]:n.yari:800"
        );
        assert_eq!(PlayerSpec::parse(&spec.name()).unwrap(), spec);
        let PlayerSpec::Uci(c) = PlayerSpec::parse("uci:node 'my dir/uci.js' -x").unwrap() else {
            panic!()
        };
        assert_eq!(c.argv, ["node", "my dir/uci.js", "-x"]);
        assert_eq!(c.limit, SearchLimit::Nodes(1000));
        assert_eq!(c.name, "uci:node 'my dir/uci.js' -x");
        let PlayerSpec::Uci(c) =
            PlayerSpec::parse("uci[movetime=50, timeout=2.5, Hash=16, name=e]:./engine").unwrap()
        else {
            panic!()
        };
        assert_eq!(c.argv, ["./engine"]);
        assert_eq!(c.limit, SearchLimit::MoveTime(50));
        assert_eq!(c.timeout, Duration::from_millis(2500));
        assert_eq!(c.options, [("Hash".to_string(), "16".to_string())]);
        assert_eq!(c.name, "e");
        let PlayerSpec::Uci(c) = PlayerSpec::parse("fsf[nodes=500]").unwrap() else {
            panic!()
        };
        assert_eq!(c.argv[..2], ["node", "--no-experimental-fetch"]);
        assert_eq!(c.limit, SearchLimit::Nodes(500));
        assert_eq!(c.name, "fsf[nodes=500]");
    }

    #[cfg(not(feature = "search"))]
    #[test]
    fn mcts_without_the_search_feature_is_a_clear_error() {
        use crate::player::PlayerFactory;
        let spec = PlayerSpec::parse("mcts:10").unwrap();
        let err = spec.factory().err().expect("no search in this build");
        assert!(err.to_string().contains("search"), "{err}");
        assert!(spec.build().is_err());
    }

    #[test]
    fn rejects_nonsense() {
        assert!(PlayerSpec::parse("alphabeta:x").is_err());
        assert!(PlayerSpec::parse("stockfish").is_err());
        assert!(PlayerSpec::parse("uci:").is_err());
        assert!(PlayerSpec::parse("uci:'open").is_err());
        assert!(PlayerSpec::parse("uci[nodes]:x").is_err());
        assert!(PlayerSpec::parse("uci[timeout=-1]:x").is_err());
        assert!(PlayerSpec::parse("model:file").is_err());
        assert!(PlayerSpec::parse("model[c_puct=-1]:f:10").is_err());
        assert!(PlayerSpec::parse("model[speed=9]:f:10").is_err());
        assert!(PlayerSpec::parse("model[reuse=2]:f:10").is_err());
        assert!(PlayerSpec::parse("model[fpu=1:f:10").is_err());
    }

    /// Every numeric option is range-checked with a message naming it; none panics or wraps.
    #[test]
    fn numbers_out_of_range_are_named() {
        for (text, what) in [
            ("alphabeta:4294967296", "depth"),
            ("alphabeta:0", "depth"),
            ("alphabeta:33", "depth"),
            ("mcts:0", "simulations"),
            ("mcts:4294967297", "simulations"),
            ("model:f.yari:0", "simulations"),
            ("model:f.yari:10000001", "simulations"),
            ("uci[timeout=1e20]:x", "timeout"),
            ("uci[timeout=inf]:x", "timeout"),
            ("uci[timeout=0]:x", "timeout"),
            ("uci[timeout=-1]:x", "timeout"),
            ("uci[nodes=0]:x", "nodes"),
            ("uci[movetime=0]:x", "movetime"),
            ("uci[movetime=18446744073709551615]:x", "movetime"),
            ("uci[depth=0]:x", "depth"),
            ("fsf[depth=4294967295]", "depth"),
            ("model[c_puct=0]:f:10", "c_puct"),
            ("model[c_puct=1e30]:f:10", "c_puct"),
            ("model[fpu=3]:f:10", "fpu"),
            ("model[mate=2]:f:10", "mate"),
            ("model[gumbel=100000]:f:10", "gumbel"),
            ("model[pst=0]:f:10", "pst"),
            ("model[pst=11]:f:10", "pst"),
        ] {
            let err = PlayerSpec::parse(text).expect_err(text);
            assert!(
                matches!(&err, SpecError::OutOfRange { what: w, .. } if *w == what),
                "{text}: {err:?}"
            );
            assert!(err.to_string().contains(what), "{text}: {err}");
        }
        for text in ["uci[timeout=nan]:x", "model[pst=nan]:f:10", "alphabeta:-1"] {
            assert!(
                matches!(PlayerSpec::parse(text), Err(SpecError::Number { .. })),
                "{text}"
            );
        }
        assert_eq!(
            PlayerSpec::parse("alphabeta:32").unwrap(),
            PlayerSpec::AlphaBeta { depth: 32 }
        );
    }
}
