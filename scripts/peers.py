#!/usr/bin/env python3
"""Times Tessera and its peers side by side, on this machine, in one run (issue 3's table).

Peers: a plain C loop (-O3 -march=native, OpenMP over the slowest axis), pystencils, Devito and
Halide (each skipped with a note when its package is missing). Every peer computes the same
stencil as the Tessera program (same weights, same interior, boundary values kept), is first
checked against a NumPy model on a small awkward grid, then timed: per round, a warm-up run and
the median of `--reps` runs of the full step count; the best round's median counts. Tessera is
timed through `tessera bench --json` (its own median over `--reps` runs) in the same rounds,
once per target instruction set (`--target-isa`; by default every x86 target this machine
runs, best first), against the same peers (compiled for this machine).

    python3 scripts/peers.py [--rows j2d5pt,j3d7pt-f64] [--rounds 2] [--reps 3]
                             [--target-isa avx2,sse2] [--json OUT]

Run it through `scripts/peers.sh`, which makes a virtual environment with the peers.
"""

import argparse
import ctypes
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def box(weights):
    """Terms (offset, weight) of a dense box of weights centred on the origin."""
    w = np.asarray(weights, dtype=np.float64)
    r = w.shape[0] // 2
    return [(tuple(int(i) - r for i in idx), float(w[idx])) for idx in np.ndindex(w.shape)]


def j3d27pt_weights():
    """BENCHMARKS.md's j3d27pt weights, as in benchmarks/j3d27pt.tess."""
    w = np.zeros((3, 3, 3))
    for dz, dy, dx in np.ndindex(w.shape):
        if dy == 1 and dx == 1:
            w[dz, dy, dx] = 1.5 + 0.01 * dz
        else:
            w[dz, dy, dx] = 0.5 + 0.05 * (3 * dy + dx) + 0.01 * dz
    return w


STAR7 = [((0, 0, 0), 0.4)] + [
    (tuple(s if a == axis else 0 for a in range(3)), 0.1) for axis in range(3) for s in (-1, 1)
]


def as_f64(row):
    """A row with `real` set to f64: the same stencil in double precision."""
    program, _, _, shape, steps, terms, scale = row
    return (program, ["real=f64"], "float64", shape, steps, terms, scale)


J2D5PT = ("j2d5pt", [], "float32", (4096, 4096), 100,
          [((-1, 0), 5.1), ((0, -1), 12.1), ((0, 0), 15.0), ((0, 1), 12.2), ((1, 0), 5.2)],
          1 / 49.6)
J3D7PT = ("j3d7pt", [], "float32", (256, 256, 256), 50, STAR7, 1.0)

# name -> (program, --set pairs, element type, grid, steps, terms, scale)
ROWS = {
    "j2d5pt": J2D5PT,
    "j2d5pt-f64": as_f64(J2D5PT),
    "j2d9pt-box": ("j2d9pt-box", [], "float32", (4096, 4096), 100,
                   box([[7.1, 5.1, 9.2], [12.1, 15.0, 12.2], [9.1, 5.2, 7.2]]), 1 / 82.2),
    "gaussian2d": ("gaussian2d", [], "float32", (4096, 4096), 20,
                   box(np.outer([1, 4, 6, 4, 1], [1, 4, 6, 4, 1])), 1 / 256),
    "j3d7pt": J3D7PT,
    "j3d7pt-f64": as_f64(J3D7PT),
    "j3d27pt": ("j3d27pt", [], "float32", (256, 256, 256), 20, box(j3d27pt_weights()), 1 / 21.57),
}


def radius(terms):
    return max(abs(o) for off, _ in terms for o in off)


def interior(shape, r):
    return tuple(slice(r, n - r) for n in shape)


def numpy_step(a, terms, scale):
    """One step of the stencil in float64, boundary kept (the model every peer is checked on)."""
    r = radius(terms)
    acc = np.zeros(tuple(n - 2 * r for n in a.shape))
    for off, w in terms:
        acc += w * a[tuple(slice(r + o, n - r + o) for o, n in zip(off, a.shape))]
    out = a.copy()
    out[interior(a.shape, r)] = acc * scale
    return out


class CLoop:
    """The plain C loop nest (restrict pointers, `#pragma omp parallel for` over the slowest
    axis), buffers swapped between steps."""

    name = "C -O3 + OpenMP"

    def __init__(self, shape, dtype, terms, scale, threads, workdir):
        ctype, suffix = ("float", "f") if dtype == "float32" else ("double", "")
        r = radius(terms)
        strides = [int(np.prod(shape[a + 1:])) for a in range(len(shape))]
        index = " + ".join(f"p{a} * {s}" for a, s in enumerate(strides))
        expr = " + ".join(
            f"{w!r}{suffix} * a[i + {sum(o * s for o, s in zip(off, strides))}]" for off, w in terms
        )
        loops = "".join(
            f"{'    ' * a}for (int64_t p{a} = {r}; p{a} < {n - r}; p{a}++)\n"
            for a, n in enumerate(shape)
        )
        source = f"""#include <stdint.h>
static void step(const {ctype}* restrict a, {ctype}* restrict b) {{
    #pragma omp parallel for num_threads({threads})
{loops}        {{ const int64_t i = {index}; b[i] = ({expr}) * {scale!r}{suffix}; }}
}}
void run({ctype}* a, {ctype}* b, int64_t steps) {{
    for (int64_t t = 0; t < steps; t++) {{
        step(a, b);
        {ctype}* s = a; a = b; b = s;
    }}
}}
"""
        path = os.path.join(workdir, f"cloop_{abs(hash(source))}.c")
        with open(path, "w") as f:
            f.write(source)
        lib = path[:-2] + ".so"
        subprocess.run(["cc", "-O3", "-march=native", "-fopenmp", "-fPIC", "-shared", path,
                        "-o", lib], check=True)
        self.fn = ctypes.CDLL(lib).run
        self.fn.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64]

    def prepare(self, data):
        self.bufs = [data.copy(), data.copy()]

    def run(self, steps):
        self.fn(self.bufs[0].ctypes.data, self.bufs[1].ctypes.data, steps)
        return self.bufs[steps % 2]


class Pystencils:
    """pystencils: one compiled kernel (OpenMP, vectorized for this CPU), called per step."""

    name = "pystencils"

    def __init__(self, shape, dtype, terms, scale, threads, workdir):
        import pystencils as ps

        src, dst = ps.fields(f"src, dst: {dtype}[{len(shape)}D]", layout="c")
        expr = sum(w * src[off] for off, w in terms) * scale
        assignment = ps.Assignment(dst.center, expr)
        config = ps.CreateKernelConfig(target=ps.Target.CurrentCPU, ghost_layers=radius(terms))
        config.cpu.openmp.enable = True
        config.cpu.openmp.num_threads = threads
        config.cpu.vectorize.enable = True
        config.cpu.vectorize.assume_inner_stride_one = True
        self.kernel = ps.create_kernel(assignment, config).compile()

    def prepare(self, data):
        self.bufs = [data.copy(), data.copy()]

    def run(self, steps):
        a, b = self.bufs
        for _ in range(steps):
            self.kernel(src=a, dst=b)
            a, b = b, a
        return a


class Devito:
    """Devito: a TimeFunction on an interior subdomain, one operator over all the steps."""

    name = "Devito"

    def __init__(self, shape, dtype, terms, scale, threads, workdir):
        os.environ["OMP_NUM_THREADS"] = str(threads)
        from devito import Eq, Grid, Operator, SubDomain, TimeFunction, configuration

        configuration["language"] = "openmp"
        configuration["log-level"] = "ERROR"
        r = radius(terms)

        class Inner(SubDomain):
            name = "inner"

            def define(self, dimensions):
                return {d: ("middle", r, r) for d in dimensions}

        try:
            grid = Grid(shape=shape, dtype=np.dtype(dtype).type)
            inner = Inner(grid=grid)
        except TypeError:  # Devito before 4.8.11 attaches subdomains to the grid
            inner = Inner()
            grid = Grid(shape=shape, dtype=np.dtype(dtype).type, subdomains=(inner,))
        self.u = TimeFunction(name="u", grid=grid, space_order=r, time_order=1)
        t = grid.stepping_dim
        dims = grid.dimensions
        expr = sum(w * self.u[(t,) + tuple(d + o for d, o in zip(dims, off))] for off, w in terms)
        self.op = Operator([Eq(self.u.forward, expr * scale, subdomain=inner)], opt="advanced")

    def prepare(self, data):
        self.u.data[0] = data
        self.u.data[1] = data

    def run(self, steps):
        self.op.apply(time_m=0, time_M=steps - 1)
        return np.asarray(self.u.data[steps % 2])


class Halide:
    """Halide (JIT): the stencil vectorized along x and parallel over the slowest axis, realized
    into the interior of the other buffer once per step."""

    name = "Halide"

    def __init__(self, shape, dtype, terms, scale, threads, workdir):
        os.environ["HL_NUM_THREADS"] = str(threads)
        import halide as hl

        self.hl = hl
        d = len(shape)
        ty = hl.Float(32) if dtype == "float32" else hl.Float(64)
        self.input = hl.ImageParam(ty, d, "input")
        v = [hl.Var(n) for n in "xyzw"[:d]]  # x is the fastest axis, the last numpy axis
        f = hl.Func("f")
        cast = hl.f32 if dtype == "float32" else hl.f64
        f[v] = sum(cast(w) * self.input[[v[a] + off[d - 1 - a] for a in range(d)]]
                   for off, w in terms) * cast(scale)
        f.vectorize(v[0], 16 if dtype == "float32" else 8)
        if d == 2:  # strips of 16 rows
            yo, yi = hl.Var("yo"), hl.Var("yi")
            f.split(v[1], yo, yi, 16).parallel(yo)
        else:
            f.parallel(v[d - 1])
        self.f = f
        self.r = radius(terms)
        self.f.compile_jit()

    def prepare(self, data):
        hl = self.hl
        self.bufs = [data.copy(), data.copy()]
        r = self.r
        self.views = []
        for arr in self.bufs:
            whole = hl.Buffer(arr)
            out = whole
            for a in range(whole.dimensions()):
                out = out.cropped(a, r, whole.dim(a).extent() - 2 * r)
            self.views.append((whole, out))

    def run(self, steps):
        a, b = 0, 1
        for _ in range(steps):
            self.input.set(self.views[a][0])
            self.f.realize(self.views[b][1])
            a, b = b, a
        return self.bufs[a]


PEERS = [CLoop, Pystencils, Devito, Halide]


def time_peer(peer, data, steps, reps):
    peer.prepare(data)
    peer.run(min(steps, 2))  # warm-up
    times = []
    for _ in range(reps):
        peer.prepare(data)
        start = time.perf_counter()
        peer.run(steps)
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def runnable_isas():
    """The x86 targets this machine runs, best first (from /proc/cpuinfo)."""
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((line.split(":", 1)[1].split() for line in f
                          if line.startswith("flags")), [])
    except OSError:
        flags = []
    isas = []
    if {"avx512f", "avx512bw", "avx512vl"} <= set(flags):
        isas.append("avx512")
    if {"avx2", "fma"} <= set(flags):
        isas.append("avx2")
    return isas + ["sse2"] if flags else ["native"]


def time_tessera(tessera, program, sets, steps, reps, threads, isa):
    cmd = [tessera, "bench", os.path.join(ROOT, "benchmarks", program + ".tess"), "--steps",
           str(steps), "--reps", str(reps), "--threads", str(threads), "--target-isa", isa,
           "--json"]
    for s in sets:
        cmd += ["--set", s]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    result = json.loads(out)
    return result["seconds"], result


def check(peer_class, name, dtype, terms, scale, threads, workdir):
    """The peer's result after 3 steps on an awkward grid, against the NumPy model."""
    dims = len(terms[0][0])
    shape = (37, 29, 23)[:dims] if dims == 3 else (67, 53)
    rng = np.random.default_rng(7)
    data = rng.random(shape).astype(dtype)
    peer = peer_class(shape, dtype, terms, scale, threads, workdir)
    peer.prepare(data)
    got = np.asarray(peer.run(3), dtype=np.float64)
    want = data.astype(np.float64)
    for _ in range(3):
        want = numpy_step(want, terms, scale)
    tol = 1e-4 if dtype == "float32" else 1e-10
    err = float(np.max(np.abs(got - want)))
    if not err <= tol:
        raise SystemExit(f"{peer_class.name} disagrees with NumPy on {name}: max error {err}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", default=",".join(ROWS))
    parser.add_argument("--peers", default=",".join(p.__name__ for p in PEERS),
                        help="which peers (CLoop, Pystencils, Devito, Halide)")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--tessera", default=os.path.join(ROOT, "target/release/tessera"))
    parser.add_argument("--target-isa", default=",".join(runnable_isas()),
                        help="the targets Tessera is timed for (native, avx512, avx2, sse2)")
    parser.add_argument("--json", help="also write the results to this file")
    args = parser.parse_args()
    names = args.rows.split(",")
    isas = args.target_isa.split(",")
    peer_classes = [p for p in PEERS if p.__name__ in args.peers.split(",")]
    unknown = [n for n in names if n not in ROWS]
    if unknown:
        raise SystemExit(f"unknown rows {unknown}; known: {', '.join(ROWS)}")
    workdir = tempfile.mkdtemp(prefix="tessera-peers-")
    results = []
    tessera_cols = " | ".join(f"Tessera {isa} | ratio" for isa in isas)
    print(f"| row | {' | '.join(p.name for p in PEERS)} | best peer | {tessera_cols} |")
    print(f"|---|{'---|' * len(PEERS)}---|{'---|---|' * len(isas)}")
    for name in names:
        program, sets, dtype, shape, steps, terms, scale = ROWS[name]
        cells = float(np.prod(shape)) * steps
        peers = {}
        for peer_class in peer_classes:
            try:
                check(peer_class, name, dtype, terms, scale, args.threads, workdir)
                peers[peer_class.name] = peer_class(shape, dtype, terms, scale, args.threads,
                                                    workdir)
            except ImportError as e:
                print(f"  ({peer_class.name} skipped: {e})", file=sys.stderr)
        data = np.random.default_rng(1).random(shape).astype(dtype)
        best = {}
        plans = {}
        for _ in range(args.rounds):
            for peer_name, peer in peers.items():
                t = time_peer(peer, data, steps, args.reps)
                best[peer_name] = min(best.get(peer_name, t), t)
            for isa in isas:
                t, report = time_tessera(args.tessera, program, sets, steps, args.reps,
                                         args.threads, isa)
                key = f"Tessera {isa}"
                best[key] = min(best.get(key, t), t)
                plans[isa] = report.get("strategy")
        rate = {k: cells / t / 1e6 for k, t in best.items()}
        best_peer = max((v for k, v in rate.items() if not k.startswith("Tessera")),
                        default=float("nan"))
        cols = " | ".join(f"{rate[p.name]:.0f}" if p.name in rate else "-" for p in PEERS)
        ours = " | ".join(f"{rate[f'Tessera {isa}']:.0f} | {rate[f'Tessera {isa}'] / best_peer:.2f}"
                          for isa in isas)
        print(f"| {name} {'x'.join(map(str, shape))}x{steps} | {cols} | {best_peer:.0f} | "
              f"{ours} |", flush=True)
        results.append({"row": name, "mcells_per_s": rate, "best_peer": best_peer,
                        "tessera_strategy": plans})
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
