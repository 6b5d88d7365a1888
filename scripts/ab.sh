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
# One match's interval counts only the games' noise, not the runs': two runs of one config
# with other seeds differ by more than it (docs/experiments.md, session 29). AB_SEEDS=N trains
# every config N times with N seeds; B's k-th run plays A's k-th, and the table pools the N
# pairs with an interval from the spread of their scores, which counts both.
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
#   AB_SEEDS      runs of each config (default 1): run 0 keeps the config's seeds, run k >= 1
#                 adds k to its [selfplay] seed and [train] seed (default.toml's if it sets none)
#                 and is named SIDEk (a1, b1, ...); all runs of seed k come before k + 1's,
#                 so a stopped script leaves whole pairs; seed k's matches are played from
#                 their own openings (match seeds 4101 + 1000 k and 4102 + 1000 k); a pair
#                 shares its seeds where the two files do, so a null test (B = A's config)
#                 needs B's file to set other seeds
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
seeds=${AB_SEEDS:-1}
[[ $seeds =~ ^[1-9][0-9]*$ ]] || { echo "AB_SEEDS must be a whole number >= 1, not '$seeds'" >&2; exit 2; }
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

# The run of side $1 with seed $2: the side's letter, then the seed when it is not 0.
run_id() {
    if [ "$2" -eq 0 ]; then printf '%s' "$1"; else printf '%s%s' "$1" "$2"; fi
}

# Config $1 with run.max_hours replaced and, for seed $2 > 0, both seeds moved on by it (tomllib
# reads it; the writer below covers what run configs hold: tables, strings, numbers, booleans
# and flat arrays).
derive() {
    python3 - "$1" "$minutes" "$2" <<'PY'
import sys, tomllib, json
cfg = tomllib.load(open(sys.argv[1], "rb"))
cfg.setdefault("run", {})["max_hours"] = float(sys.argv[2]) / 60.0
cfg["run"]["generations"] = 0
k = int(sys.argv[3])
if k > 0:
    # A seed the file leaves out is configs/default.toml's, which the binary lays under it.
    default = tomllib.load(open("configs/default.toml", "rb"))
    for section in ("selfplay", "train"):
        t = cfg.setdefault(section, {})
        t["seed"] = t.get("seed", default[section]["seed"]) + k
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
for ((k = 0; k < seeds; k++)); do
    base=$(run_id a "$k")
    for i in "${!configs[@]}"; do
        side=${sides[$i]}
        id=$(run_id "$side" "$k")
        cfg=${configs[$i]}
        run_yari=$(side_yari "$side")
        if [ ! -f "$out/$id.yari" ]; then
            derive "$cfg" "$k" >"$out/$id.toml"
            stamp "run $id: $cfg, seed $k, for $minutes minutes into $out/$id ($run_yari)"
            # The whole output goes to OUT/ID.log, the generation lines to the terminal; a run
            # that fails stops the script with its error rather than exporting nothing.
            set +e
            "$run_yari" run --config "$out/$id.toml" --run-dir "$out/$id" 2>&1 | tee "$out/$id.log" |
                tr '\r' '\n' | grep -E "^\[.*(== generation|budget|rating .* against|vs )"
            status=${PIPESTATUS[0]}
            set -e
            if [ "$status" -ne 0 ]; then
                grep -m 1 '^Error' "$out/$id.log" >&2 || tail -n 5 "$out/$id.log" >&2
                echo "run $id ($cfg) failed with exit $status; its output is in $out/$id.log" >&2
                exit 1
            fi
            "$run_yari" export --run-dir "$out/$id" --out "$out/$id.yari.tmp" >/dev/null
            mv "$out/$id.yari.tmp" "$out/$id.yari"
        fi
        [ "$i" -gt 0 ] || continue
        play "$id-vs-$base" "model:$out/$id.yari:$sims" "model:$out/$base.yari:$sims" "$games" $((4101 + 1000 * k))
        if [ "$fsf_games" -gt 0 ]; then
            for rung in "${rungs[@]}"; do
                t=$(tag_of "$rung")
                play "$base-vs-$t" "model:$out/$base.yari:$sims" "$rung" "$fsf_games" $((4102 + 1000 * k))
                play "$id-vs-$t" "model:$out/$id.yari:$sims" "$rung" "$fsf_games" $((4102 + 1000 * k))
            done
        fi
    done
done

python3 - "$out" "$minutes" "$sims" "$seeds" "${rungs[*]}" "${configs[@]}" <<'PY' | tee "$out/result.md"
import json, math, os, re, sys
out, minutes, sims, seeds, rungs, *configs = sys.argv[1:]
seeds = int(seeds)
rungs = rungs.split()
sides = "abcdefghijklmnopqrstuvwxyz"[: len(configs)]
def run_id(side, k):
    return side if k == 0 else f"{side}{k}"
def run_line(side, k, cfg):
    summ = os.path.join(out, run_id(side, k), "summary.json")
    rows = json.load(open(summ)) if os.path.exists(summ) else []
    games = sum(r.get("games", 0) for r in rows)
    binary = os.environ.get("AB_YARI_" + side)
    label = f"`{cfg}`" + (f" (binary `{binary}`)" if binary else "")
    return f"| {run_id(side, k).upper()} | {label} | {k} | {len(rows)} | {games} |"
def elo(x):
    return "+inf" if x >= 1 else "-inf" if x <= 0 else f"{-400 * math.log10(1 / x - 1):+.0f}"
def interval(lo, mid, hi):
    return f"{100 * mid:.1f}% [{100 * lo:.1f}, {100 * hi:.1f}], Elo {elo(mid)} [{elo(lo)}, {elo(hi)}]"
def load(tag):
    p = os.path.join(out, tag + ".json")
    return json.load(open(p)) if os.path.exists(p) else None
def wilson(w, d, l):
    g = w + d + l
    s = (w + d / 2) / g
    z = 1.96
    den = 1 + z * z / g
    c = (s + z * z / (2 * g)) / den
    h = z * ((s * (1 - s) / g + z * z / (4 * g * g)) ** 0.5) / den
    return f"{w}-{d}-{l} of {g}: " + interval(c - h, s, c + h)
def score(tag):
    r = load(tag)
    return "not played" if r is None else wilson(r["wins"], r["draws"], r["losses"])
# Student's t at 97.5% for 1..30 degrees of freedom (then the normal's 1.96).
T975 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179,
        2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
        2.060, 2.056, 2.052, 2.048, 2.045, 2.042]
def pooled(tags):
    """The pairs' matches as one: their sum, and the mean of their scores with a t interval
    from the scores' spread (runs and games both vary between pairs)."""
    rs = [r for r in map(load, tags) if r is not None]
    if not rs:
        return "not played"
    w, d, l = (sum(r[k] for r in rs) for k in ("wins", "draws", "losses"))
    line = f"{len(rs)} of {len(tags)} pairs, " + wilson(w, d, l) + " (games pooled)"
    if len(rs) < 2:
        return line
    xs = [r["score"] for r in rs]
    n = len(xs)
    m = sum(xs) / n
    sd = (sum((x - m) ** 2 for x in xs) / (n - 1)) ** 0.5
    t = T975[n - 2] if n - 1 <= len(T975) else 1.96
    h = t * sd / n ** 0.5
    lo, hi = max(m - h, 0.0), min(m + h, 1.0)
    # The spread one match's games alone would give; what the pairs show beyond it is the runs'.
    games_sd = (sum(r["score"] * (1 - r["score"]) / r["games"] for r in rs) / n) ** 0.5
    runs_sd = max(sd * sd - games_sd * games_sd, 0.0) ** 0.5
    return (line + f"; mean of the pairs' scores " + interval(lo, m, hi)
            + f" (t, {n - 1} df); the pairs' SD {100 * sd:.1f} points, games alone"
            f" {100 * games_sd:.1f}, so runs {100 * runs_sd:.1f}")
seed_note = f", {seeds} seeds a config" if seeds > 1 else ""
print(f"A/B, {minutes} minutes a run, matches at {sims} simulations a move{seed_note}")
print()
print("| run | config | seed | generations | self-play games |")
print("|---|---|---|---|---|")
for k in range(seeds):
    for side, cfg in zip(sides, configs):
        print(run_line(side, k, cfg))
print()
print("| match | result for the first player (95% interval) |")
print("|---|---|")
for side in sides[1:]:
    pairs = [(run_id(side, k), run_id("a", k)) for k in range(seeds)]
    for x, a in pairs:
        print(f"| {x.upper()} against {a.upper()} | {score(x + '-vs-' + a)} |")
    if seeds > 1:
        print(f"| **{side.upper()} against A, pooled** | {pooled([x + '-vs-' + a for x, a in pairs])} |")
for rung in rungs:
    tag = re.sub(r"[^A-Za-z0-9]", "_", rung)
    for side in sides:
        ids = [run_id(side, k) for k in range(seeds)]
        for x in ids:
            print(f"| {x.upper()} against `{rung}` | {score(x + '-vs-' + tag)} |")
        if seeds > 1:
            rs = [r for r in (load(x + "-vs-" + tag) for x in ids) if r is not None]
            if rs:
                w, d, l = (sum(r[k] for r in rs) for k in ("wins", "draws", "losses"))
                print(f"| **{side.upper()} against `{rung}`, pooled** | {len(rs)} runs, {wilson(w, d, l)} |")
PY
