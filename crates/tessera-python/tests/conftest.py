"""Shared fixtures: the repository, the test corpus, the `tessera` command-line tool and random
inputs for a program's fields."""

import os
import pathlib

import numpy as np
import pytest

REPO = pathlib.Path(__file__).resolve().parents[3]
CORPUS = REPO / "crates" / "tessera-testkit" / "corpus"
EXAMPLES = REPO / "examples"


SIZE_PARAMS = {"N", "N0", "N1", "N2", "N3", "NX", "NY", "NZ"}


def corpus_programs():
    """Every program of the differential test corpus."""
    return sorted(CORPUS.glob("*.tess"))


def at_awkward_size(program_class, path):
    """The program at path with every size parameter set to a prime that suits its dimension
    (37 per axis in 1D and 2D, 13 in 3D, 7 in 4D)."""
    source = path.read_text()
    sizes = [name for name in SIZE_PARAMS if f"param {name}:" in source]
    extent = {1: 37, 2: 37, 3: 13}.get(len(sizes), 7)
    return program_class.from_file(path, params={name: extent for name in sizes})


@pytest.fixture(scope="session")
def tessera_cli():
    """The `tessera` binary the workspace build made (TESSERA_BIN overrides)."""
    given = os.environ.get("TESSERA_BIN")
    candidates = [pathlib.Path(given)] if given else [
        REPO / "target" / "debug" / "tessera",
        REPO / "target" / "release" / "tessera",
    ]
    for path in candidates:
        if path.is_file():
            return path
    message = f"no tessera binary at {', '.join(map(str, candidates))}; run `cargo build -p tessera`"
    if os.environ.get("CI") == "true":
        pytest.fail(message)
    pytest.skip(message)


def random_inputs(program, seed=7, table_steps=64):
    """Random values for every field of `program`, of its dtype and shape, for every input
    table, long enough for `table_steps` steps, and points for every receiver `at input` (the
    grid's first and last corners and a random point)."""
    rng = np.random.default_rng(seed)
    inputs = {name: rng.uniform(0.0, 1.0, table_steps + 8).astype(dtype)
              for name, dtype in program.tables.items()}
    shape = program.fields[0].shape if program.fields else ()
    for name, points in program.receivers.items():
        if points is None:
            corners = [[0] * len(shape), [extent - 1 for extent in shape]]
            inside = [int(rng.integers(0, extent)) for extent in shape]
            inputs[name] = np.array(corners + [inside], dtype=np.int64)
    for field in program.fields:
        dtype = np.dtype(field.dtype)
        if dtype.kind == "f":
            values = rng.uniform(0.0, 1.0, field.shape)
        elif dtype == np.uint8:
            values = rng.integers(0, 256, field.shape)
        else:
            values = rng.integers(-1000, 1000, field.shape)
        inputs[field.name] = np.ascontiguousarray(values, dtype=dtype)
    return inputs


def same_bits(a, b):
    """Whether two arrays are bitwise equal (NaNs included)."""
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
