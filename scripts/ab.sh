#!/usr/bin/env bash
# The A/B protocol: is config B better than config A? Cheaper than two two-hour runs.
#
# Runs `yari run` on each config for the same wall time, one after the other on this machine
# (so both see the same cores), exports each run's final best network, then plays
#   1. A's network against B's network (both at AB_SIMS simulations, AB_GAMES games), and
#   2. each network against Fairy-Stockfish (AB_FSF, AB_FSF_GAMES games each),
# and prints one table: generations and games of each run, every score with its 95% interval.
# The table also lands in OUT/result.md; copy it, with the config diff, into docs/experiments.md.
#
# usage: scripts/ab.sh CONFIG_A CONFIG_B [MINUTES]
#   CONFIG_A/B  run configs (a file may hold only the keys it changes: every config is laid
#               over configs/default.toml); their run.max_hours is replaced by MINUTES
#   MINUTES     wall time of each run (default 40)
# Environment:
#   AB_OUT        output directory (default data/ab/<A>-vs-<B>); run again to resume: finished
#                 runs and matches are kept, a killed run or match continues
#   AB_GAMES      games of the head-to-head match (default 200)
#   AB_FSF_GAMES  games of each network against Fairy-Stockfish (default 100; 0 skips)
#   AB_FSF        the outside opponent (default fsf[nodes=100])
#   AB_SIMS       simulations per move of both networks in the matches (default 400)
#   YARI          the yari binary (default target/release/yari)
set -euo pipefail
cd "$(dirname "$0")/.."

a_cfg=${1:?usage: scripts/ab.sh CONFIG_A CONFIG_B [MINUTES]}
b_cfg=${2:?usage: scripts/ab.sh CONFIG_A CONFIG_B [MINUTES]}
minutes=${3:-40}
yari=${YARI:-target/release/yari}
games=${AB_GAMES:-200}
fsf_games=${AB_FSF_GAMES:-100}
fsf=${AB_FSF:-fsf[nodes=100]}
sims=${AB_SIMS:-400}
[ -x "$yari" ] || { echo "no yari binary at $yari (cargo build --release -p yari-cli)" >&2; exit 1; }
for f in "$a_cfg" "$b_cfg"; do [ -f "$f" ] || { echo "no config file $f" >&2; exit 1; }; done
name() { basename "$1" .toml; }
out=${AB_OUT:-data/ab/$(name "$a_cfg")-vs-$(name "$b_cfg")}
mkdir -p "$out"
stamp() { echo "[$(date -u +%H:%M:%S)] $*"; }

# The config with run.max_hours replaced (tomllib reads it; the writer below covers what run
# configs hold: tables, strings, numbers, booleans and flat arrays).
derive() {
    python3 - "$1" "$minutes" <<'EOF'
import sys, tomllib, json
cfg = tomllib.load(open(sys.argv[1], "rb"))
cfg.setdefault("run", {})["max_hours"] = float(sys.argv[2]) / 60.0
cfg["run"]["generations"] = 0
def value(v):
    if isinstance(v, bool): return "true" if v else "false"
    if isinstance(v, (int, float)): return repr(v)
    if isinstance(v, str): return json.dumps(v)
    if isinstance(v, list): return "[" + ", ".join(value(x) for x in v) + "]"
    raise SystemExit(f"cannot write {v!r}")
def table(t, path):
    scalars = {k: v for k, v in t.items() if not isinstance(v, dict)}
    if path:
        print(f"[{'.'.join(path)}]")
    for k, v in scalars.items():
        print(f"{k} = {value(v)}")
    for k, v in t.items():
        if isinstance(v, dict):
            table(v, path + [k])
table(cfg, [])
EOF
}

for side in a b; do
    cfg=$a_cfg
    [ $side = b ] && cfg=$b_cfg
    if [ ! -f "$out/$side.yari" ]; then
        derive "$cfg" >"$out/$side.toml"
        stamp "run $side: $cfg for $minutes minutes into $out/$side"
        "$yari" run --config "$out/$side.toml" --run-dir "$out/$side" 2>&1 |
            tr '\r' '\n' | grep -E "^\[.*(== generation|budget|rating .* against|vs )" || true
        "$yari" export --run-dir "$out/$side" --out "$out/$side.yari.tmp" >/dev/null
        mv "$out/$side.yari.tmp" "$out/$side.yari"
    fi
done

# One match, kept once finished: OUT/NAME.json is its `yari arena --json` summary.
play() {
    local tag=$1 pa=$2 pb=$3 n=$4 seed=$5
    if [ ! -f "$out/$tag.json" ]; then
        stamp "match $tag: $pa against $pb, $n games"
        rm -f "$out/$tag.games.jsonl"
        "$yari" arena --a "$pa" --b "$pb" --games "$n" --seed "$seed" \
            --games-file "$out/$tag.games.jsonl" --json | tail -n 1 >"$out/$tag.json.tmp"
        mv "$out/$tag.json.tmp" "$out/$tag.json"
    fi
}
play b-vs-a "model:$out/b.yari:$sims" "model:$out/a.yari:$sims" "$games" 4101
if [ "$fsf_games" -gt 0 ]; then
    play a-vs-fsf "model:$out/a.yari:$sims" "$fsf" "$fsf_games" 4102
    play b-vs-fsf "model:$out/b.yari:$sims" "$fsf" "$fsf_games" 4102
fi

python3 - "$out" "$a_cfg" "$b_cfg" "$minutes" "$sims" "$fsf" <<'EOF' | tee "$out/result.md"
import json, os, sys
out, a_cfg, b_cfg, minutes, sims, fsf = sys.argv[1:]
def run_line(side, cfg):
    summ = os.path.join(out, side, "summary.json")
    rows = json.load(open(summ)) if os.path.exists(summ) else []
    games = sum(r.get("games", 0) for r in rows)
    return f"| {side.upper()} | `{cfg}` | {len(rows)} | {games} |"
def score(tag):
    p = os.path.join(out, tag + ".json")
    if not os.path.exists(p):
        return "not played"
    r = json.load(open(p))
    g = r["games"]
    s = r["score"]
    # 95% Wilson interval of the score.
    z = 1.96
    d = 1 + z * z / g
    c = (s + z * z / (2 * g)) / d
    h = z * ((s * (1 - s) / g + z * z / (4 * g * g)) ** 0.5) / d
    elo = lambda x: "+inf" if x >= 1 else "-inf" if x <= 0 else f"{-400 * __import__('math').log10(1 / x - 1):+.0f}"
    return (f"{r['wins']}-{r['draws']}-{r['losses']} of {g}: {100 * s:.1f}% "
            f"[{100 * (c - h):.1f}, {100 * (c + h):.1f}], Elo {elo(s)} [{elo(c - h)}, {elo(c + h)}]")
print(f"A/B, {minutes} minutes a run, matches at {sims} simulations a move")
print()
print("| run | config | generations | self-play games |")
print("|---|---|---|---|")
print(run_line("a", a_cfg))
print(run_line("b", b_cfg))
print()
print("| match | result for the first player (95% interval) |")
print("|---|---|")
print(f"| B against A | {score('b-vs-a')} |")
print(f"| A against {fsf} | {score('a-vs-fsf')} |")
print(f"| B against {fsf} | {score('b-vs-fsf')} |")
EOF
