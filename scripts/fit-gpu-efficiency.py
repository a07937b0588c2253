#!/usr/bin/env python3
"""Refits the GPU cost model's measured efficiencies from `scripts/gpu-bench.py --json` reports.

Each `tessera bench --json` report carries the cost model's prediction for its plan
(`predicted`: GCells/s, the kind of kernel, the grid's dimension and the efficiency applied).
A kind's efficiency is the geometric mean, over its reports, of measured over predicted
GCells/s times the efficiency the prediction applied: what
`tessera_plan::gpu_cost::MEASURED_EFFICIENCY` should hold for that kind, dimension, element
size (bytes: f16 2, f32 4, f64 8) and time tile (the plan's `T=`, 1 without one). The
script prints those rows and how far the refitted model is from the measurements:

    python3 scripts/gpu-bench.py --json gpu.json          # on the GPU
    python3 scripts/fit-gpu-efficiency.py gpu.json [more.json ...]
"""
import argparse
import json
import math
import re
from collections import defaultdict

# Bytes of an element of each type the benchmark cases name (`j2d5pt f32`).
ELEMENT_BYTES = {"f16": 2, "f32": 4, "f64": 8}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("reports", nargs="+", help="JSON files of scripts/gpu-bench.py --json")
    args = parser.parse_args()
    reports = []
    for path in args.reports:
        with open(path) as file:
            reports += json.load(file)
    logs = defaultdict(list)
    for report in reports:
        predicted = report.get("predicted")
        measured = report.get("gcells_per_s")
        if not predicted or not measured:
            continue
        bare = predicted["gcells_per_s"] / predicted["efficiency"]
        element = ELEMENT_BYTES[report["case"].split()[1]]
        tile = re.search(r" T=(\d+)", report.get("strategy", ""))
        key = (predicted["kernel_class"], predicted["dims"], element,
               int(tile.group(1)) if tile else 1)
        logs[key].append((math.log(measured / bare), report["case"], report["plan"]))
    if not logs:
        raise SystemExit("no report has both a measured rate and a prediction")
    squared = []
    print("MEASURED_EFFICIENCY rows (kind, dimension, element bytes, time tile, efficiency),",
          "from", sum(len(v) for v in logs.values()), "plans:")
    for (kind, dims, element, tile), values in sorted(logs.items()):
        mean = sum(v for v, _, _ in values) / len(values)
        print(f'    h200("{kind}", {dims}, {element}, {tile}, {math.exp(mean):.3f}),  '
              f'// {len(values)} plans')
        squared += [(v - mean) ** 2 for v, _, _ in values]
        worst = max(values, key=lambda v: abs(v[0] - mean))
        print(f"        worst: {worst[1]} {worst[2]}, off by a factor "
              f"{math.exp(abs(worst[0] - mean)):.2f}")
    rms = math.sqrt(sum(squared) / len(squared))
    print(f"refitted model: root mean square of ln(predicted / measured) {rms:.3f} "
          f"(a factor {math.exp(rms):.2f}); UNMEASURED_MARGIN should stay near that factor")


if __name__ == "__main__":
    main()
