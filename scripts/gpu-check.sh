#!/usr/bin/env bash
# gpu-check.sh — the checks that need a CUDA GPU, in one run (< 5 minutes on
# an H200): build with the CUDA backend, run the CUDA backend tests (which
# must pass, not skip), the CUDA graph example, then bench_cuda, which
# replays the GPU traces of RELO_TRACES against relo, cuMemAlloc and
# cuMemAllocAsync and measures relocation bandwidth against cuMemcpyDtoD.
#
# Usage: scripts/gpu-check.sh [build-dir]   (default build-gpu)
# Environment: RELO_TRACES, a folder of traces whose GPU ones (gpu_*.trace.gz)
#              bench_cuda replays (default examples/traces; a folder given
#              that holds none is an error), RUNS (benchmark repetitions,
#              default 3), JOBS (default nproc).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build-gpu}
runs=${RUNS:-3}
jobs=${JOBS:-$(nproc)}
traces=${RELO_TRACES:-$root/examples/traces}
shopt -s nullglob
files=("$traces"/gpu_*.trace.gz)
if (( ${#files[@]} == 0 )); then
  echo "gpu-check.sh: no GPU traces (gpu_*.trace.gz) in $traces" >&2
  exit 2
fi

step() { printf '\n=== %s (%ds)\n' "$1" "$SECONDS"; }

step "configure and build (CUDA on, Release)"
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DRELO_WITH_CUDA=ON \
      -DRELO_BUILD_BENCH=ON -DRELO_BUILD_TESTS=ON >/dev/null
cmake --build "$build" -j "$jobs" --target test_cuda relo-example-cuda-graph bench_cuda

step "GPU"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true

step "CUDA backend tests (a SKIP here is a failure: this machine has a GPU)"
out=$(cd "$build" && ctest -R '^test_cuda\.' --output-on-failure --timeout 120 2>&1) || {
  echo "$out"; echo "FAIL: CUDA tests"; exit 1; }
echo "$out" | tail -n 4
if echo "$out" | grep -q 'Skipped'; then
  echo "$out" | grep 'Skipped'; echo "FAIL: CUDA tests skipped on a GPU machine"; exit 1
fi

step "example: CUDA graph over relo memory"
timeout 60 "$build/examples/relo-example-cuda-graph"

step "bench_cuda: trace replay and relocation bandwidth ($runs runs)"
timeout 200 "$build/bench/bench_cuda" --runs "$runs" "${files[@]}"

step "done"
