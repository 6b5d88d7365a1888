#!/usr/bin/env bash
# How strong is a network? Plays it with the engine's default search (PUCT, 1600 simulations,
# as `yari play` and `yari uci`) against the fixed baselines, and prints one JSON line per match
# (`yari arena --json`: wins, draws, losses, score, Elo with its 95% interval).
#
# usage: scripts/strength.sh MODEL [GAMES] [SIMS] [BASELINE...]
#   defaults: GAMES=100, SIMS=1600, baselines random and alphabeta:2
#   YARI (env): the yari binary, default target/release/yari
#   e.g. scripts/strength.sh data/models/default.yari 100 1600 random alphabeta:2 'fsf[nodes=100]'
set -euo pipefail
model=${1:?usage: strength.sh MODEL [GAMES] [SIMS] [BASELINE...]}
games=${2:-100}
sims=${3:-1600}
shift $(($# < 3 ? $# : 3))
baselines=("$@")
[ ${#baselines[@]} -gt 0 ] || baselines=(random alphabeta:2)
yari=${YARI:-target/release/yari}
[ -x "$yari" ] || { echo "no yari binary at $yari (cargo build --release -p yari-cli)" >&2; exit 1; }
[ -f "$model" ] || { echo "no model file $model" >&2; exit 1; }
for b in "${baselines[@]}"; do
  "$yari" arena --a "model:$model:$sims" --b "$b" --games "$games" --json | tail -n 1
done
