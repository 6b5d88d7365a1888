#!/usr/bin/env bash
# Starts a many-machine yari run on Slurm: creates the run directory (config and generation 0
# network), submits one learner job, and a job array of self-play workers that starts once the
# learner has started. Run it on a login node from the repository root:
#
#   scripts/slurm/submit.sh                                   # the knobs below as they are
#   RUN_DIR=/shared/runs/r2 WORKERS=16 scripts/slurm/submit.sh # any knob from the environment
#
# Re-running it on an existing run directory resumes that run (its stored config is kept).
# Prints the two job ids; watch with `squeue -u $USER` and `tail -f $RUN_DIR/logs/*`.
set -euo pipefail
cd "$(dirname "$0")/../.."

# ---- knobs a cluster user changes (each one can also be set in the environment) ----
# The run directory, on a filesystem every node mounts at this path (NFS, Lustre, ...).
RUN_DIR=${RUN_DIR:-$PWD/data/runs/slurm}
# The same directory as the worker nodes see it, if they mount it elsewhere.
WORKER_RUN_DIR=${WORKER_RUN_DIR:-$RUN_DIR}
# Run config, used when the run directory is created (configs/*.toml).
CONFIG=${CONFIG:-configs/default.toml}
# The yari binary, reachable from every node (`cargo build --release -p yari-cli`; add
# --features cuda or wgpu for GPU jobs).
YARI=${YARI:-$PWD/target/release/yari}
# Number of self-play workers (array tasks 0..WORKERS-1).
WORKERS=${WORKERS:-4}
# Worker jobs: partition, CPUs (= self-play threads), memory, wall time, GPUs (e.g. gpu:1; empty: none).
WORKER_PARTITION=${WORKER_PARTITION:-cpu}
WORKER_CPUS=${WORKER_CPUS:-8}
WORKER_MEM=${WORKER_MEM:-8G}
WORKER_TIME=${WORKER_TIME:-04:00:00}
WORKER_GRES=${WORKER_GRES:-}
# The learner job: the same, for training, gating and rating.
LEARNER_PARTITION=${LEARNER_PARTITION:-cpu}
LEARNER_CPUS=${LEARNER_CPUS:-8}
LEARNER_MEM=${LEARNER_MEM:-16G}
LEARNER_TIME=${LEARNER_TIME:-04:00:00}
LEARNER_GRES=${LEARNER_GRES:-}
# Anything else every job needs on your cluster, e.g. "--account=myproject --qos=normal".
EXTRA_SBATCH_ARGS=${EXTRA_SBATCH_ARGS:-}
# ---- end of knobs ----

die() { echo "submit.sh: $*" >&2; exit 1; }
[ -x "$YARI" ] || die "no yari binary at $YARI (build it: cargo build --release -p yari-cli, or set YARI)"
[ "$WORKERS" -ge 1 ] 2>/dev/null || die "WORKERS=$WORKERS: must be a number >= 1"
command -v sbatch >/dev/null || die "sbatch not found: run this on a Slurm login node"

# The run directory exists before any job starts, so no job waits for another to create it.
"$YARI" learn --run-dir "$RUN_DIR" --config "$CONFIG" --init
mkdir -p "$RUN_DIR/logs"

# shellcheck disable=SC2206  # EXTRA_SBATCH_ARGS is a list of options on purpose
extra=($EXTRA_SBATCH_ARGS)
learner_args=(--partition="$LEARNER_PARTITION" --cpus-per-task="$LEARNER_CPUS" --mem="$LEARNER_MEM"
    --time="$LEARNER_TIME" --output="$RUN_DIR/logs/learner-%j.out")
[ -n "$LEARNER_GRES" ] && learner_args+=(--gres="$LEARNER_GRES")
worker_args=(--partition="$WORKER_PARTITION" --cpus-per-task="$WORKER_CPUS" --mem="$WORKER_MEM"
    --time="$WORKER_TIME" --array="0-$((WORKERS - 1))" --output="$RUN_DIR/logs/worker-%A_%a.out")
[ -n "$WORKER_GRES" ] && worker_args+=(--gres="$WORKER_GRES")

learner=$(sbatch --parsable "${extra[@]}" "${learner_args[@]}" \
    --export="ALL,RUN_DIR=$RUN_DIR,YARI=$YARI" scripts/slurm/learner.sbatch)
learner=${learner%%;*}
# Workers start once the learner runs (their games would otherwise pile up for a learner still
# queued); neither waits for the other after that.
workers=$(sbatch --parsable "${extra[@]}" "${worker_args[@]}" --dependency="after:$learner" \
    --export="ALL,RUN_DIR=$WORKER_RUN_DIR,YARI=$YARI" scripts/slurm/worker.sbatch)
workers=${workers%%;*}
echo "learner job $learner, worker array job $workers (tasks 0-$((WORKERS - 1))), run directory $RUN_DIR"
