#!/usr/bin/env bash
# A short GPU session (the `device` tool lends an H100/H200 for minutes): build here, measure
# there, in one call each.
#
#   scripts/gpu-session.sh prepare        # on the build machine: binaries into .dev/
#   scripts/gpu-session.sh run OUT        # on the GPU machine (no cargo needed): OUT gets
#                                         # gpu-session.tar.gz, summary.txt and fit.txt
#
# `run` checks the CUDA backend against the reference (every corpus program under every
# single-step and fused plan, bitwise in exact mode), benchmarks the plans no GPU has measured
# next to the measured ones and the default plan at the paper sizes, the per-step overhead on
# tiny grids with CUDA graphs on and off, and refits the cost model's efficiencies. Each part
# has a time limit, so a slow part costs its limit, not the session. Carry `.dev` to the GPU.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
DEV=$ROOT/.dev

prepare() {
    set -e
    cargo build --release -p tessera --features cuda,opencl
    mkdir -p "$DEV"
    cp target/release/tessera "$DEV/"
    local test
    for test in cuda_matrix cuda_fused; do
        cargo test --release -p tessera-gpu-tests --test "$test" --no-run --message-format=json \
            | python3 -c 'import json,sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("executable") and m.get("target", {}).get("kind") == ["test"]:
        print(m["executable"])' | tail -1 | xargs -I{} cp {} "$DEV/$test"
    done
    # The test binaries find the corpus through the path they were built in.
    echo "$ROOT" > "$DEV/build-root"
    ls -la "$DEV"
}

run() {
    local keep=${1:?give the output directory}
    local out
    out=$(mktemp -d)
    local built
    built=$(cat "$DEV/build-root")
    if [ "$built" != "$ROOT" ] && [ ! -e "$built" ]; then
        mkdir -p "$(dirname "$built")" && ln -s "$ROOT" "$built"
    fi
    export TESSERA_REQUIRE_CUDA=1
    export TESSERA_CUDA_HOME=${TESSERA_CUDA_HOME:-/usr/local/cuda}
    export PATH=$PATH:$TESSERA_CUDA_HOME/bin
    (nvidia-smi -L; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total \
        --format=csv) > "$out/device.txt" 2>&1
    local test
    for test in cuda_matrix cuda_fused; do
        timeout 240 "$DEV/$test" --test-threads 4 > "$out/$test.log" 2>&1
        echo "$test: exit $?" >> "$out/summary.txt"
    done
    local bench=(python3 scripts/gpu-bench.py --backend cuda --tessera "$DEV/tessera")
    local program
    for program in j2d5pt j3d7pt j3d27pt gaussian2d fdtd2d; do
        timeout 150 "${bench[@]}" --size paper --steps 20 --reps 3 --programs "$program" \
            --plans naive "streaming plane=cache" "overlapped T=4" "streaming T=2" \
            "streaming T=4" "wavefront T=2" "wavefront T=4" default \
            --json "$out/gpu-$program.json" --out "$out/gpu-$program.md" \
            > "$out/bench-$program.log" 2>&1
        echo "bench $program: exit $?" >> "$out/summary.txt"
    done
    local graphs
    for graphs in on off; do
        timeout 60 "${bench[@]}" --size tiny --steps 1000 --reps 3 --programs j2d5pt j3d7pt \
            --plans naive "streaming plane=cache" default --graphs "$graphs" \
            --out "$out/tiny-graphs-$graphs.md" > "$out/tiny-graphs-$graphs.log" 2>&1
        echo "tiny graphs $graphs: exit $?" >> "$out/summary.txt"
    done
    python3 scripts/fit-gpu-efficiency.py "$out"/gpu-*.json > "$out/fit.txt" 2>&1
    # Few files come back well: everything in one archive, the summary and the fit beside it.
    mkdir -p "$keep"
    tar czf "$keep/gpu-session.tar.gz" -C "$out" .
    cp "$out/summary.txt" "$out/fit.txt" "$keep/"
    cat "$out/summary.txt"
}

case "${1:-}" in
    prepare) prepare ;;
    run) run "${2:-}" ;;
    *) echo "usage: $0 prepare | run OUT" >&2; exit 2 ;;
esac
