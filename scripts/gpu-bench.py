#!/usr/bin/env python3
"""The GPU benchmark table: every strategy and time-tile depth on the BENCHMARKS.md GPU cases.

For each case (program x element type) and plan (naive, tiled, streaming with its plane in
shared memory or read through the cache, with 2 or 4 elements per thread, or chunks of 32 or
64 planes, overlapped at T = 1..4, streaming time tiles at
T = 2..4, the wavefront at T = 2, 4, 8, and the default plan), one
`tessera bench --json` run measures the time loop (median of `--reps` runs) and, in the same
run, the device's copy bandwidth (a device-to-device copy): the roofline is that bandwidth
over the program's bytes per point and step (`explain`'s traffic model: one load and one
store, 8 bytes in f32, 16 in f64, 4 in f16, whose arithmetic is f32). The table gives
GCells/s, the fraction of that roofline (above 1 means the plan moves less than a load and a
store per point per step: temporal blocking), and the ratio to naive. On CUDA, where CuPy is
installed, two hand-written kernels (scripts/hand_kernels.py: one thread per point, and a
register-streaming kernel) run beside them for j2d5pt and j3d7pt at f32 and f64.

    scripts/gpu-bench.sh                                   # CUDA, the paper sizes
    python3 scripts/gpu-bench.py --backend opencl --size small --steps 8 --reps 2
    python3 scripts/gpu-bench.py --programs j2d5pt --out table.md --json raw.json
    python3 scripts/gpu-bench.py --size tiny --steps 1000 --plans naive default --graphs off
    python3 scripts/gpu-bench.py --programs j3d7pt --plans streaming --tiles 4x64 8x32

`--tiles` runs each chosen plan at each tile (`--tile`: the slower axis first, so 8x32 is a
block 32 wide and 8 tall in 3D streaming).

`--size tiny` (256^2, 64^3) measures the per-step overhead; `--graphs off` issues recorded
steps launch by launch instead of as CUDA graphs (TESSERA_CUDA_GRAPHS=0), to see what the
graphs save.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
import hand_kernels  # noqa: E402
# (program, element type, axes): the GPU rows of BENCHMARKS.md, and f16 storage (issue 39).
CASES = [
    ("j2d5pt", "f32", 2),
    ("j2d5pt", "f64", 2),
    ("j3d7pt", "f32", 3),
    ("j3d7pt", "f64", 3),
    ("j2d5pt", "f16", 2),
    ("j3d7pt", "f16", 3),
    ("j3d27pt", "f32", 3),
    ("gaussian2d", "f32", 2),
    ("fdtd2d", "f32", 2),
    ("j2d9pt-box", "f32", 2),
]
SIZES = {"paper": {2: 8192, 3: 512}, "small": {2: 512, 3: 64}, "tiny": {2: 256, 3: 64}}
# (name, plan flags, fields set in the plan's JSON: knobs without a flag).
PLANS = [
    ("naive", ["--strategy", "naive"], {}),
    ("tiled", ["--strategy", "tiled"], {}),
    ("streaming", ["--strategy", "streaming"], {}),
    ("streaming plane=cache", ["--strategy", "streaming"], {"plane_reads": "cache"}),
    ("streaming 4x64 plane=cache", ["--strategy", "streaming", "--tile", "4x64"],
     {"plane_reads": "cache"}),
] + [
    (f"streaming E={e}", ["--strategy", "streaming"], {"elements_per_thread": e})
    for e in (2, 4)
] + [
    (f"streaming chunk={c}", ["--strategy", "streaming"], {"stream_chunk": c})
    for c in (32, 64)
] + [
    (f"overlapped T={t}", ["--strategy", "overlapped", "--time-tile", str(t)], {})
    for t in (1, 2, 3, 4)
] + [
    (f"streaming T={t}", ["--strategy", "streaming", "--time-tile", str(t)], {})
    for t in (2, 3, 4, 6, 8)
] + [
    # The knobs of 2D time tiles at the depth measured fastest (j2d5pt T=4 on the H200).
    (f"streaming T=4 {name}", ["--strategy", "streaming", "--time-tile", "4"], fields)
    for name, fields in (("E=2", {"elements_per_thread": 2}), ("chunk=32", {"stream_chunk": 32}),
                         ("chunk=128", {"stream_chunk": 128}))
] + [
    # 3D tiles small enough for register planes (2 positions per thread), where box sums
    # are reordered plane by plane.
    ("streaming T=2 8x16 E=1", ["--strategy", "streaming", "--time-tile", "2", "--tile", "8x16"],
     {"elements_per_thread": 1}),
] + [
    # 3D tiles with register planes, one position of the reach a thread: 512 threads (12x28
    # points at T = 2; the default deeper) and 1024 (28x28 points; the default at T = 2).
    (f"streaming T={t} {tile} E=1",
     ["--strategy", "streaming", "--time-tile", str(t), "--tile", tile],
     {"elements_per_thread": 1})
    for t, tile in ((2, "16x32"), (3, "16x32"), (3, "32x32"), (4, "32x32"))
] + [
    (f"wavefront T={t}", ["--strategy", "wavefront", "--time-tile", str(t)], {})
    for t in (2, 4, 8)
] + [
    # Single-step streaming through the cache with its box sum added up plane by plane.
    (f"streaming E={e} sums=reordered", ["--strategy", "streaming"],
     {"elements_per_thread": e, "plane_reads": "cache", "reordered_sums": True})
    for e in (1, 4)
] + [("default", [], {})] + [
    # The model's best streaming time tile, each thread loading its input planes ahead (the
    # kernel rounds the distance down to a divisor of its unrolling: 6 is a whole trip).
    (f"default prefetch={d}", ["--prefetch", str(d)], {})
    for d in (1, 3, 6)
]


def bench(tessera, backend, program, ty, n, steps, reps, plan_args, fields):
    """One `tessera bench --json` run: its report, or the reason it failed. With `fields`,
    the plan comes from `tessera plan --json` with those fields replaced (`--plan`)."""
    source = ["--set", f"N={n}", "--set", f"real={ty}"]
    program_path = str(ROOT / "benchmarks" / f"{program}.tess")
    if fields:
        planned = subprocess.run([tessera, "plan", program_path, "--backend", backend, "--json"]
                                 + source + plan_args, capture_output=True, text=True)
        if planned.returncode != 0:
            return {"error": (planned.stderr.strip().splitlines() or ["plan failed"])[-1]}
        plan = json.loads(planned.stdout)
        plan["backend"][backend].update(fields)
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as file:
            json.dump(plan, file)
        plan_args = ["--plan", file.name]
    command = [
        tessera, "bench", program_path, "--backend", backend, "--steps", str(steps),
        "--reps", str(reps), "--json",
    ] + source + plan_args
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        return {"error": (done.stderr.strip().splitlines() or ["failed"])[-1]}
    return json.loads(done.stdout)


def hand_kernels_available():
    """Whether CuPy (which compiles and times the hand kernels) imports here."""
    try:
        import cupy  # noqa: F401
    except ImportError:
        print("hand kernels skipped: CuPy is not installed", file=sys.stderr)
        return False
    return True


def cell(report, naive):
    """A table cell: GCells/s, fraction of the copy roofline, ratio to naive, and the cost
    model's prediction in brackets (`[p 310]`) where the backend gave one."""
    if "error" in report:
        return "refused: " + report["error"].replace("|", "/")[:60]
    text = f"{report['gcells_per_s']:.3g} ({report['fraction_of_roofline']:.2f})"
    if naive and "gcells_per_s" in naive:
        text += f" {report['gcells_per_s'] / naive['gcells_per_s']:.2f}x"
    predicted = (report.get("predicted") or {}).get("gcells_per_s")
    if predicted:
        text += f" [p {predicted:.3g}]"
    return text


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--backend", default="cuda", choices=["cuda", "opencl"])
    parser.add_argument("--size", default="paper", choices=sorted(SIZES))
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--programs", nargs="*", help="only these programs")
    parser.add_argument("--plans", nargs="*", help="only the plans of these names")
    parser.add_argument("--types", nargs="*", help="only these element types (f32 f64 f16)")
    parser.add_argument("--tiles", nargs="*", help="each plan at each of these tiles (AxB)")
    parser.add_argument("--graphs", default="on", choices=["on", "off"],
                        help="CUDA: replay recorded steps as graphs (on) or launch by launch")
    parser.add_argument("--tessera", default=str(ROOT / "target" / "release" / "tessera"))
    parser.add_argument("--out", help="write the Markdown table here too")
    parser.add_argument("--json", help="write every report here")
    args = parser.parse_args()
    os.environ["TESSERA_CUDA_GRAPHS"] = "1" if args.graphs == "on" else "0"

    reports = []
    hand = args.backend == "cuda" and hand_kernels_available()
    hand_names = ["hand naive", "hand careful"] if hand else []
    plans = [p for p in PLANS if not args.plans or p[0] in args.plans]
    if args.tiles:
        plans = [(f"{name} {tile}", flags + ["--tile", tile], fields)
                 for name, flags, fields in plans for tile in args.tiles]
    names = [name for name, _, _ in plans] + hand_names
    rows = ["| case | " + " | ".join(names) + " |", "|" + " --- |" * (len(names) + 1)]
    for program, ty, axes in CASES:
        if args.programs and program not in args.programs:
            continue
        if args.types and ty not in args.types:
            continue
        n = SIZES[args.size][axes]
        results = []
        for name, plan_args, fields in plans:
            report = bench(args.tessera, args.backend, program, ty, n, args.steps, args.reps,
                           plan_args, fields)
            report.update(case=f"{program} {ty}", plan=name)
            results.append(report)
            print(f"{program} {ty} {n}^{axes} {name}: {cell(report, None)}", file=sys.stderr)
        naive = next((r for r in results if r["plan"] == "naive"), None)
        cells = [cell(r, naive) for r in results]
        if hand:
            try:
                rates = hand_kernels.measure(program, ty, n, args.steps, args.reps)
            except Exception as error:  # a failed hand kernel must not end the table
                print(f"hand kernels of {program} {ty} failed: {error}", file=sys.stderr)
                rates = {}
            for name in ("naive", "careful"):
                if name in rates:
                    results.append({"case": f"{program} {ty}", "plan": f"hand {name}",
                                    "gcells_per_s": rates[name]})
                    print(f"{program} {ty} {n}^{axes} hand {name}: {rates[name]:.3g}",
                          file=sys.stderr)
            cells += [f"{rates[k]:.3g}" if k in rates else "" for k in ("naive", "careful")]
        reports += results
        size = "x".join([str(n)] * axes)
        rows.append(f"| {program} {ty} {size} | " + " | ".join(cells) + " |")
        if args.json:  # after each case, so that a run stopped at its time limit keeps these
            Path(args.json).write_text(json.dumps(reports, indent=1))
    device = next((r["strategy"].split(" on ", 1)[-1] for r in reports if "strategy" in r), "?")
    table = "\n".join(rows)
    graphs = f", graphs {args.graphs}" if args.backend == "cuda" else ""
    legend = (f"\n\n{args.backend} on {device}, {args.steps} steps, median of {args.reps}{graphs}; "
              "cells: GCells/s (fraction of the copy roofline) ratio to naive [cost model's prediction]"
              + ("; hand kernels: GCells/s." if hand else "."))
    print(table + legend)
    if args.out:
        Path(args.out).write_text(table + legend + "\n")


if __name__ == "__main__":
    main()
