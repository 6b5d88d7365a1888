#!/usr/bin/env bash
# Measures the GPU path on the machine it runs on and writes a small JSON summary: the adapter,
# `yari bench nn` (a sweep of net sizes and batches on each GPU device), `yari bench selfplay`
# and `yari bench train` with configs/gpu.toml on each device (CPU included, on all its cores),
# then a short real run of configs/gpu.toml (two generations, sizes cut as below).
#
# Made for a bare machine with a GPU and no network, where minutes are scarce: it builds
# nothing there. Build here, carry the binary, run it there:
#   cargo build --release -p yari-cli --features cuda,wgpu
#   mkdir -p .gpu-check && cp target/release/yari .gpu-check/ && strip .gpu-check/yari
#   GPU_CHECK_BIN=.gpu-check/yari scripts/gpu-check.sh
# The CUDA device needs the NVIDIA driver, NVRTC and the CUDA headers (a CUDA toolkit, or
# scripts/cuda-runtime.sh's .cuda/, sourced from .cuda/env.sh when present); wgpu needs the
# Vulkan loader and a driver (NVIDIA's ships its own Vulkan driver; without a GPU, Mesa's
# software device: apt-get install -y libvulkan1 mesa-vulkan-drivers).
#
# Every step has its own time limit and a failed step does not stop the others: its status is
# in the summary. Environment (defaults for a large GPU; on lavapipe use small values, e.g.
#   GPU_CHECK_DEVICES="wgpu flex" GPU_CHECK_NETS=2x16 GPU_CHECK_NN_BATCHES=16,64
#   GPU_CHECK_BLOCKS=2 GPU_CHECK_CHANNELS=16 GPU_CHECK_CONCURRENT=64 GPU_CHECK_BATCH=128
#   GPU_CHECK_GAMES=16 GPU_CHECK_SIMS=8 GPU_CHECK_STEPS=20 GPU_CHECK_GATE_GAMES=4
#   GPU_CHECK_RATING_GAMES=2 GPU_CHECK_BENCH_SECONDS=5):
#   GPU_CHECK_BIN            the `yari` to run (default: target/release/yari)
#   GPU_CHECK_OUT            where summary.json and log.txt go (default: $OUT, else gpu-check-out)
#   GPU_CHECK_DEVICES        devices to measure, GPU ones first (default: "cuda wgpu flex")
#   GPU_CHECK_NETS           nets of the forward-pass sweep on GPU devices (6x64 10x128)
#   GPU_CHECK_NN_BATCHES     batches of that sweep (256,1024,4096)
#   GPU_CHECK_BLOCKS/CHANNELS  the net of the self-play, training and run steps (gpu.toml's)
#   GPU_CHECK_CONCURRENT     self-play games in flight (gpu.toml's)
#   GPU_CHECK_BATCH          training batch (gpu.toml's)
#   GPU_CHECK_BENCH_SECONDS  each self-play bench (10)
#   GPU_CHECK_RUN_DEVICE     device of the short run (the first GPU device listed)
#   GPU_CHECK_GAMES, _SIMS, _STEPS, _GATE_GAMES, _RATING_GAMES  the short run's generation
#                            (games 64, full sims 32 with cheap sims a quarter, 50 steps,
#                            gate 10 games, rating 4 games per baseline)
# The defaults are cut from the first H200 run (552 s with a 20x256 sweep and a 10x128 run that hit
# its limit, docs/experiments.md "GPU") to aim at about 6 minutes there; not yet run at these sizes.
set -uo pipefail
cd "$(dirname "$0")/.."

bin=${GPU_CHECK_BIN:-target/release/yari}
out=${GPU_CHECK_OUT:-${OUT:-gpu-check-out}}
mkdir -p "$out"
summary=$out/summary.jsonl
log=$out/log.txt
: >"$summary"
: >"$log"
work=$(mktemp -d "${TMPDIR:-/tmp}/gpu-check.XXXXXX")
trap 'rm -rf "$work"' EXIT
started=$(date +%s)
# Mesa's Vulkan loader complains on every start without one (harmless, but it buries the output).
export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-$work}
# An error says what is missing in one line; a panic still prints its backtrace.
export RUST_LIB_BACKTRACE=${RUST_LIB_BACKTRACE:-0}
# NVRTC and the CUDA headers: scripts/cuda-runtime.sh's folder, else a CUDA toolkit whose
# libraries the dynamic loader may not search by itself.
if [ -f .cuda/env.sh ]; then
    . .cuda/env.sh
elif [ -z "${CUDA_PATH:-}" ] && ! ldconfig -p 2>/dev/null | grep -q 'libnvrtc\.so'; then
    for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
        [ -e "$d/libnvrtc.so" ] || ls "$d"/libnvrtc.so.* >/dev/null 2>&1 || continue
        export LD_LIBRARY_PATH=$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
        break
    done
fi
stamp() { echo "[$(($(date +%s) - started)) s] $*" | tee -a "$log"; }

if ! [ -x "$bin" ]; then
    echo "gpu-check: no yari binary at $bin (set GPU_CHECK_BIN; see the header)" >&2
    exit 2
fi

# One step: `step NAME LIMIT_S COMMAND...`. Its stdout's last JSON line goes to the summary
# under NAME with its wall time and exit status; everything it prints goes to the log.
step() {
    local name=$1 limit=$2
    shift 2
    stamp "== $name"
    local t0=$(date +%s) rc=0
    timeout "$limit" "$@" >"$work/stdout" 2>"$work/stderr" || rc=$?
    cat "$work/stderr" "$work/stdout" | tr '\r' '\n' >>"$log"
    local result
    result=$(grep -E '^\{' "$work/stdout" | tail -n 1)
    [ -n "$result" ] || result=null
    local status=ok
    [ "$rc" = 0 ] || status="failed (exit $rc$([ "$rc" = 124 ] && echo ', time limit'))"
    [ "$status" = ok ] || tail -n 5 "$work/stderr" | sed 's/^/    /'
    printf '{"step":"%s","status":"%s","seconds":%d,"result":%s}\n' \
        "$name" "$status" $(($(date +%s) - t0)) "$result" >>"$summary"
    echo "   $status in $(($(date +%s) - t0)) s" | tee -a "$log"
}

# configs/gpu.toml with the given `section.key=value` overrides (the file's own layout kept).
derive() {
    awk -v overrides="$*" '
        BEGIN { n = split(overrides, kv, " "); for (i = 1; i <= n; i++) { split(kv[i], p, "="); want[p[1]] = p[2] } }
        /^\[/ { section = $0; gsub(/[\[\] ]/, "", section) }
        {
            if (match($0, /^[a-z_]+ *=/)) {
                key = $0; sub(/ *=.*/, "", key)
                full = section "." key
                if (full in want) { print key " = " want[full]; seen[full] = 1; next }
            }
            print
        }
        END { for (k in want) if (!(k in seen)) { print "missing key " k > "/dev/stderr"; exit 1 } }
    ' configs/gpu.toml
}

stamp "== adapter"
{
    command -v nvidia-smi >/dev/null &&
        nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader
    command -v vulkaninfo >/dev/null &&
        vulkaninfo --summary 2>/dev/null | grep -E "deviceName|driverName|apiVersion"
    nproc | sed 's/^/cpu cores: /'
    echo "CUDA_PATH=${CUDA_PATH:-} LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}"
    ldconfig -p 2>/dev/null | grep -E 'libcuda\.so|libnvrtc\.so|libvulkan\.so' | head -n 6
} 2>&1 | tee -a "$log"

net=()
[ -n "${GPU_CHECK_BLOCKS:-}" ] && net+=("train.net.blocks=$GPU_CHECK_BLOCKS")
[ -n "${GPU_CHECK_CHANNELS:-}" ] && net+=("train.net.channels=$GPU_CHECK_CHANNELS")
[ -n "${GPU_CHECK_CONCURRENT:-}" ] && net+=("selfplay.concurrent_games=$GPU_CHECK_CONCURRENT"
    "selfplay.eval_chunk=$(((GPU_CHECK_CONCURRENT + 1) / 2))")
[ -n "${GPU_CHECK_BATCH:-}" ] && net+=("train.batch_size=$GPU_CHECK_BATCH")
derive "${net[@]}" >"$work/gpu.toml" || exit 2
# The same, evaluated in lock step: what the pipeline gains.
derive "${net[@]}" "selfplay.pipeline_groups=1" >"$work/gpu-lockstep.toml" || exit 2
# On the CPU the batch is split into chunks of 64, one per core, in lock step (default.toml's
# way), so that every core computes the network.
derive "${net[@]}" "selfplay.pipeline_groups=1" "selfplay.eval_chunk=64" >"$work/cpu.toml" || exit 2

devices=(${GPU_CHECK_DEVICES:-cuda wgpu flex})
export YARI_BENCH_SECONDS=${GPU_CHECK_BENCH_SECONDS:-10}
gpus=()
for d in "${devices[@]}"; do [ "$d" = flex ] || [ "$d" = ndarray ] || gpus+=("$d"); done

for d in "${gpus[@]}"; do
    for n in ${GPU_CHECK_NETS:-6x64 10x128}; do
        step "nn $d $n" 120 "$bin" --device "$d" bench nn --device-only --json --net "$n" \
            --batch "${GPU_CHECK_NN_BATCHES:-256,1024,4096}"
    done
done
for d in "${devices[@]}"; do
    config=$work/gpu.toml
    case "$d" in flex | ndarray) config=$work/cpu.toml ;; esac
    step "selfplay $d" 90 "$bin" --device "$d" bench selfplay --json --config "$config"
    if [ "$config" = "$work/gpu.toml" ]; then
        step "selfplay $d lockstep" 90 "$bin" --device "$d" bench selfplay --json \
            --config "$work/gpu-lockstep.toml"
    fi
done
for d in "${devices[@]}"; do
    step "train $d" 90 "$bin" --device "$d" bench train --json --config "$work/gpu.toml"
done

games=${GPU_CHECK_GAMES:-64}
sims=${GPU_CHECK_SIMS:-32}
steps=${GPU_CHECK_STEPS:-50}
run_device=${GPU_CHECK_RUN_DEVICE:-${gpus[0]:-flex}}
run_overrides=("${net[@]}"
    "run.name=\"gpu-check\"" "run.generations=2" "run.max_hours=1.0"
    "run.games_per_generation=$games"
    "selfplay.full_simulations=$sims" "selfplay.cheap_simulations=$(((sims + 3) / 4))"
    "selfplay.games_per_shard=$(((games + 1) / 2))"
    "train.steps_per_generation=$steps" "train.checkpoint_interval=$steps"
    "train.lr.warmup_steps=$(((steps + 1) / 2))"
    "train.window.min_positions=$((games * 2))"
    "gate.games=${GPU_CHECK_GATE_GAMES:-10}" "gate.simulations=$sims"
    "rating.games=${GPU_CHECK_RATING_GAMES:-4}" "rating.simulations=$sims"
    "rating.outside_simulations=$sims"
    "rating.baselines=[\"random\",\"alphabeta:2\"]")
derive "${run_overrides[@]}" >"$work/run.toml" || exit 2
stamp "== short run on $run_device: 2 generations of $games games, $sims simulations"
t0=$(date +%s)
rc=0
# The run's lines reach the log as they come, so a run cut short by a limit still shows them.
timeout 240 "$bin" --device "$run_device" run --config "$work/run.toml" --run-dir "$work/run" 2>&1 |
    tr '\r' '\n' | tee "$work/run.log" |
    grep --line-buffered -E "device:|generation [0-9]+:|== generation|budget spent|rror|panicked" |
    tee "$work/run.lines" | tee -a "$log"
rc=${PIPESTATUS[0]}
printf '{"step":"run %s","status":"%s","seconds":%d,"result":{"generations_logged":%d}}\n' \
    "$run_device" "$([ $rc = 0 ] && echo ok || echo "failed (exit $rc)")" $(($(date +%s) - t0)) \
    "$(grep -c "generation [0-9]*:" "$work/run.lines")" >>"$summary"
cp "$work/run/summary.json" "$out/run-summary.json" 2>/dev/null || true

# One JSON document: the steps in order.
{
    echo '['
    sed '$!s/$/,/' "$summary"
    echo ']'
} >"$out/summary.json"
rm -f "$summary"
stamp "== done: $out/summary.json"
grep -o '"step":"[^"]*","status":"[^"]*","seconds":[0-9]*' "$out/summary.json"
