"""Hand-written CUDA kernels of j2d5pt and j3d7pt, the baseline column of scripts/gpu-bench.py.

Two kernels per program, compiled with CuPy's NVRTC (`-fmad=false`, like Tessera's exact mode):
`naive`, one thread per point; and `careful`, what a performance engineer writes first: warps
along 128-wide rows, each thread walking a chunk of the slow axis (32 rows in 2D, 64 planes in
3D) with the slow-axis neighbours kept in registers. Both update the interior only, ping-pong
two buffers, and are timed with CUDA events: GCells/s of the interior, median of `reps`.
"""

import statistics

SOURCES = {
    "j2d5pt": r"""
extern "C" __global__ void naive(const T* a, T* b, long n) {
    long x = blockIdx.x * (long)blockDim.x + threadIdx.x + 1;
    long y = blockIdx.y * (long)blockDim.y + threadIdx.y + 1;
    if (x >= n - 1 || y >= n - 1) return;
    long i = y * n + x;
    b[i] = ((T)5.1 * a[i - n] + (T)12.1 * a[i - 1] + (T)15.0 * a[i] + (T)12.2 * a[i + 1]
            + (T)5.2 * a[i + n]) / (T)49.6;
}
extern "C" __global__ void careful(const T* a, T* b, long n) {
    long x = blockIdx.x * (long)blockDim.x + threadIdx.x;
    long y0 = blockIdx.y * CHUNK + 1;
    if (x < 1 || x >= n - 1) return;
    long y1 = min(y0 + CHUNK, n - 1);
    T up = a[(y0 - 1) * n + x], mid = a[y0 * n + x];
    for (long y = y0; y < y1; ++y) {
        long i = y * n + x;
        T down = a[i + n];
        b[i] = ((T)5.1 * up + (T)12.1 * a[i - 1] + (T)15.0 * mid + (T)12.2 * a[i + 1]
                + (T)5.2 * down) / (T)49.6;
        up = mid; mid = down;
    }
}
""",
    "j3d7pt": r"""
extern "C" __global__ void naive(const T* a, T* b, long n) {
    long x = blockIdx.x * (long)blockDim.x + threadIdx.x + 1;
    long y = blockIdx.y * (long)blockDim.y + threadIdx.y + 1;
    long z = blockIdx.z * (long)blockDim.z + threadIdx.z + 1;
    if (x >= n - 1 || y >= n - 1 || z >= n - 1) return;
    long p = n * n, i = z * p + y * n + x;
    b[i] = (T)0.4 * a[i] + (T)0.1 * (a[i - p] + a[i + p] + a[i - n] + a[i + n] + a[i - 1]
                                     + a[i + 1]);
}
extern "C" __global__ void careful(const T* a, T* b, long n) {
    long x = blockIdx.x * (long)blockDim.x + threadIdx.x;
    long y = blockIdx.y * (long)blockDim.y + threadIdx.y;
    long z0 = blockIdx.z * CHUNK + 1;
    if (x < 1 || x >= n - 1 || y < 1 || y >= n - 1) return;
    long p = n * n, z1 = min(z0 + CHUNK, n - 1);
    T below = a[(z0 - 1) * p + y * n + x], mid = a[z0 * p + y * n + x];
    for (long z = z0; z < z1; ++z) {
        long i = z * p + y * n + x;
        T above = a[i + p];
        b[i] = (T)0.4 * mid + (T)0.1 * (below + above + a[i - n] + a[i + n] + a[i - 1]
                                        + a[i + 1]);
        below = mid; mid = above;
    }
}
""",
}


def launch_shapes(program, kernel, n):
    """(grid, block) of `kernel` over an n-wide grid of `program`."""
    inner = n - 2
    up = lambda a, b: (a + b - 1) // b  # noqa: E731
    if program == "j2d5pt":
        if kernel == "naive":
            return (up(inner, 32), up(inner, 8)), (32, 8)
        return (up(n, 128), up(inner, 32)), (128, 1)
    if kernel == "naive":
        return (up(inner, 32), up(inner, 4), up(inner, 2)), (32, 4, 2)
    return (up(n, 64), up(n, 4), up(inner, 64)), (64, 4, 1)


def measure(program, ty, n, steps, reps):
    """{kernel: GCells/s} of the hand kernels of `program`, or {} where there are none."""
    if program not in SOURCES or ty not in ("f32", "f64"):
        return {}
    import cupy

    dtype = cupy.float32 if ty == "f32" else cupy.float64
    chunk = 32 if program == "j2d5pt" else 64
    source = f"typedef {'float' if ty == 'f32' else 'double'} T;\n#define CHUNK {chunk}\n"
    module = cupy.RawModule(code=source + SOURCES[program], options=("-fmad=false",))
    axes = 2 if program == "j2d5pt" else 3
    shape = (n,) * axes
    a = cupy.random.random(shape).astype(dtype)
    b = a.copy()
    cells = (n - 2) ** axes
    rates = {}
    for name in ("naive", "careful"):
        kernel = module.get_function(name)
        grid, block = launch_shapes(program, name, n)
        times = []
        for _ in range(reps + 1):
            start, stop = cupy.cuda.Event(), cupy.cuda.Event()
            start.record()
            src, dst = a, b
            for _ in range(steps):
                kernel(grid, block, (src, dst, cupy.int64(n)))
                src, dst = dst, src
            stop.record()
            stop.synchronize()
            times.append(cupy.cuda.get_elapsed_time(start, stop) / 1e3)
        rates[name] = cells * steps / statistics.median(times[1:]) / 1e9
    return rates
