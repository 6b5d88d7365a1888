#!/usr/bin/env bash
# Self-play throughput of the two ways to run one config on this machine, back to back:
#   A. `yari run` (self-play, then train, gate and rate, in one process), and
#   B. `yari learn` plus WORKERS `yari worker` processes on one run directory.
# Prints, for each: self-play positions (training positions, as summary.json counts them) per
# second of wall time, and per second of self-play time (A: its self-play phases; B: the sum
# over workers of positions / their self-play seconds).
#
#   scripts/slurm/throughput.sh [CONFIG] [GENERATIONS]
# Knobs (environment): YARI (default target/debug/yari), WORKERS (default 2), THREADS (the
# self-play threads of A; B gives each worker THREADS / WORKERS, at least 1, and the learner 1).
set -euo pipefail
cd "$(dirname "$0")/../.."
CONFIG=${1:-configs/smoke.toml}
GENERATIONS=${2:-10}
YARI=${YARI:-target/debug/yari}
WORKERS=${WORKERS:-2}
THREADS=${THREADS:-$(nproc)}
PER_WORKER=$(( THREADS / WORKERS > 0 ? THREADS / WORKERS : 1 ))
TMP=$(mktemp -d /tmp/yari-throughput.XXXXXX)
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$TMP"' EXIT

sed "s/^generations = .*/generations = $GENERATIONS/; s/^max_hours = .*/max_hours = 0.0/" "$CONFIG" >"$TMP/config.toml"
echo "config $CONFIG with $GENERATIONS generations; load before: $(cut -d' ' -f1-3 /proc/loadavg)"

t0=$(date +%s.%N)
RAYON_NUM_THREADS=$THREADS "$YARI" run --config "$TMP/config.toml" --run-dir "$TMP/a" 2>"$TMP/a.log"
t1=$(date +%s.%N)
echo "A done; load: $(cut -d' ' -f1-3 /proc/loadavg)"

"$YARI" learn --run-dir "$TMP/b" --config "$TMP/config.toml" --init 2>/dev/null
t2=$(date +%s.%N)
for ((i = 0; i < WORKERS; i++)); do
    RAYON_NUM_THREADS=$PER_WORKER "$YARI" worker --run-dir "$TMP/b" --tag "w$i" 2>"$TMP/w$i.log" &
    pids+=($!)
done
RAYON_NUM_THREADS=1 "$YARI" learn --run-dir "$TMP/b" 2>"$TMP/b.log"
for p in "${pids[@]}"; do wait "$p"; done
t3=$(date +%s.%N)
echo "B done; load: $(cut -d' ' -f1-3 /proc/loadavg)"

python3 - "$TMP" "$t0" "$t1" "$t2" "$t3" "$THREADS" "$WORKERS" "$PER_WORKER" <<'EOF'
import glob, json, sys
tmp, t0, t1, t2, t3 = sys.argv[1], *map(float, sys.argv[2:6])
threads, workers, per = sys.argv[6:9]
a = json.load(open(f"{tmp}/a/summary.json"))
a_pos = sum(g["positions"] for g in a)
a_sp = sum(g["selfplay_s"] for g in a)
st = [json.load(open(p)) for p in glob.glob(f"{tmp}/b/workers/*.json")]
b_pos = sum(s["positions"] for s in st)
b_taken = sum(g["positions"] for g in json.load(open(f"{tmp}/b/summary.json")))
b_rate = sum(s["positions"] / s["selfplay_s"] for s in st if s["selfplay_s"] > 0)
wa, wb = t1 - t0, t3 - t2
print(f"A yari run ({threads} threads): {a_pos} positions in {wa:.1f} s wall = {a_pos / wa:.0f}/s; "
      f"self-play phases {a_sp:.1f} s = {a_pos / a_sp:.0f}/s")
print(f"B learn + {workers} workers ({per} thread(s) each): {b_pos} positions written in {wb:.1f} s wall = "
      f"{b_pos / wb:.0f}/s ({b_taken} taken by the learner = {b_taken / wb:.0f}/s); "
      f"sum of worker self-play rates {b_rate:.0f}/s")
print(f"B/A wall rate {b_pos / wb / (a_pos / wa):.2f}; B/A self-play rate {b_rate / (a_pos / a_sp):.2f}")
EOF
