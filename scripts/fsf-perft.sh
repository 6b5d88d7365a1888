#!/usr/bin/env bash
# Fairy-Stockfish's perft for a position, for side-by-side speed and count checks against
# `yari perft` / `yari bench perft`. Needs the npm build:
#   npm install --prefix .fsf fairy-stockfish-nnue.wasm
# usage: scripts/fsf-perft.sh DEPTH [FEN]    (prints FSF's "Nodes searched" line and the time)
set -euo pipefail
depth=${1:?usage: fsf-perft.sh DEPTH [FEN]}
fen=${2:-"rnnkbbr/7/ppppppp/7/7/7/PPPPPPP/7/RBBKNNR[] w - - 0 1"}
js=${YARI_FSF_JS:-.fsf/node_modules/fairy-stockfish-nnue.wasm/uci.js}
[ -f "$js" ] || { echo "no Fairy-Stockfish at $js (see the comment at the top)" >&2; exit 1; }
out=$(mktemp)
trap 'rm -f "$out"' EXIT
start=$(date +%s.%N)
{
  printf 'uci\nsetoption name UCI_Variant value yarishogi\nisready\n'
  printf 'position fen %s\ngo perft %s\n' "$fen" "$depth"
  # The engine answers asynchronously: keep stdin open until it has printed the total.
  until grep -q "Nodes searched" "$out" 2>/dev/null; do sleep 0.05; done
  echo quit
} | node --no-experimental-fetch "$js" > "$out"
end=$(date +%s.%N)
grep "Nodes searched" "$out"
echo "wall time (engine start-up included): $(echo "$end - $start" | bc) s"
