#!/usr/bin/env bash
# A short GPU session (the `device` tool lends an H100/H200 for minutes): build here, measure
# there, in one call each.
#
#   scripts/gpu-session.sh prepare        # on the build machine: binaries into .dev/
#   scripts/gpu-session.sh lease OUT      # on the GPU machine, the one call a 15-minute lease
#                                         # holds (about 8 minutes): the CUDA tests, the
#                                         # issue targets' cases under the plans that decide
#                                         # them, the other paper cases, and the refit
#   scripts/gpu-session.sh run OUT        # on the GPU machine (no cargo needed): OUT gets
#                                         # gpu-session.tar.gz, summary.txt and fit.txt
#   scripts/gpu-session.sh check OUT      # shorter, after a cost-model change: the default
#                                         # plans and `tiled` beside hand kernels, the tiny
#                                         # grids, and Nsight Compute profiles of 3D kernels
#   scripts/gpu-session.sh defaults OUT   # after a refit (about 2 minutes): every paper case's
#                                         # default plan beside naive, j2d9pt-box's plans, and
#                                         # the depth, chunk and elements of j2d5pt's time tiles
#   scripts/gpu-session.sh blocks OUT     # single-step 3D streaming's block shapes (about 80
#                                         # seconds): j3d7pt and j3d27pt f32, planes through
#                                         # the cache, 1 or 4 elements
#   scripts/gpu-session.sh profile OUT    # Nsight Compute of j2d5pt T=4, j3d7pt T=2 and
#                                         # j3d27pt at 1 and 4 elements (about 20 seconds)
#   scripts/gpu-session.sh unmeasured OUT # the kernel options no GPU has measured yet (about
#                                         # 3 minutes): streaming time tiles loading their
#                                         # input planes 1, 3 or 6 iterations ahead beside
#                                         # the default plans, single-step streaming with
#                                         # reordered box sums at 1 and 4 elements, and Nsight
#                                         # Compute of j2d5pt T=4 and j3d7pt T=2 a whole trip
#                                         # ahead
#   scripts/gpu-session.sh tune OUT       # the fused kernels at the paper sizes, then
#                                         # `tessera tune` of the default strategies there:
#                                         # which blocks, chunks and E win
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
# The benchmark table on CUDA with the prepared binary (an array: `timeout` runs it).
GPU_BENCH=(python3 scripts/gpu-bench.py --backend cuda --tessera "$DEV/tessera")
# The plans `run` measures at the paper sizes.
PAPER=(--size paper --steps 20 --reps 3 --plans naive "streaming plane=cache" "overlapped T=4"
    "streaming T=2" "streaming T=4" "wavefront T=2" "wavefront T=4" default)

prepare() {
    set -e
    cargo build --release -p tessera --features cuda,opencl
    mkdir -p "$DEV"
    cp target/release/tessera "$DEV/"
    local test
    for test in cuda_matrix cuda_fused cuda_relaxed cuda_steady cuda_random; do
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

# Seconds left before the session's deadline, less `reserve` for the parts after this one, at
# most `want`; 0 when too little is left to be worth starting.
part_limit() {
    local want=$1 reserve=$2
    local left=$((DEADLINE - SECONDS - reserve))
    ((left < want)) && want=$left
    ((want < 10)) && want=0
    echo "$want"
}

# Runs one part under its time limit and notes its exit status (124: stopped at the limit).
part() {
    local name=$1 want=$2 reserve=$3
    shift 3
    local limit
    limit=$(part_limit "$want" "$reserve")
    if ((limit == 0)); then
        echo "$name: skipped, out of time" >> "$WORK/summary.txt"
        return
    fi
    # SIGTERM at the limit (`tessera tune` then reports what it timed), SIGKILL 15 s later.
    timeout -k 15 "$limit" "$@"
    echo "$name: exit $? (limit ${limit} s, at ${SECONDS} s)" >> "$WORK/summary.txt"
    pack
}

# Everything into one archive beside the summary and the fit (few files come back well);
# after every part, so that a call stopped early still brings back what was measured.
pack() {
    tar czf "$KEEP/gpu-session.tar.gz" -C "$WORK" .
    cp "$WORK/summary.txt" "$KEEP/"
}

# The CUDA toolkit's NVRTC: the image's toolkit, else the first libnvrtc.so.13 found.
find_nvrtc() {
    local home
    for home in "${TESSERA_CUDA_HOME:-}" /usr/local/cuda /usr/local/cuda-13*; do
        if [ -n "$home" ] && [ -e "$home/lib64/libnvrtc.so.13" ]; then
            export TESSERA_CUDA_HOME=$home PATH=$PATH:$home/bin
            return
        fi
    done
    local found
    found=$(find /usr /opt -name 'libnvrtc.so.13' 2>/dev/null | head -1)
    [ -n "$found" ] && export TESSERA_NVRTC=$found
}

# What every GPU call ends with: the archive packed, the summary shown.
end_session() {
    pack
    cat "$WORK/summary.txt"
}

# `run`'s table of `program` (f32 and f64) at the paper sizes, graphs `graphs`, under a limit of
# `want` seconds with `reserve` kept for later parts.
bench_paper() {
    local program=$1 want=$2 reserve=$3 graphs=$4
    part "bench $program" "$want" "$reserve" "${GPU_BENCH[@]}" --types f32 f64 "${PAPER[@]}" \
        --programs "$program" --graphs "$graphs" --json "$WORK/gpu-$program.json" \
        --out "$WORK/gpu-$program.md" > "$WORK/bench-$program.log" 2>&1
}

# What every GPU call starts with: the output folders, the deadline (`seconds`), the test
# binaries' corpus path, the toolkit, and the device's description.
start_session() {
    KEEP=${1:?give the output directory}
    WORK=$(mktemp -d)
    DEADLINE=${GPU_SESSION_SECONDS:-$2}
    mkdir -p "$KEEP"
    local built
    built=$(cat "$DEV/build-root")
    if [ "$built" != "$ROOT" ] && [ ! -e "$built" ]; then
        mkdir -p "$(dirname "$built")" && ln -s "$ROOT" "$built"
    fi
    export TESSERA_REQUIRE_CUDA=1 PYTHONUNBUFFERED=1
    find_nvrtc
    (nvidia-smi -L; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total \
        --format=csv; env | grep -E '^TESSERA_') > "$WORK/device.txt" 2>&1
}

# What `run` and `lease` start with: a recorded run on a tiny grid (if it fails, the benchmarks
# issue launch by launch, so that they still measure the kernels: `GRAPHS` says which), then
# the CUDA test binaries side by side, each under `test_limit` seconds; `smoke_reserve` and
# `test_reserve` are kept for the parts after each.
smoke_and_tests() {
    local smoke_reserve=$1 test_limit=$2 test_reserve=$3
    GRAPHS=on
    part "smoke (graphs on)" 30 "$smoke_reserve" "$DEV/tessera" bench benchmarks/j2d5pt.tess \
        --backend cuda --set N=256 --steps 200 > "$WORK/smoke.log" 2>&1
    grep -q ': exit 0 ' <(tail -1 "$WORK/summary.txt") || GRAPHS=off
    echo "benchmarks: graphs $GRAPHS" >> "$WORK/summary.txt"
    local test
    for test in cuda_matrix cuda_fused cuda_relaxed cuda_steady cuda_random; do
        part "$test" "$test_limit" "$test_reserve" "$DEV/$test" --test-threads 8 \
            > "$WORK/$test.log" 2>&1 &
    done
    wait
}

run() {
    start_session "$1" 510
    smoke_and_tests 480 150 330
    local graphs=$GRAPHS
    bench_paper j3d7pt 110 200 "$graphs"
    bench_paper j2d5pt 90 110 "$graphs"
    local setting
    for setting in on off; do
        [ "$graphs" = off ] && [ "$setting" = on ] && continue
        part "tiny graphs $setting" 35 40 "${GPU_BENCH[@]}" --types f32 --size tiny --steps 1000 \
            --reps 3 --programs j2d5pt j3d7pt --plans naive "streaming plane=cache" default \
            --graphs "$setting" --out "$WORK/tiny-graphs-$setting.md" \
            > "$WORK/tiny-graphs-$setting.log" 2>&1
    done
    local program
    for program in j3d27pt gaussian2d fdtd2d; do
        bench_paper "$program" 40 5 "$graphs"
    done
    python3 scripts/fit-gpu-efficiency.py "$WORK"/gpu-*.json > "$WORK/fit.txt" 2>&1
    cp "$WORK/fit.txt" "$KEEP/"
    end_session
}

# The one call a lease of 15 minutes of device time holds (a start takes one or two): first
# what shows the kernels run right on a GPU, then the paper cases in the order issues 34 and
# 40 need them (their targets: j2d5pt and j3d7pt, f32 and f64; then j3d27pt, gaussian2d and
# fdtd2d), each under the plans that decide whether the default plan meets them, then the
# refit. Every part has its limit, so a slow part costs that, not the rest.
lease() {
    start_session "$1" 480
    smoke_and_tests 440 100 330
    local bench=("${GPU_BENCH[@]}" --size paper --steps 20 --reps 3 --graphs "$GRAPHS")
    part "bench targets" 150 190 "${bench[@]}" --types f32 f64 --programs j2d5pt j3d7pt \
        --plans naive "streaming plane=cache" "streaming E=4" "overlapped T=4" \
        "streaming T=2" "streaming T=4" default --json "$WORK/gpu-targets.json" \
        --out "$WORK/gpu-targets.md" > "$WORK/bench-targets.log" 2>&1
    part "bench deeper 2d" 25 125 "${bench[@]}" --types f32 f64 --programs j2d5pt --plans \
        "streaming T=8" --json "$WORK/gpu-deeper-2d.json" --out "$WORK/gpu-deeper-2d.md" \
        > "$WORK/bench-deeper-2d.log" 2>&1
    part "bench deeper 3d" 50 110 "${bench[@]}" --types f32 f64 --programs j3d7pt --plans \
        "streaming T=2 16x32 E=1" "streaming T=3 32x32 E=1" "streaming T=3" \
        --json "$WORK/gpu-deeper-3d.json" --out "$WORK/gpu-deeper-3d.md" \
        > "$WORK/bench-deeper-3d.log" 2>&1
    part "bench others" 110 5 "${bench[@]}" --types f32 --programs j3d27pt gaussian2d fdtd2d \
        --plans naive "streaming plane=cache" "streaming E=4" "overlapped T=4" \
        "streaming T=2" default --json "$WORK/gpu-others.json" --out "$WORK/gpu-others.md" \
        > "$WORK/bench-others.log" 2>&1
    python3 scripts/fit-gpu-efficiency.py "$WORK"/gpu-*.json > "$WORK/fit.txt" 2>&1
    cp "$WORK/fit.txt" "$KEEP/"
    cat "$WORK"/gpu-targets.md "$WORK"/gpu-deeper-*.md "$WORK"/gpu-others.md 2>/dev/null
    end_session
}

# After a refit of the cost model: what its default plans reach at the paper sizes beside naive
# and the hand kernels (j2d9pt-box, not in `lease`, with its candidate plans), then the knobs
# of j2d5pt's time tiles that issue 34's 2x target depends on.
defaults() {
    start_session "$1" 300
    local bench=("${GPU_BENCH[@]}" --size paper --steps 20 --reps 3)
    part "bench defaults" 120 110 "${bench[@]}" --types f32 f64 --plans naive default \
        --json "$WORK/gpu-defaults.json" --out "$WORK/gpu-defaults.md" \
        > "$WORK/bench-defaults.log" 2>&1
    part "bench j2d9pt-box" 40 75 "${bench[@]}" --programs j2d9pt-box --plans \
        "streaming plane=cache" "overlapped T=4" "streaming T=2" "streaming T=4" \
        --json "$WORK/gpu-box.json" --out "$WORK/gpu-box.md" > "$WORK/bench-box.log" 2>&1
    part "bench j2d5pt knobs" 70 5 "${bench[@]}" --types f32 f64 --programs j2d5pt --plans \
        "streaming T=3" "streaming T=6" "streaming T=4 E=2" "streaming T=4 chunk=32" \
        "streaming T=4 chunk=128" --json "$WORK/gpu-knobs.json" --out "$WORK/gpu-knobs.md" \
        > "$WORK/bench-knobs.log" 2>&1
    cat "$WORK"/gpu-defaults.md "$WORK"/gpu-box.md "$WORK"/gpu-knobs.md 2>/dev/null
    end_session
}

# The block shapes of single-step 3D streaming, where issue 40's j3d7pt and j3d27pt f32 fall
# short of the roofline with the default 64x4 (L2-bound: the rows above and below a block
# of 4 rows come from L2): wider and taller blocks, planes through the cache (the default),
# 1 or 4 elements per thread.
blocks() {
    start_session "$1" 270
    local program
    for program in j3d7pt j3d27pt; do
        part "blocks $program" 130 5 "${GPU_BENCH[@]}" --size paper --steps 20 --reps 3 \
            --types f32 --programs "$program" --plans "streaming plane=cache" "streaming E=4" \
            --tiles 4x64 8x32 16x32 8x64 4x128 16x64 8x128 2x256 \
            --json "$WORK/gpu-blocks-$program.json" --out "$WORK/gpu-blocks-$program.md" \
            > "$WORK/bench-blocks-$program.log" 2>&1
    done
    cat "$WORK"/gpu-blocks-*.md 2>/dev/null
    end_session
}

# Nsight Compute's view (throughput, occupancy, stalls, memory) of one launch of a plan:
# `name` for its file, the program, its extent, the part's limit and reserve, then `tessera
# bench`'s plan flags.
ncu_part() {
    local name=$1 program=$2 extent=$3 want=$4 reserve=$5
    shift 5
    local ncu
    ncu=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
    part "ncu $name" "$want" "$reserve" "$ncu" --clock-control none --section SpeedOfLight \
        --section Occupancy --section WarpStateStats --section MemoryWorkloadAnalysis \
        --section LaunchStats -k "regex:$program" -s 2 -c 1 "$DEV/tessera" bench \
        "benchmarks/$program.tess" --backend cuda --set "N=$extent" --steps 8 --reps 1 "$@" \
        > "$WORK/ncu-$name.txt" 2>&1
}

# What binds the kernels issue 34's and 40's targets depend on: j2d5pt's time tile at T=4
# (2x the roofline asks more of it), j3d7pt's default (T=2), and j3d27pt single-step at 1
# and 4 elements per thread.
profile() {
    start_session "$1" 170
    "$DEV/tessera" plan benchmarks/j3d27pt.tess --backend cuda --set N=512 --strategy streaming \
        --json | python3 -c 'import json,sys
plan = json.load(sys.stdin)
plan["backend"]["cuda"]["elements_per_thread"] = 4
print(json.dumps(plan))' > "$WORK/j3d27pt-e4.json"
    ncu_part j2d5pt-t4 j2d5pt 8192 40 125 --strategy streaming --time-tile 4
    ncu_part j3d7pt-t2 j3d7pt 512 40 85 --strategy streaming --time-tile 2
    ncu_part j3d27pt-e1 j3d27pt 512 40 45 --strategy streaming
    ncu_part j3d27pt-e4 j3d27pt 512 40 5 --plan "$WORK/j3d27pt-e4.json"
    end_session
}

# The kernel options no GPU has measured: streaming time tiles whose threads load their input
# planes ahead (`--prefetch`; without it the store of each unrolled trip's arriving plane
# waits for the load ptxas hoists to the trip's top, and Nsight saw j2d5pt T=4 spend 40% of
# its cycles there), and single-step streaming adding its box sum up plane by plane
# (`reordered_sums`: j3d27pt in 64 registers where its queues took 69, 48 at 4 elements
# where they took 97).
unmeasured() {
    start_session "$1" 340
    part "bench prefetch" 170 135 "${GPU_BENCH[@]}" --size paper --steps 20 --reps 3 \
        --types f32 f64 --plans default "default prefetch=1" "default prefetch=3" \
        "default prefetch=6" --json "$WORK/gpu-prefetch.json" --out "$WORK/gpu-prefetch.md" \
        > "$WORK/bench-prefetch.log" 2>&1
    local sums=("${GPU_BENCH[@]}" --size paper --steps 20 --reps 3 --types f32 --plans \
        "streaming plane=cache" "streaming E=4" "streaming E=1 sums=reordered" \
        "streaming E=4 sums=reordered")
    part "bench sums 3D" 45 85 "${sums[@]}" --programs j3d27pt --tiles 4x64 16x64 \
        --json "$WORK/gpu-sums-3d.json" --out "$WORK/gpu-sums-3d.md" \
        > "$WORK/bench-sums-3d.log" 2>&1
    part "bench sums 2D" 45 45 "${sums[@]}" --programs gaussian2d j2d9pt-box --tiles 128 256 \
        --json "$WORK/gpu-sums-2d.json" --out "$WORK/gpu-sums-2d.md" \
        > "$WORK/bench-sums-2d.log" 2>&1
    ncu_part j2d5pt-t4-prefetch6 j2d5pt 8192 20 25 --strategy streaming --time-tile 4 \
        --prefetch 6
    ncu_part j3d7pt-t2-prefetch6 j3d7pt 512 20 5 --strategy streaming --time-tile 2 \
        --prefetch 6
    cat "$WORK"/gpu-prefetch.md "$WORK"/gpu-sums-*.md 2>/dev/null
    end_session
}

# After a cost-model change: what the default plans reach beside `tiled` and the hand kernels
# at the paper sizes, the tiny grids' defaults, `explain` on the device, and Nsight Compute's
# view (throughput, occupancy, stalls) of the 3D kernels that fall short.
check() {
    start_session "$1" 400
    "$DEV/tessera" explain benchmarks/j3d7pt.tess --backend cuda > "$WORK/explain-j3d7pt.txt" 2>&1
    local name plan
    for plan in "streaming" "streaming --time-tile 2" "overlapped --time-tile 4" \
        "wavefront --time-tile 4"; do
        name=$(echo "$plan" | tr -d ' -')
        # shellcheck disable=SC2086 # the plan is several words on purpose
        ncu_part "$name" j3d7pt 512 35 60 --strategy $plan
    done
    part "tiny defaults" 40 5 "${GPU_BENCH[@]}" --types f32 --size tiny --steps 1000 --reps 3 \
        --programs j2d5pt j3d7pt --plans naive default --out "$WORK/tiny-defaults.md" \
        > "$WORK/tiny-defaults.log" 2>&1
    part "bench defaults" 150 5 "${GPU_BENCH[@]}" --types f32 f64 --size paper --steps 20 \
        --reps 3 --plans tiled default --json "$WORK/gpu-defaults.json" \
        --out "$WORK/gpu-defaults.md" > "$WORK/bench-defaults.log" 2>&1
    end_session
}

# `tessera tune` of each paper case's default strategy (and overlapped where it is close): the
# measured best blocks, chunks and elements per thread, against the model's own choice.
tune() {
    start_session "$1" 400
    local bench=("${GPU_BENCH[@]}" --size paper --steps 20 --reps 3)
    part "bench fused" 70 260 "${bench[@]}" --types f32 --plans "streaming T=2" "streaming T=4" \
        "overlapped T=4" --json "$WORK/gpu-fused.json" --out "$WORK/gpu-fused.md" \
        > "$WORK/bench-fused.log" 2>&1
    part "bench register planes" 45 215 "${bench[@]}" --types f32 f64 --programs j3d7pt \
        j3d27pt --plans "streaming T=2 16x32 E=1" "streaming T=3 32x32 E=1" \
        "streaming T=4 32x32 E=1" "streaming T=3" --json "$WORK/gpu-register-planes.json" \
        --out "$WORK/gpu-register-planes.md" > "$WORK/bench-register-planes.log" 2>&1
    # 2D streaming time tiles since their steady trips: deeper passes than the model tries.
    part "bench deep" 30 200 "${bench[@]}" --types f32 f64 --programs j2d5pt --plans \
        "streaming T=4" "streaming T=8" --json "$WORK/gpu-deep.json" --out "$WORK/gpu-deep.md" \
        > "$WORK/bench-deep.log" 2>&1
    part "bench streaming" 90 160 "${bench[@]}" --types f32 f64 --programs j2d5pt j3d7pt j3d27pt \
        gaussian2d --plans "streaming E=2" "streaming E=4" "streaming chunk=32" \
        "streaming chunk=64" --json "$WORK/gpu-streaming.json" --out "$WORK/gpu-streaming.md" \
        > "$WORK/bench-streaming.log" 2>&1
    local case program ty strategy extent
    for case in "j3d7pt f32 streaming" "j3d7pt f64 streaming" "j2d5pt f32 streaming" \
        "j3d27pt f32 streaming" "gaussian2d f32 streaming" "j2d5pt f64 overlapped"; do
        read -r program ty strategy <<< "$case"
        extent=8192
        [[ $program == *3d* ]] && extent=512
        part "tune $case" 28 5 "$DEV/tessera" tune "benchmarks/$program.tess" --backend cuda \
            --set "N=$extent" --set "real=$ty" --strategy "$strategy" --budget 20s --steps 20 \
            --reps 3 --top 8 > "$WORK/tune-$program-$ty-$strategy.txt" 2>&1
    done
    end_session
}

case "${1:-}" in
    prepare) prepare ;;
    lease) lease "${2:-}" ;;
    run) run "${2:-}" ;;
    check) check "${2:-}" ;;
    defaults) defaults "${2:-}" ;;
    blocks) blocks "${2:-}" ;;
    profile) profile "${2:-}" ;;
    unmeasured) unmeasured "${2:-}" ;;
    tune) tune "${2:-}" ;;
    *) echo "usage: $0 prepare | lease OUT | run OUT | check OUT | defaults OUT | blocks OUT |" \
        "profile OUT | unmeasured OUT | tune OUT" >&2
        exit 2 ;;
esac
