#!/usr/bin/env python3
"""The scaling model of docs/scaling.md: a 3D 7-point stencil (f32) on K GPUs, weak and strong.

Each rank holds a box of the grid (the fastest axis never cut: a 2D decomposition of z and y)
and exchanges halos of depth T*r every T steps with up to 4 neighbours. Per exchange and
neighbour a message costs latency + bytes / bandwidth; a deep halo (T > 1) sends the same bytes
per step in T times fewer messages, and pays redundant computation on the halo, which shrinks
by r per fused step. With overlap, the exchange hides behind the interior's computation.

    python3 scripts/scaling-model.py            # the table in docs/scaling.md
    python3 scripts/scaling-model.py --rate 300 --latency 3e-6 --bandwidth 12.5e9
"""

import argparse
import math


def dims_create(k):
    """k ranks over (z, y) as evenly as possible (MPI_Dims_create without the fastest axis)."""
    best = (k, 1)
    for a in range(1, int(math.isqrt(k)) + 1):
        if k % a == 0:
            best = (k // a, a)
    return best


def step_time(box, ranks, t, args, overlap):
    """Seconds per step of one rank: its box (nz, ny, nx), ranks per axis, T steps per exchange."""
    nz, ny, nx = box
    r = 1
    h = t * r
    cut = [ranks[0] > 1, ranks[1] > 1]
    # Redundant computation: fused step s (1..T) computes the box grown by (T - s) * r on cut sides.
    cells = 0
    for s in range(1, t + 1):
        g = (t - s) * r
        cells += (nz + 2 * g * cut[0]) * (ny + 2 * g * cut[1]) * nx
    compute = cells / t / (args.rate * 1e9)
    neighbours = 2 * cut[0] + 2 * cut[1]
    face_z = h * ny * nx * 4
    face_y = h * nz * nx * 4
    bytes_per_exchange = 2 * cut[0] * face_z + 2 * cut[1] * face_y
    exchange = (neighbours * args.latency + bytes_per_exchange / args.bandwidth) / t
    return max(compute, exchange) if overlap else compute + exchange


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rate", type=float, default=100.0,
                        help="GCells/s of one GPU (default: Tessera's j3d7pt f32 on an H100)")
    parser.add_argument("--latency", type=float, default=2e-6, help="seconds per message")
    parser.add_argument("--bandwidth", type=float, default=25e9,
                        help="bytes/s per rank (NDR InfiniBand, 200 Gb/s)")
    parser.add_argument("--weak-box", type=int, default=512, help="weak scaling: N^3 per GPU")
    parser.add_argument("--strong-grid", type=int, default=2048, help="strong scaling: N^3 in all")
    args = parser.parse_args()
    print("| K | weak T=1 | weak T=4 | weak T=4 + overlap | strong T=1 | strong T=4 | strong T=4 + overlap |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    n = args.weak_box
    one = step_time((n, n, n), (1, 1), 1, args, False)
    g = args.strong_grid
    strong_one = g ** 3 / (args.rate * 1e9)
    for k in [2, 8, 64, 256, 1024]:
        ranks = dims_create(k)
        cells = []
        for t, overlap in [(1, False), (4, False), (4, True)]:
            cells.append(f"{one / step_time((n, n, n), ranks, t, args, overlap) * 100:.0f} %")
        box = (math.ceil(g / ranks[0]), math.ceil(g / ranks[1]), g)
        for t, overlap in [(1, False), (4, False), (4, True)]:
            speedup = strong_one / step_time(box, ranks, t, args, overlap)
            cells.append(f"{speedup / k * 100:.0f} %")
        print(f"| {k} ({ranks[0]}x{ranks[1]}) | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
