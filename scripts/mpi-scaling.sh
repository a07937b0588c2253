#!/usr/bin/env bash
# Weak and strong scaling of a distributed run on this machine: the cpu backend, one thread per
# rank, K = 1 and 2 MPI processes, a 2D 5-point Jacobi (f32) of 100 steps, exact mode. Prints a
# Markdown table (docs/scaling.md). Needs OpenMPI (`apt-get install libopenmpi-dev openmpi-bin
# libclang-dev`); builds Tessera with the mpi feature. Extra arguments go to every run
# (`--exchange-every 1`).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -q -p tessera --features mpi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
program=$(mktemp --suffix=.tess)
trap 'rm -f "$program"' EXIT
cat > "$program" <<'TESS'
program jacobi_rect;
param NY: i64 = 4096;
param NX: i64 = 4096;
grid [NY, NX];
field A: f32 = f32((x * 7 + y * 13) % 101) * 0.01;
stage update over [1..NY-1, 1..NX-1] {
    A = (5.1 * A[-1, 0] + 12.1 * A[0, -1] + 15.0 * A + 12.2 * A[0, 1] + 5.2 * A[1, 0]) / 49.6;
}
TESS
tessera=target/release/tessera
# One run: its summary line's time-loop seconds (median of 3).
seconds() {
  local k=$1 ny=$2; shift 2
  for _ in 1 2 3; do
    if [ "$k" = 1 ]; then
      "$tessera" run "$program" --exact --threads 1 --steps 100 --set NY="$ny" --set NX=4096 --json "$@"
    else
      mpirun --oversubscribe -n "$k" "$tessera" run "$program" --exact --threads 1 --steps 100 \
        --set NY="$ny" --set NX=4096 --json "$@"
    fi | python3 -c 'import json,sys; print(json.load(sys.stdin)["seconds"])'
  done | sort -g | sed -n 2p
}
echo "| run | ranks | grid | time loop (s) | GCells/s | efficiency |"
echo "| --- | --- | --- | --- | --- | --- |"
t1=$(seconds 1 4096 "$@")
row() { python3 -c "import sys; k,ny,t,t1,kind=sys.argv[1:]; k=int(k); ny=int(ny); t=float(t); t1=float(t1)
cells=(ny-2)*4094*100/t/1e9
eff = t1/t if kind=='weak' else t1/(k*t)
print(f'| {kind} | {k} | {ny}x4096 | {t:.3f} | {cells:.3f} | {eff*100:.0f} % |')" "$@"; }
row 1 4096 "$t1" "$t1" base
row 2 8192 "$(seconds 2 8192 "$@")" "$t1" weak
row 2 4096 "$(seconds 2 4096 "$@")" "$t1" strong
