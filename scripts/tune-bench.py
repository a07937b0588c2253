#!/usr/bin/env python3
"""The default (model) plan against the tuned plan, for every benchmark program, in one run.

For each program under benchmarks/ this runs, with one private cache directory (kernel cache
and tuning database) for the whole run:

  1. `tessera tune --budget B`          the search, which stores the best plan;
  2. `tessera bench --no-tuned --json`  the backend's default plan, and
     `tessera bench --json`             the tuned plan (the report says `"tuned": true`),
     alternately, `--rounds` times each, so that both meet the same load;

all at the same size, steps and repetitions, and prints a Markdown table: both plans, the
median over the rounds of their GCells/s, and the ratio. Sizes default to the programs' own (the BENCHMARKS.md cpu sizes);
`--size-1d/2d/3d` set `N` for a reduced run (himeno keeps its S size).

    python3 scripts/tune-bench.py                                   # full sizes, 60 s each
    python3 scripts/tune-bench.py --size-2d 1024 --size-3d 96 --size-1d 1048576 \\
        --steps 20 --budget 10s --reps 3                            # a reduced run
    python3 scripts/tune-bench.py --programs j2d5pt j3d7pt --json tune.json
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def dims_of(program):
    """The number of grid axes of a program file (from its `grid [...]` line)."""
    match = re.search(r"^grid\s*\[([^\]]*)\]", program.read_text(), re.MULTILINE)
    return len(match.group(1).split(",")) if match else 0


def sets_for(program, sizes):
    """`--set N=...` for the program's rank when a size is given for it."""
    size = sizes.get(dims_of(program))
    text = program.read_text()
    if size is None or not re.search(r"^param N:", text, re.MULTILINE):
        return []
    return ["--set", f"N={size}"]


def tessera(args, env):
    """Runs tessera; returns its stdout, or raises with its first stderr line."""
    done = subprocess.run(args, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        lines = done.stderr.strip().splitlines() or ["failed"]
        raise RuntimeError(lines[-1])
    return done.stdout


def measure(binary, program, common, args, env):
    """Default bench, tune, tuned bench of one program: a result row."""
    row = {"program": program.stem}
    try:
        tessera([binary, "tune", str(program), "--budget", args.budget] + common, env)
        bench = [binary, "bench", str(program), "--json"] + common
        defaults, tuneds = [], []
        for _ in range(args.rounds):
            defaults.append(json.loads(tessera(bench + ["--no-tuned"], env)))
            tuneds.append(json.loads(tessera(bench, env)))
    except (RuntimeError, json.JSONDecodeError) as error:
        row["error"] = str(error)
        return row
    default, tuned = defaults[0], tuneds[0]
    row.update(
        size=default["size"],
        steps=default["steps"],
        default_plan=default["strategy"],
        default_gcells=statistics.median(r["gcells_per_s"] for r in defaults),
        default_gcells_all=[r["gcells_per_s"] for r in defaults],
        tuned_plan=tuned["strategy"],
        tuned_gcells=statistics.median(r["gcells_per_s"] for r in tuneds),
        tuned_gcells_all=[r["gcells_per_s"] for r in tuneds],
        from_database=tuned["tuned"],
    )
    return row


def print_table(rows):
    """The Markdown table of every row."""
    print("| program | size | default plan | GCells/s | tuned plan | GCells/s | tuned/default |")
    print("| --- | --- | --- | ---: | --- | ---: | ---: |")
    for row in rows:
        if "error" in row:
            print(f"| {row['program']} | | error: {row['error']} | | | | |")
            continue
        ratio = row["tuned_gcells"] / row["default_gcells"] if row["default_gcells"] else 0.0
        print(
            f"| {row['program']} | {row['size']} | {row['default_plan']} | "
            f"{row['default_gcells']:.3f} | {row['tuned_plan']} | {row['tuned_gcells']:.3f} | "
            f"{ratio:.2f}x |"
        )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tessera", default=str(ROOT / "target/release/tessera"))
    parser.add_argument("--backend", default="cpu")
    parser.add_argument("--programs", nargs="*", help="names under benchmarks/ (default: all)")
    parser.add_argument("--size-1d", type=int, help="N of 1D programs")
    parser.add_argument("--size-2d", type=int, help="N of 2D programs")
    parser.add_argument("--size-3d", type=int, help="N of 3D programs")
    parser.add_argument("--steps", type=int, help="steps per run (default: the program's)")
    parser.add_argument("--reps", type=int, default=5, help="timed runs per measurement")
    parser.add_argument("--budget", default="60s", help="tuning budget per program")
    parser.add_argument("--rounds", type=int, default=3, help="alternating bench rounds")
    parser.add_argument("--json", help="also write every row to this file")
    args = parser.parse_args()

    sizes = {1: args.size_1d, 2: args.size_2d, 3: args.size_3d}
    names = args.programs or sorted(p.stem for p in (ROOT / "benchmarks").glob("*.tess"))
    rows = []
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, TESSERA_CACHE_DIR=cache)
        env.pop("TESSERA_BACKEND", None)
        for name in names:
            program = ROOT / "benchmarks" / f"{name}.tess"
            common = ["--backend", args.backend, "--reps", str(args.reps)]
            common += sets_for(program, sizes)
            common += ["--steps", str(args.steps)] if args.steps else []
            row = measure(args.tessera, program, common, args, env)
            print(json.dumps(row), file=sys.stderr, flush=True)
            rows.append(row)
    print_table(rows)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
