#!/usr/bin/env python3
"""What a call from Python costs beside the run itself: the first call (plan, compile or load
from the kernel cache), later calls on a small grid (the per-call overhead), and a large grid
given in place against one given in another layout (copied once).

    python scripts/python-bench.py            # after `pip install ./crates/tessera-python`
"""

import pathlib
import platform
import statistics
import time

import numpy as np

import tessera

HEAT = pathlib.Path(__file__).resolve().parent.parent / "examples" / "heat.tess"


def timed(call, repeats):
    """Median wall seconds of `repeats` calls, and the last result."""
    times, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = call()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def main():
    print(f"machine: {platform.processor() or platform.machine()}, Python {platform.python_version()}, "
          f"NumPy {np.__version__}, tessera {tessera.__version__}")
    small = tessera.Program.from_file(HEAT, params={"N": 64})
    start = time.perf_counter()
    small.run(steps=1)
    print(f"first call, N=64, 1 step (plan + kernel from the cache or compiled): "
          f"{(time.perf_counter() - start) * 1e3:.1f} ms")
    u = np.zeros(small.shape, dtype=np.float32)
    wall, result = timed(lambda: small.run(steps=1, inputs={"u": u}), 2000)
    print(f"later calls, N=64, 1 step, input in place: {wall * 1e6:.0f} us per call "
          f"(time loop {result.seconds * 1e6:.0f} us)")
    wall, result = timed(lambda: small.run(steps=1), 2000)
    print(f"later calls, N=64, 1 step, declared initial values: {wall * 1e6:.0f} us per call "
          f"(time loop {result.seconds * 1e6:.0f} us)")

    large = tessera.Program.from_file(HEAT, params={"N": 4096})
    u = large.run(steps=0).fields["u"]
    large.run(steps=1, inputs={"u": u})
    wall, result = timed(lambda: large.run(steps=10, inputs={"u": u}), 5)
    print(f"N=4096, 10 steps, input in place: {wall:.3f} s per call, time loop {result.seconds:.3f} s "
          f"({result.gcells_per_s:.2f} GCells/s)")
    fortran = np.asfortranarray(u)
    wall, result = timed(lambda: large.run(steps=10, inputs={"u": fortran}), 5)
    print(f"N=4096, 10 steps, Fortran-order input (copied once): {wall:.3f} s per call, "
          f"time loop {result.seconds:.3f} s")


if __name__ == "__main__":
    main()
