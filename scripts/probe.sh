#!/usr/bin/env bash
# A hostile probe of the `yari` binary, the classes of issue 38: kills during a run, a full disk
# (a small tmpfs), FIFOs and links where files should be, closed pipes, huge numbers, and UCI
# commands during a search. Every case runs under a timeout; the tally at the end counts
# panics (exit 101 or "panicked"), aborts (exit 134), hangs (the timeout) and lost files
# (`yari check` reporting damage after an ordinary kill, or games missing after a resume).
#
#   scripts/probe.sh [YARI_BINARY]     (default target/release/yari; the tmpfs case needs root)
set -uo pipefail
cd "$(dirname "$0")/.."
YARI=$(realpath "${1:-target/release/yari}")
SMOKE=$PWD/configs/smoke.toml
WORK=$(mktemp -d)
trap 'umount "$WORK/full" 2>/dev/null; rm -rf "$WORK"' EXIT
cases=0 panics=0 aborts=0 hangs=0 lost=0 failed=0

# run NAME TIMEOUT EXPECT COMMAND...: EXPECT is ok (exit 0), err (a clean non-zero exit with a
# message), or any (exit 0 or a clean error; for closed pipes, 141 counts as clean too).
run() {
  local name=$1 limit=$2 expect=$3
  shift 3
  cases=$((cases + 1))
  local out="$WORK/out.$cases"
  timeout -k 5 "$limit" bash -c "$*" >"$out" 2>&1
  local rc=$?
  local verdict=ok
  if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
    hangs=$((hangs + 1)); verdict=HANG
  elif [ $rc -eq 101 ] || grep -q "panicked" "$out"; then
    panics=$((panics + 1)); verdict=PANIC
  elif [ $rc -eq 134 ]; then
    aborts=$((aborts + 1)); verdict=ABORT
  elif [ "$expect" = ok ] && [ $rc -ne 0 ]; then
    failed=$((failed + 1)); verdict=FAILED
  elif [ "$expect" = err ] && [ $rc -eq 0 ]; then
    failed=$((failed + 1)); verdict=ACCEPTED
  elif [ "$expect" = err ] && ! [ -s "$out" ]; then
    failed=$((failed + 1)); verdict=SILENT
  fi
  printf '%-8s rc=%-3s %s: %s\n' "$verdict" "$rc" "$name" "$(grep -v '^\s*$' "$out" | tail -1 | cut -c1-110)"
}

echo "== kills: SIGKILL at a random moment of each of 16 smoke runs, yari check after each kill"
# The smoke run takes about a second: each kill lands somewhere in its first 0.9 s, in its own
# run directory, which is then checked, resumed to its end and checked again.
for i in $(seq 1 16); do
  K=$WORK/killed$i
  "$YARI" run --config "$SMOKE" --run-dir "$K" >/dev/null 2>&1 &
  pid=$!
  t=$(awk -v s=$i 'BEGIN { srand(s); printf "%.2f", 0.02 + rand() * 0.9 }')
  sleep "$t"
  kill -9 $pid 2>/dev/null
  wait $pid 2>/dev/null
  at=$(tr -d ' \n' <"$K/state.json" 2>/dev/null | grep -o '"generation":[0-9]*,"phase":"[a-z]*"' | tr -d '"')
  echo "   kill $i after ${t}s: ${at:-no state yet}$([ -f "$K/finished" ] && echo ', run finished')"
  if [ -f "$K/state.json" ]; then
    cases=$((cases + 1))
    if ! timeout 60 "$YARI" check "$K" >"$WORK/check.$i" 2>&1; then
      lost=$((lost + 1)); echo "DAMAGE after kill $i: $(tail -2 "$WORK/check.$i")"
    fi
  fi
  cases=$((cases + 1))
  if ! timeout 300 "$YARI" run --config "$SMOKE" --run-dir "$K" >"$WORK/resume.$i" 2>&1 ||
    ! timeout 60 "$YARI" check "$K" >"$WORK/check.$i" 2>&1; then
    lost=$((lost + 1)); echo "NOT RESUMED after kill $i: $(tail -n 2 "$WORK/resume.$i" "$WORK/check.$i")"
  fi
done
R=$WORK/killed1
run "check after the resumed runs" 60 ok "'$YARI' check '$R'"
for i in $(seq 1 16); do echo "$i $("$YARI" games "$WORK/killed$i" 2>/dev/null | grep -c .)"; done |
  awk '{ n[$2]++ } END { for (k in n) printf "   games listed by yari games: %s in %d of 16 runs\n", k, n[k] }'

echo "== a full disk: a 3 MB tmpfs"
mkdir -p "$WORK/full"
if mount -t tmpfs -o size=3m tmpfs "$WORK/full" 2>/dev/null; then
  run "run on a full disk" 300 err "'$YARI' run --config '$SMOKE' --run-dir '$WORK/full/run'"
  run "export onto a full disk" 60 any "'$YARI' export --run-dir '$R' --out '$WORK/full/x.yari'"
  run "plot onto a full disk" 60 any "cp -r '$R' '$WORK/full/copy' 2>/dev/null; '$YARI' plot '$WORK/full/copy'"
  leftovers=$(find "$WORK/full" -name '*.tmp' | wc -l)
  echo "   temporary files left on the full disk: $leftovers"
  umount "$WORK/full"
else
  echo "   (skipped: mounting a tmpfs needs root)"
fi

echo "== FIFOs, links and special files where files should be"
mkfifo "$WORK/fifo.toml"
run "--config a FIFO" 20 err "'$YARI' run --config '$WORK/fifo.toml' --run-dir '$WORK/f1'"
run "--config /dev/zero" 20 err "'$YARI' run --config /dev/zero --run-dir '$WORK/f2'"
F=$WORK/fiforun; cp -r "$R" "$F"; rm "$F/state.json"; mkfifo "$F/state.json"
run "state.json a FIFO: run" 20 err "'$YARI' run --run-dir '$F'"
run "state.json a FIFO: check" 20 err "'$YARI' check '$F'"
M=$WORK/metricsfifo; cp -r "$R" "$M"; rm "$M/metrics.jsonl"; mkfifo "$M/metrics.jsonl"
run "metrics.jsonl a FIFO: plot" 20 any "'$YARI' plot '$M'"
L=$WORK/linked; cp -r "$R" "$L"; ln -s / "$L/games/root"
run "games/root -> /: check" 60 any "'$YARI' check '$L'"
run "--run-dir a file" 20 err "touch '$WORK/afile'; '$YARI' run --config '$SMOKE' --run-dir '$WORK/afile'"

echo "== closed pipes"
for cmd in "check '$R'" "ratings '$R'" "games '$R'" "games '$R' --pgn" "plot '$R'" "perft 4" \
  "rules --help" "arena --a random --b random --games 40"; do
  run "yari $cmd | head -1" 120 any "'$YARI' $cmd | head -c 1 >/dev/null; exit \${PIPESTATUS[0]}"
done

echo "== huge and nonsense numbers"
run "perft 3531" 20 err "'$YARI' perft 3531"
run "arena --games 18446744073709551615" 20 err "'$YARI' arena --a random --b random --games 18446744073709551615"
run "arena --games 2000000000" 20 err "'$YARI' arena --a random --b random --games 2000000000"
run "arena --sprt nan,inf" 20 err "'$YARI' arena --a random --b random --sprt nan,inf"
run "arena --sprt 5,1" 20 err "'$YARI' arena --a random --b random --sprt 5,1"
run "YARI_BENCH_SECONDS=1e30" 20 err "YARI_BENCH_SECONDS=1e30 '$YARI' bench selfplay"
run "--cpu-path fp8" 20 err "'$YARI' --cpu-path fp8 bench nn"
run "--train-path gpu" 20 err "'$YARI' --train-path gpu train --run-dir '$R' --steps 1"
run "serve --port 99999" 20 err "'$YARI' serve --port 99999"
printf '[run]\nname = ".."\n' >"$WORK/dots.toml"
run "run.name = .." 20 err "'$YARI' run --config '$WORK/dots.toml'"
printf '[run]\ngames_per_generation = 1e30\n' >"$WORK/huge.toml"
run "games_per_generation = 1e30" 20 err "'$YARI' run --config '$WORK/huge.toml' --run-dir '$WORK/h'"
S=$WORK/bigstate; cp -r "$R" "$S"
sed -i 's/"generation": *[0-9]*/"generation": 4294967295/' "$S/state.json"
run "state.json generation 4294967295" 20 err "'$YARI' run --run-dir '$S'"

echo "== UCI during a search"
cat >"$WORK/uci_latency.py" <<'PY'
# Seconds from commands sent mid-search (`;`-separated) to the answer to the isready after them.
import subprocess, sys, time
yari, during = sys.argv[1], sys.argv[2]
p = subprocess.Popen([yari, "uci", "--model", "uniform"], stdin=subprocess.PIPE,
                     stdout=subprocess.PIPE, text=True, bufsize=1)
def send(s): p.stdin.write(s + "\n"); p.stdin.flush()
def until(word, limit):
    end = time.time() + limit
    while time.time() < end:
        line = p.stdout.readline()
        if line.startswith(word):
            return line
    raise SystemExit(f"no {word}")
send("uci"); until("uciok", 10)
send("position startpos"); send("go movetime 20000"); time.sleep(0.3)
t = time.time()
for c in during.split(";"):
    send(c)
send("isready"); until("readyok", 30)
took = time.time() - t
send("stop"); send("isready"); until("readyok", 30); send("quit"); p.wait(10)
print(f"readyok {took:.3f} s after '{during}'")
sys.exit(0 if took < 2 else 1)
PY
for during in "position startpos moves d3d4" "ucinewgame" "setoption name MultiPV value 2"; do
  run "uci: $during during a search" 60 ok "python3 '$WORK/uci_latency.py' '$YARI' '$during'"
done
run "uci: go searchmoves" 30 ok "printf 'position startpos\ngo nodes 100 searchmoves a3a4\n' | '$YARI' uci --model uniform | grep -q '^bestmove a3a4'"
run "uci: go ponder, ponderhit" 30 ok "(printf 'position startpos\ngo ponder movetime 200\n'; sleep 1; printf 'ponderhit\n') | '$YARI' uci --model uniform | grep -q '^bestmove'"
run "uci: a drawn root" 30 ok "printf 'position startpos moves d1d2 d9d8 d2d1 d8d9 d1d2 d9d8 d2d1 d8d9\ngo nodes 50\n' | '$YARI' uci --model uniform | grep -q 'score cp 0'"

echo
echo "probe: $cases cases: $panics panics, $aborts aborts, $hangs hangs, $lost lost or damaged after a kill, $failed other failures"
[ $((panics + aborts + hangs + lost + failed)) -eq 0 ]
