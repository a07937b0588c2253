"""Heat diffusion from Python: runs examples/heat.tess on a NumPy array (updated in place, no
copies), then plots the temperature and the time series of the `heat` reduction.

    pip install ./crates/tessera-python matplotlib
    python examples/python/heat.py --size 256 --steps 2000 --output heat-python.png
"""

import argparse
import pathlib

import numpy as np

import tessera

PROGRAM = pathlib.Path(__file__).resolve().parent.parent / "heat.tess"


def simulate(size, steps, backend):
    """The temperature after `steps` steps and the `heat` reduction's steps and values."""
    program = tessera.Program.from_file(PROGRAM, params={"N": size})
    # Zero steps give the declared initial temperature as a NumPy array.
    u = program.run(steps=0, backend=backend).fields["u"]
    result = program.run(steps=steps, backend=backend, inputs={"u": u})
    assert result.fields["u"] is u  # the run worked on `u` itself
    print(f"{result.steps} steps of {size}x{size} on {result.plan}: "
          f"{result.seconds:.3f} s, {result.gcells_per_s:.2f} GCells/s")
    return u, result.reduction_steps["heat"], result.reductions["heat"]


def plot(u, steps, heat, output):
    """The field and the reduction's time series side by side, saved to `output`."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, (field_axes, series_axes) = plt.subplots(1, 2, figsize=(10, 4.2))
    image = field_axes.imshow(u, cmap="inferno", origin="upper")
    field_axes.set_title("temperature u")
    figure.colorbar(image, ax=field_axes, shrink=0.85)
    series_axes.plot(steps + 1, heat, marker="o")
    series_axes.set_xlabel("step")
    series_axes.set_ylabel("sum of u")
    series_axes.set_title("reduction `heat`")
    figure.tight_layout()
    figure.savefig(output, dpi=100)
    print(f"wrote {output}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=256)
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--backend", default="cpu")
    parser.add_argument("--output", default="heat-python.png")
    args = parser.parse_args()
    u, steps, heat = simulate(args.size, args.steps, args.backend)
    assert np.isfinite(u).all()
    plot(u, steps, heat, args.output)


if __name__ == "__main__":
    main()
