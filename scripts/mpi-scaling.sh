#!/usr/bin/env bash
# Weak and strong scaling of a distributed run on this machine: the cpu backend, one thread per
# rank, K = 1 and 2 MPI processes, a 2D 5-point Jacobi (f32) of 100 steps, exact mode. Prints a
# Markdown table (docs/scaling.md), each run on 2 ranks with the exchange after each pass and
# overlapped with it (`--overlap off|on`). Needs OpenMPI (`apt-get install libopenmpi-dev openmpi-bin
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
# One configuration: `K NY [flags]` → the median of 3 runs' `run --json` reports, as JSON.
report() {
  local k=$1 ny=$2; shift 2
  for _ in 1 2 3; do
    if [ "$k" = 1 ]; then
      "$tessera" run "$program" --exact --threads 1 --steps 100 --set NY="$ny" --set NX=4096 --json "$@"
    else
      mpirun --oversubscribe -n "$k" "$tessera" run "$program" --exact --threads 1 --steps 100 \
        --set NY="$ny" --set NX=4096 --json "$@"
    fi
  done | python3 -c 'import json,sys; runs=[json.loads(l) for l in sys.stdin]; runs.sort(key=lambda r: r["seconds"]); print(json.dumps(runs[1]))'
}
# A table row: kind, ranks, rows, the base time and the report; per rank the time spent
# exchanging (packing, sending, unpacking) and waiting, the largest of the ranks.
row() { python3 -c "import json,sys; kind,k,ny,t1,mode=sys.argv[1:6]; r=json.loads(sys.argv[6]); k=int(k); ny=int(ny); t1=float(t1); t=r['seconds']
cells=(ny-2)*4094*100/t/1e9
eff = t1/t if kind!='strong' else t1/(k*t)
ranks=r.get('ranks') or [{'exchange_seconds':0,'wait_seconds':0}]
ex=max(x['exchange_seconds'] for x in ranks)*1e3; wait=max(x['wait_seconds'] for x in ranks)*1e3
print(f'| {kind} | {k} | {ny}x4096 | {mode} | {t:.3f} | {cells:.3f} | {eff*100:.0f} % | {ex:.1f} | {wait:.1f} |')" "$@"; }
echo "| run | ranks | grid | exchange | time loop (s) | GCells/s | efficiency | exchange (ms) | wait (ms) |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"
base=$(report 1 4096 "$@")
t1=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["seconds"])' "$base")
row base 1 4096 "$t1" - "$base"
for overlap in off on; do
  row weak 2 8192 "$t1" "$overlap" "$(report 2 8192 --overlap "$overlap" "$@")"
  row strong 2 4096 "$t1" "$overlap" "$(report 2 4096 --overlap "$overlap" "$@")"
done
