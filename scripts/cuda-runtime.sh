#!/usr/bin/env bash
# Brings the CUDA pieces that burn's CUDA backend needs at run time onto a machine without a CUDA
# toolkit, from NVIDIA's wheels on PyPI, unpacked into a project-local folder laid out like a
# CUDA_PATH (default .cuda/ in the repo root; the first argument overrides it).
#
# Why: `--features cuda` uses cubecl-cuda 0.11.3 (C++ path) with cudarc 0.19 (CUDA 13.0 bindings,
# loaded dynamically). Kernels are compiled at run time by NVRTC: cudarc dlopens libnvrtc.so
# (found through LD_LIBRARY_PATH), which dlopens libnvrtc-builtins.so.13.0 beside it, and
# cubecl-cuda passes --include-path=$CUDA_PATH/include (and $CUDA_PATH/include/cccl) so the
# kernels' #include <cuda_fp16.h>, <cuda_bf16.h>, <mma.h>, <cuda_fp8.h>, <cooperative_groups.h>,
# <cuda/barrier> resolve. This script provides exactly that:
#   include/        headers of nvidia-cuda-runtime, nvidia-cuda-crt (crt/*), nvidia-cuda-nvrtc
#                   (nvrtc.h) and nvidia-cuda-cccl (include/cccl/{cuda,cub,thrust,nv}, include/nv)
#   lib/            libnvrtc.so.13, libnvrtc-builtins.so.13.0, and the link libnvrtc.so
#   env.sh          the two exports below, for `source .cuda/env.sh`
# The NVIDIA driver (libcuda.so.1, a 580-series driver or newer for CUDA 13.0) is still needed:
# it comes with the driver install, not from a wheel, and this script does not provide it.
#
# Needs python3 with pip (Debian/Ubuntu: apt-get install -y python3-pip) and network access to
# PyPI. Idempotent: with the folder complete for these versions it only prints the exports.
# Usage: scripts/cuda-runtime.sh [DIR]
set -euo pipefail

# Pinned CUDA 13.0 wheels (match cudarc's CUDA 13.0 bindings and a CUDA 13.0 / r580 driver).
NVRTC_VERSION=13.0.88    # nvidia-cuda-nvrtc:   libnvrtc.so.13, libnvrtc-builtins.so.13.0, nvrtc.h
RUNTIME_VERSION=13.0.96  # nvidia-cuda-runtime: cuda_runtime.h, cuda_fp16.h, cuda_bf16.h, mma.h, ...
CRT_VERSION=13.0.88      # nvidia-cuda-crt:     crt/*.h, included by the runtime headers
CCCL_VERSION=13.0.85     # nvidia-cuda-cccl:    cuda/barrier, cuda/std/..., nv/target
WHEELS=(
  "nvidia-cuda-nvrtc==$NVRTC_VERSION"
  "nvidia-cuda-runtime==$RUNTIME_VERSION"
  "nvidia-cuda-crt==$CRT_VERSION"
  "nvidia-cuda-cccl==$CCCL_VERSION"
)

die() { echo "cuda-runtime.sh: error: $*" >&2; exit 1; }

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
dest=${1:-$repo/.cuda}
mkdir -p "$(dirname "$dest")"
dest=$(cd "$(dirname "$dest")" && pwd)/$(basename "$dest")
stamp="$dest/.wheels"
want=$(printf '%s\n' "${WHEELS[@]}")

exports() {
  echo "export CUDA_PATH=$dest"
  echo "export LD_LIBRARY_PATH=$dest/lib\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}"
}

complete() {
  [[ -f $stamp && "$(cat "$stamp")" == "$want" && -f $dest/env.sh ]] || return 1
  local f
  for f in include/cuda_runtime.h include/cuda_fp16.h include/cuda_bf16.h include/mma.h \
    include/crt/host_config.h include/nvrtc.h include/cccl/cuda/barrier \
    lib/libnvrtc.so lib/libnvrtc.so.13 lib/libnvrtc-builtins.so.13.0; do
    [[ -e $dest/$f ]] || return 1
  done
}

if ! complete; then
  # Replace only a folder this script made (or an empty one), never someone else's.
  if [[ -d $dest && ! -f $stamp && -n "$(ls -A "$dest")" ]]; then
    die "$dest exists and was not made by this script; remove it or pass another folder"
  fi
  python3 -m pip --version >/dev/null 2>&1 ||
    die "python3 with pip is needed to download NVIDIA's wheels (Debian/Ubuntu: apt-get install -y python3-pip)"

  work=$(mktemp -d "${TMPDIR:-/tmp}/cuda-runtime.XXXXXX")
  stage="$dest.partial" # beside $dest, so the final mv is a rename
  trap 'rm -rf "$work" "$stage"' EXIT
  rm -rf "$stage"
  mkdir -p "$stage/include" "$stage/lib" "$stage/licenses"
  for spec in "${WHEELS[@]}"; do
    name=${spec%%==*}
    echo "cuda-runtime.sh: downloading $spec" >&2
    mkdir -p "$work/dl/$name" "$work/x/$name"
    python3 -m pip download --quiet --no-deps --only-binary=:all: \
      --platform manylinux_2_28_x86_64 --platform manylinux2014_x86_64 --python-version 3.12 \
      -d "$work/dl/$name" "$spec" ||
      die "could not download the wheel $spec from PyPI (see pip's message above: version gone, or PyPI not reachable?)"
    whl=$(ls "$work/dl/$name"/*.whl 2>/dev/null | head -n1 || true)
    [[ -n $whl ]] || die "pip left no wheel for $spec"
    python3 -m zipfile -e "$whl" "$work/x/$name" || die "could not unpack $(basename "$whl")"
    root="$work/x/$name/nvidia/cu13"
    [[ -d $root ]] || die "$(basename "$whl") has no nvidia/cu13/ (layout changed?)"
    if [[ -d $root/include ]]; then cp -a "$root/include/." "$stage/include/"; fi
    # Only NVRTC's libraries (not the *.alt.* variants, cudart or static archives).
    for so in "$root"/lib/libnvrtc*.so*; do
      if [[ -e $so && $so != *.alt.* ]]; then cp -a "$so" "$stage/lib/"; fi
    done
    lic=$(ls "$work/x/$name"/*.dist-info/licenses/License.txt 2>/dev/null | head -n1 || true)
    if [[ -n $lic ]]; then cp "$lic" "$stage/licenses/$name.txt"; fi
  done
  [[ -f $stage/lib/libnvrtc.so.13 ]] || die "nvidia-cuda-nvrtc==$NVRTC_VERSION shipped no libnvrtc.so.13"
  # cudarc tries the plain name first; the wheel ships only the versioned one.
  [[ -e $stage/lib/libnvrtc.so ]] || ln -s libnvrtc.so.13 "$stage/lib/libnvrtc.so"
  chmod 755 "$stage"/lib/*.so.* 2>/dev/null || true
  echo "$want" >"$stage/.wheels"
  (
    echo "# Made by scripts/cuda-runtime.sh: NVRTC and CUDA headers for burn's CUDA backend."
    exports
  ) >"$stage/env.sh"

  rm -rf "$dest"
  mv "$stage" "$dest"
  complete || die "$dest is incomplete after install (a wheel's layout changed?)"
fi

exports
