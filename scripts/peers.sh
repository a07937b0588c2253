#!/usr/bin/env bash
# Times Tessera against its peers (C -O3 + OpenMP, pystencils, Devito, Halide) on this machine, in
# one run: builds the release CLI, makes a virtual environment with the peers (target/peers-venv,
# from PyPI), then runs scripts/peers.py with the given arguments (e.g. `--rows j2d5pt,j3d7pt`).
# Tessera is timed for every x86 target this machine runs (avx512, avx2, sse2; one column each)
# unless `--target-isa` names some.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=target/peers-venv
if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet numpy pystencils devito halide
fi
cargo build --release --quiet -p tessera
exec "$venv/bin/python" scripts/peers.py "$@"
