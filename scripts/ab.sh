#!/usr/bin/env bash
# The A/B protocol: is config B better than config A? Cheaper than two two-hour runs.
#
# Runs `yari run` on each config for the same wall time, one after the other on this machine
# (so all see the same cores), exports each run's final best network, then plays
#   1. each B's network against A's network (both at AB_SIMS simulations, AB_GAMES games), and
#   2. each network against each Fairy-Stockfish rung (AB_FSF, AB_FSF_GAMES games each),
# and prints one table: generations and games of each run, every score with its 95% interval.
# Several B configs share one run of the baseline A (it is played once, first), so testing k
# changes costs k + 1 runs, not 2k. The table also lands in OUT/result.md; copy it, with the
# config diffs, into docs/experiments.md.
#
# usage: scripts/ab.sh CONFIG_A CONFIG_B [CONFIG_B2 ...] [MINUTES]
#   CONFIG_A/B  run configs (a file may hold only the keys it changes: every config is laid
#               over configs/default.toml); their run.max_hours is replaced by MINUTES
#   MINUTES     wall time of each run (default 40): the last argument, when it is a number
# Environment:
#   AB_OUT        output directory (default data/ab/<A>-vs-<B>[-<B2>...]); run again to
#                 resume: finished runs and matches are kept, a killed run or match continues
#   AB_GAMES      games of each head-to-head match (default 200)
#   AB_FSF_GAMES  games of each network against Fairy-Stockfish (default 100; 0 skips)
#   AB_FSF        the outside rungs, separated by spaces (default
#                 "fsf[nodes=100] fsf[nodes=1000]")
#   AB_SIMS       simulations per move of the networks in the matches (default 400)
#   YARI          the yari binary (default target/release/yari); it plays every match
#   AB_YARI_<S>   the binary of side S's run and export (S a lower-case side letter: a, b, ...;
#                 default YARI): to test a code change rather than a config, build it apart
#                 and name it here, e.g. AB_YARI_b=/tmp/variant/yari
set -euo pipefail
cd "$(dirname "$0")/.."

usage="usage: scripts/ab.sh CONFIG_A CONFIG_B [CONFIG_B2 ...] [MINUTES]"
[ $# -ge 2 ] || { echo "$usage" >&2; exit 2; }
args=("$@")
minutes=40
last=${args[-1]}
if [[ $last =~ ^[0-9]+([.][0-9]+)?$ ]]; then
    minutes=$last
    unset 'args[-1]'
fi
[ ${#args[@]} -ge 2 ] || { echo "$usage" >&2; exit 2; }
configs=("${args[@]}")
yari=${YARI:-target/release/yari}
games=${AB_GAMES:-200}
fsf_games=${AB_FSF_GAMES:-100}
read -r -a rungs <<<"${AB_FSF:-fsf[nodes=100] fsf[nodes=1000]}"
# A rung's file tag: its spec with every character outside [A-Za-z0-9] made '_'.
tag_of() { printf '%s' "$1" | tr -c 'A-Za-z0-9' '_'; }
sims=${AB_SIMS:-400}
[ -x "$yari" ] || { echo "no yari binary at $yari (cargo build --release -p yari-cli)" >&2; exit 1; }
for f in "${configs[@]}"; do [ -f "$f" ] || { echo "no config file $f" >&2; exit 1; }; done
name() { basename "$1" .toml; }
# The binary that runs side $1's training and exports its network.
side_yari() {
    local v="AB_YARI_$1"
    printf '%s' "${!v:-$yari}"
}
# Side names: a for the baseline, then b, c, d, ... for the changes.
sides=(a b c d e f g h i j k l m n o p q r s t u v w x y z)
[ ${#configs[@]} -le ${#sides[@]} ] || { echo "at most ${#sides[@]} configs" >&2; exit 2; }
# Every side's build exists before the first run starts, not only when its turn comes.
for i in "${!configs[@]}"; do
    b=$(side_yari "${sides[$i]}")
    [ -x "$b" ] || { echo "no yari binary at $b (AB_YARI_${sides[$i]})" >&2; exit 1; }
done
default_out=data/ab/$(name "${configs[0]}")-vs
for c in "${configs[@]:1}"; do default_out+=-$(name "$c"); done
out=${AB_OUT:-$default_out}
mkdir -p "$out"
stamp() { echo "[$(date -u +%H:%M:%S)] $*"; }

# The config with run.max_hours replaced (tomllib reads it; the writer below covers what run
# configs hold: tables, strings, numbers, booleans and flat arrays).
derive() {
    python3 - "$1" "$minutes" <<'PY'
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
PY
}

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

# Each change's run is followed at once by its matches, so a result is on disk as soon as
# its run is done (the baseline's FSF match is played with the first change's).
for i in "${!configs[@]}"; do
    side=${sides[$i]}
    cfg=${configs[$i]}
    run_yari=$(side_yari "$side")
    if [ ! -f "$out/$side.yari" ]; then
        derive "$cfg" >"$out/$side.toml"
        stamp "run $side: $cfg for $minutes minutes into $out/$side ($run_yari)"
        # The whole output goes to OUT/SIDE.log, the generation lines to the terminal; a run
        # that fails stops the script with its error rather than exporting nothing.
        set +e
        "$run_yari" run --config "$out/$side.toml" --run-dir "$out/$side" 2>&1 | tee "$out/$side.log" |
            tr '\r' '\n' | grep -E "^\[.*(== generation|budget|rating .* against|vs )"
        status=${PIPESTATUS[0]}
        set -e
        if [ "$status" -ne 0 ]; then
            grep -m 1 '^Error' "$out/$side.log" >&2 || tail -n 5 "$out/$side.log" >&2
            echo "run $side ($cfg) failed with exit $status; its output is in $out/$side.log" >&2
            exit 1
        fi
        "$run_yari" export --run-dir "$out/$side" --out "$out/$side.yari.tmp" >/dev/null
        mv "$out/$side.yari.tmp" "$out/$side.yari"
    fi
    [ "$i" -gt 0 ] || continue
    play "$side-vs-a" "model:$out/$side.yari:$sims" "model:$out/a.yari:$sims" "$games" 4101
    if [ "$fsf_games" -gt 0 ]; then
        for rung in "${rungs[@]}"; do
            t=$(tag_of "$rung")
            play "a-vs-$t" "model:$out/a.yari:$sims" "$rung" "$fsf_games" 4102
            play "$side-vs-$t" "model:$out/$side.yari:$sims" "$rung" "$fsf_games" 4102
        done
    fi
done

python3 - "$out" "$minutes" "$sims" "${rungs[*]}" "${configs[@]}" <<'PY' | tee "$out/result.md"
import json, math, os, re, sys
out, minutes, sims, rungs, *configs = sys.argv[1:]
rungs = rungs.split()
sides = "abcdefghijklmnopqrstuvwxyz"[: len(configs)]
def run_line(side, cfg):
    summ = os.path.join(out, side, "summary.json")
    rows = json.load(open(summ)) if os.path.exists(summ) else []
    games = sum(r.get("games", 0) for r in rows)
    binary = os.environ.get("AB_YARI_" + side)
    label = f"`{cfg}`" + (f" (binary `{binary}`)" if binary else "")
    return f"| {side.upper()} | {label} | {len(rows)} | {games} |"
def elo(x):
    return "+inf" if x >= 1 else "-inf" if x <= 0 else f"{-400 * math.log10(1 / x - 1):+.0f}"
def score(tag):
    p = os.path.join(out, tag + ".json")
    if not os.path.exists(p):
        return "not played"
    r = json.load(open(p))
    g, s = r["games"], r["score"]
    # 95% Wilson interval of the score.
    z = 1.96
    d = 1 + z * z / g
    c = (s + z * z / (2 * g)) / d
    h = z * ((s * (1 - s) / g + z * z / (4 * g * g)) ** 0.5) / d
    return (f"{r['wins']}-{r['draws']}-{r['losses']} of {g}: {100 * s:.1f}% "
            f"[{100 * (c - h):.1f}, {100 * (c + h):.1f}], Elo {elo(s)} [{elo(c - h)}, {elo(c + h)}]")
print(f"A/B, {minutes} minutes a run, matches at {sims} simulations a move")
print()
print("| run | config | generations | self-play games |")
print("|---|---|---|---|")
for side, cfg in zip(sides, configs):
    print(run_line(side, cfg))
print()
print("| match | result for the first player (95% interval) |")
print("|---|---|")
for side in sides[1:]:
    print(f"| {side.upper()} against A | {score(side + '-vs-a')} |")
for rung in rungs:
    tag = re.sub(r"[^A-Za-z0-9]", "_", rung)
    for side in sides:
        print(f"| {side.upper()} against `{rung}` | {score(side + '-vs-' + tag)} |")
PY
