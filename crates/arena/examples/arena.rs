//! Runs the CLI's arena command without the `yari` binary (its source is included as is):
//!
//! ```text
//! cargo run --release -p yari-arena --example arena -- --a alphabeta:2 --b 'fsf[nodes=1000]' \
//!     --games 10 [--sprt 0,10] [--json] [--out RUN/arena/x.jsonl] [--concurrency N] [--ply-cap N]
//! cargo run --release -p yari-arena --example arena -- ratings RUN_DIR [--json]
//! ```

#[path = "../../cli/src/arena_cmd.rs"]
mod arena_cmd;

use anyhow::{bail, Context};

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("ratings") {
        let dir = args.get(1).context("ratings RUN_DIR")?;
        return arena_cmd::ratings(dir.as_ref(), args.iter().any(|a| a == "--json"));
    }
    let mut a = None;
    let mut b = None;
    let mut games = 10;
    let mut sprt = None;
    let mut json = false;
    let mut options = arena_cmd::ArenaOptions::default();
    let mut it = args.into_iter();
    while let Some(flag) = it.next() {
        let mut value = || it.next().with_context(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--a" => a = Some(value()?),
            "--b" => b = Some(value()?),
            "--games" => games = value()?.parse()?,
            "--sprt" => {
                let v = value()?;
                let (e0, e1) = v.split_once(',').context("--sprt elo0,elo1")?;
                sprt = Some((e0.trim().parse()?, e1.trim().parse()?));
            }
            "--json" => json = true,
            "--out" => options.games_file = Some(value()?.into()),
            "--concurrency" => options.concurrency = value()?.parse()?,
            "--ply-cap" => options.ply_cap = Some(value()?.parse()?),
            "--seed" => options.seed = value()?.parse()?,
            other => bail!("unknown argument {other}"),
        }
    }
    arena_cmd::run(
        &a.context("--a PLAYER")?,
        &b.context("--b PLAYER")?,
        games,
        sprt,
        json,
        &options,
    )
}
