#!/usr/bin/env bash
# The GPU path end to end on this machine, in about 10 minutes on a 16-core machine with a GPU
# (building included): builds `yari` with `--features wgpu`, prints the adapter, runs
# `yari bench nn|selfplay|train` with configs/gpu.toml on the wgpu device and the same commands
# on the CPU (flex), then a short real run of configs/gpu.toml (two generations, sizes cut as
# below) and prints its per-generation lines.
#
# Needs the Vulkan loader and a driver: the GPU vendor's (NVIDIA's ships its own Vulkan ICD),
# or Mesa's software device lavapipe for a machine without a GPU:
#   apt-get install -y libvulkan1 mesa-vulkan-drivers vulkan-tools
#
# Environment (defaults are for a real GPU; a software device wants them small, e.g.
#   GPU_CHECK_BLOCKS=2 GPU_CHECK_CHANNELS=16 GPU_CHECK_CONCURRENT=64 GPU_CHECK_BATCH=128 \
#   GPU_CHECK_GAMES=16 GPU_CHECK_SIMS=8 GPU_CHECK_STEPS=20 GPU_CHECK_GATE_GAMES=4 \
#   GPU_CHECK_RATING_GAMES=2 GPU_CHECK_BENCH_SECONDS=10 GPU_CHECK_PROFILE=dev):
#   GPU_CHECK_PROFILE        cargo profile (release)
#   GPU_CHECK_BIN            an already built `yari` (with --features wgpu) instead of building
#   GPU_CHECK_BLOCKS/CHANNELS  the net (gpu.toml's 10 x 128)
#   GPU_CHECK_CONCURRENT     self-play games in flight = network batch (gpu.toml's 1024)
#   GPU_CHECK_BATCH          training batch (gpu.toml's 1024)
#   GPU_CHECK_BENCH_SECONDS  self-play bench duration per device (15)
#   GPU_CHECK_SKIP_CPU=1     skip the CPU comparison benches
#   GPU_CHECK_GAMES, _SIMS, _STEPS, _GATE_GAMES, _RATING_GAMES  the short run's generation
#                            (games 256, full sims 64 with cheap sims a quarter, 200 steps,
#                            gate 20 games, rating 10 games per baseline)
set -euo pipefail
cd "$(dirname "$0")/.."

profile=${GPU_CHECK_PROFILE:-release}
case "$profile" in
dev) bin=target/debug/yari ;;
*) bin=target/$profile/yari ;;
esac
work=$(mktemp -d "${TMPDIR:-/tmp}/gpu-check.XXXXXX")
trap 'rm -rf "$work"' EXIT
started=$(date +%s)
# Mesa's Vulkan loader complains on every start without one (harmless, but it buries the output).
export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-$work}
stamp() { echo "[$(($(date +%s) - started)) s] $*"; }

if [ -n "${GPU_CHECK_BIN:-}" ]; then
    bin=$GPU_CHECK_BIN
    stamp "== not building: using $bin"
else
    stamp "== build ($profile, --features wgpu)"
    cargo build --profile "$profile" -p yari-cli --features wgpu --quiet
    stamp "built $bin"
fi

stamp "== adapter"
if command -v vulkaninfo >/dev/null; then
    vulkaninfo --summary 2>/dev/null | grep -E "deviceName|driverName|driverInfo|apiVersion" || true
fi

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

net=()
[ -n "${GPU_CHECK_BLOCKS:-}" ] && net+=("train.net.blocks=$GPU_CHECK_BLOCKS")
[ -n "${GPU_CHECK_CHANNELS:-}" ] && net+=("train.net.channels=$GPU_CHECK_CHANNELS")
[ -n "${GPU_CHECK_CONCURRENT:-}" ] && net+=("selfplay.concurrent_games=$GPU_CHECK_CONCURRENT" "selfplay.eval_chunk=$GPU_CHECK_CONCURRENT")
[ -n "${GPU_CHECK_BATCH:-}" ] && net+=("train.batch_size=$GPU_CHECK_BATCH")
derive "${net[@]}" >"$work/bench.toml"

devices=(wgpu)
[ "${GPU_CHECK_SKIP_CPU:-0}" = 1 ] || devices+=(flex)
export YARI_BENCH_SECONDS=${GPU_CHECK_BENCH_SECONDS:-15}
for device in "${devices[@]}"; do
    stamp "== bench nn on $device"
    "$bin" --device "$device" bench nn --config "$work/bench.toml"
    stamp "== bench selfplay on $device"
    "$bin" --device "$device" bench selfplay --config "$work/bench.toml"
    stamp "== bench train on $device"
    "$bin" --device "$device" bench train --config "$work/bench.toml"
done

games=${GPU_CHECK_GAMES:-256}
sims=${GPU_CHECK_SIMS:-64}
run_overrides=("${net[@]}"
    "run.name=\"gpu-check\"" "run.generations=2" "run.max_hours=1.0"
    "run.games_per_generation=$games"
    "selfplay.full_simulations=$sims" "selfplay.cheap_simulations=$(((sims + 3) / 4))"
    "selfplay.games_per_shard=$(((games + 1) / 2))"
    "train.steps_per_generation=${GPU_CHECK_STEPS:-200}"
    "train.checkpoint_interval=${GPU_CHECK_STEPS:-200}"
    "train.lr.warmup_steps=$(((${GPU_CHECK_STEPS:-200} + 1) / 2))"
    "train.window.min_positions=$((games * 2))"
    "gate.games=${GPU_CHECK_GATE_GAMES:-20}" "gate.simulations=$sims"
    "rating.games=${GPU_CHECK_RATING_GAMES:-10}" "rating.simulations=$sims"
    "rating.outside_simulations=$sims"
    "rating.baselines=[\"random\",\"alphabeta:2\"]")
derive "${run_overrides[@]}" >"$work/run.toml"
stamp "== short run of configs/gpu.toml on wgpu: 2 generations of $games games, $sims simulations"
"$bin" --device wgpu run --config "$work/run.toml" --run-dir "$work/run" 2>&1 |
    tr '\r' '\n' | grep -E "device:|generation [0-9]+:|== generation|budget spent"
stamp "== done"
