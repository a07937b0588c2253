"""Receivers from Python: recordings as arrays of shape (recordings, points) in the field's
dtype, points given in `inputs`, and bad points refused."""

import numpy as np
import pytest
import tessera

COUNT = """grid [3, 4];
field u: i64;
field h: f16;
stage s { u = u + x + 10 * y + 1; h = h + 0.5; }
receiver a = u at [[0, 0], [2, 3]] every 2;
receiver b = u at input;
receiver half = h at [[1, 1]] every 5;
"""


def test_receivers_are_time_series_in_the_fields_dtype():
    program = tessera.Program(COUNT)
    assert program.receivers == {"a": [[0, 0], [2, 3]], "b": None, "half": [[1, 1]]}
    result = program.run(steps=5, inputs={"b": np.array([[1, 2], [0, 0]])})
    a = result.receivers["a"]
    assert a.dtype == np.int64 and a.shape == (2, 2)
    assert a.tolist() == [[2, 48], [4, 96]]
    assert result.receiver_steps["a"].tolist() == [1, 3]
    assert result.receivers["b"][:, 0].tolist() == [13 * k for k in range(1, 6)]
    half = result.receivers["half"]
    assert half.dtype == np.float16 and half.tolist() == [[2.5]]


@pytest.mark.parametrize("backend", ["reference", "cpu"])
def test_every_backend_records_the_same_bits(backend):
    program = tessera.Program(COUNT)
    inputs = {"b": np.array([[2, 3]], dtype=np.int32)}
    expected = program.run(steps=6, backend="reference", exact=True, inputs=inputs)
    result = program.run(steps=6, backend=backend, exact=True, inputs=inputs)
    for name in program.receivers:
        assert result.receivers[name].tobytes() == expected.receivers[name].tobytes()


def test_missing_or_bad_points_are_refused_naming_the_receiver():
    program = tessera.Program(COUNT)
    with pytest.raises(ValueError, match="the receiver `b` has no points"):
        program.run(steps=1)
    with pytest.raises(ValueError, match=r"integer points of shape \(n, 2\)"):
        program.run(steps=1, inputs={"b": np.array([[1.0, 2.0]])})
    with pytest.raises(ValueError, match="the receiver `a` records at the points the program gives"):
        program.run(steps=1, inputs={"a": np.array([[1, 2]]), "b": np.array([[1, 2]])})
    with pytest.raises(ValueError, match=r"point 0 at \[3, 0\] outside the grid \[3, 4\]"):
        program.run(steps=1, inputs={"b": np.array([[3, 0]])})
