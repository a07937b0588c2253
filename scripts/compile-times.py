#!/usr/bin/env python3
"""Cold compile times of every benchmark program, per backend, strategy and mode.

Each compile runs `tessera bench --compile-only` with a fresh, empty kernel cache, at the
program's own (benchmark) size, and records the compile time and the generated source's
size. The end prints a Markdown table (one row per program, one column per strategy and
mode), the median and largest compile time, and the largest exact/default ratio.

    python3 scripts/compile-times.py                       # cpu, every strategy
    python3 scripts/compile-times.py --backend opencl      # OpenCL (a build with the feature)
    python3 scripts/compile-times.py --programs box3d4r j2d5pt --json times.json
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STRATEGIES = {
    "cpu": ["naive", "parallel", "overlapped", "wavefront"],
    "opencl": ["naive", "tiled", "streaming"],
    "cuda": ["naive", "tiled", "streaming"],
}


def compile_once(tessera, program, backend, strategy, exact):
    """One cold compile: its JSON report, or the reason it did not compile."""
    with tempfile.TemporaryDirectory() as cache:
        command = [
            tessera, "bench", str(program), "--backend", backend, "--strategy", strategy,
            "--compile-only", "--json",
        ] + (["--exact"] if exact else [])
        env = dict(os.environ, TESSERA_CACHE_DIR=cache)
        done = subprocess.run(command, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        lines = done.stderr.strip().splitlines() or ["failed"]
        return {"error": lines[0]}
    return json.loads(done.stdout)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tessera", default=str(ROOT / "target/release/tessera"))
    parser.add_argument("--backend", default="cpu", choices=sorted(STRATEGIES))
    parser.add_argument("--programs", nargs="*", help="names under benchmarks/ (default: all)")
    parser.add_argument("--strategies", nargs="*", help="a subset of the backend's strategies")
    parser.add_argument("--json", help="also write every measurement to this file")
    args = parser.parse_args()

    names = args.programs or sorted(p.stem for p in (ROOT / "benchmarks").glob("*.tess"))
    strategies = args.strategies or STRATEGIES[args.backend]
    results = []
    for name in names:
        program = ROOT / "benchmarks" / f"{name}.tess"
        for strategy in strategies:
            for exact in (False, True):
                report = compile_once(args.tessera, program, args.backend, strategy, exact)
                report.update(name=name, strategy=strategy, exact=exact)
                results.append(report)
                shown = report.get("compile_seconds", report.get("error"))
                print(f"{name} {strategy} {'exact' if exact else 'default'}: {shown}",
                      file=sys.stderr, flush=True)

    columns = [(s, e) for s in strategies for e in (False, True)]
    header = " | ".join(f"{s} {'exact' if e else 'default'}" for s, e in columns)
    print(f"| program | {header} | largest source |")
    print("|---|" + "---|" * (len(columns) + 1))
    by_key = {(r["name"], r["strategy"], r["exact"]): r for r in results}
    for name in names:
        cells, largest = [], 0
        for s, e in columns:
            r = by_key[(name, s, e)]
            if "compile_seconds" in r:
                cells.append(f"{r['compile_seconds']:.2f}")
                largest = max(largest, r["source_bytes"] or 0)
            else:
                cells.append("—")
        size = f"{largest / 1024:.0f} KiB" if largest else "—"
        print(f"| {name} | " + " | ".join(cells) + f" | {size} |")

    times = [r["compile_seconds"] for r in results if "compile_seconds" in r]
    ratios = []
    for name in names:
        for s in strategies:
            d, x = by_key[(name, s, False)], by_key[(name, s, True)]
            if "compile_seconds" in d and "compile_seconds" in x and d["compile_seconds"] > 0:
                ratios.append((x["compile_seconds"] / d["compile_seconds"], name, s))
    print()
    print(f"{len(times)} compiles: median {statistics.median(times):.2f} s, "
          f"largest {max(times):.2f} s" if times else "no compiles")
    if ratios:
        worst = max(ratios)
        print(f"largest exact/default ratio: {worst[0]:.2f} ({worst[1]}, {worst[2]})")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
