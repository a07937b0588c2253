#!/usr/bin/env bash
# The GPU benchmark table on CUDA (run it on a machine with an NVIDIA GPU): builds Tessera with
# the cuda feature and runs scripts/gpu-bench.py at the BENCHMARKS.md paper sizes. Extra
# arguments go to the script (`--steps 50`, `--programs j2d5pt`, `--out table.md`).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -p tessera --features cuda
python3 scripts/gpu-bench.py --backend cuda --size paper "$@"
