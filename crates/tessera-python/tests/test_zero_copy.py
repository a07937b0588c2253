"""Inputs of the field's dtype, shape and C layout are used in place; returned fields are
arrays over Tessera's own buffers; everything else is converted once."""

import numpy as np
import pytest
import tessera

HEAT = """
param N: i64 = 24;
grid [N, 2 * N];
field u: f64 border clamp;
field k: f32 = f32(x) / 8;
stage diffuse { u = u + 0.1 * (u[-1, 0] + u[1, 0] + u[0, -1] + u[0, 1] - 4 * u) * f64(k); }
"""


@pytest.fixture
def heat():
    return tessera.Program(HEAT)


def start(program):
    return np.random.default_rng(3).uniform(size=program.shape)


@pytest.mark.parametrize("backend", ["reference", "cpu"])
def test_a_contiguous_input_is_updated_in_place_and_returned(heat, backend):
    u = start(heat)
    expected = heat.run(steps=5, backend=backend, inputs={"u": u.copy()}).fields["u"]
    address = u.__array_interface__["data"][0]
    result = heat.run(steps=5, backend=backend, inputs={"u": u})
    assert result.fields["u"] is u
    assert u.__array_interface__["data"][0] == address
    assert np.array_equal(u, expected)


def test_returned_fields_own_no_copy_of_their_values(heat):
    result = heat.run(steps=2, inputs={"u": start(heat)})
    k = result.fields["k"]
    assert k.dtype == np.float32 and k.shape == heat.shape
    # The array is a view over the buffer Tessera computed into, kept alive by its base.
    assert not k.flags["OWNDATA"] and k.base is not None
    assert type(k.base).__name__ == "PySliceContainer"
    assert k.flags["C_CONTIGUOUS"] and k.flags["WRITEABLE"]


@pytest.mark.parametrize(
    "layout",
    [
        lambda u: np.asfortranarray(u),
        lambda u: np.repeat(u, 2, axis=1)[:, ::2],
        lambda u: u.tolist(),
    ],
    ids=["fortran", "strided", "list"],
)
def test_other_layouts_are_converted_once_and_left_untouched(heat, layout):
    u = start(heat)
    given = layout(u)
    before = np.array(given, copy=True)
    result = heat.run(steps=3, inputs={"u": given})
    expected = heat.run(steps=3, inputs={"u": u.copy()}).fields["u"]
    assert np.array_equal(result.fields["u"], expected)
    assert np.array_equal(np.asarray(given), before)
    if isinstance(given, np.ndarray):
        assert not np.shares_memory(result.fields["u"], given)


def test_a_read_only_input_is_copied(heat):
    u = start(heat)
    u.flags.writeable = False
    result = heat.run(steps=2, inputs={"u": u})
    assert not np.shares_memory(result.fields["u"], u)
    assert np.array_equal(u, start(heat))


def test_the_same_array_for_two_fields_is_lent_once():
    program = tessera.Program(
        "grid [4, 5]; field a: f64; field b: f64; stage s { a = a + b; b = b * 2; }"
    )
    shared = np.ones((4, 5))
    result = program.run(steps=1, inputs={"a": shared, "b": shared})
    assert np.array_equal(result.fields["a"], np.full((4, 5), 2.0))
    assert np.array_equal(result.fields["b"], np.full((4, 5), 2.0))
    assert sum(result.fields[n] is shared for n in "ab") == 1


def test_a_dlpack_array_is_used_in_place(heat):
    class OnlyDlpack:
        """An array that offers nothing but the DLPack protocol."""

        def __init__(self, array):
            self.array = array

        def __dlpack__(self, **kwargs):
            return self.array.__dlpack__(**kwargs)

        def __dlpack_device__(self):
            return self.array.__dlpack_device__()

    u = start(heat)
    expected = heat.run(steps=2, inputs={"u": u.copy()}).fields["u"]
    result = heat.run(steps=2, inputs={"u": OnlyDlpack(u)})
    assert np.shares_memory(result.fields["u"], u)
    assert np.array_equal(u, expected)
    # Results leave through DLPack too.
    assert np.shares_memory(np.from_dlpack(result.fields["k"]), result.fields["k"])


def test_struct_fields_take_one_array_with_a_component_axis():
    program = tessera.Program(
        "grid [3, 4]; field v: f32x2; stage s { v.x = v.x + v.y; v.y = v.y * 2; }"
    )
    given = np.arange(24, dtype=np.float32).reshape(3, 4, 2)
    result = program.run(steps=1, inputs={"v": given})
    assert np.array_equal(result.fields["v.x"], given[..., 0] + given[..., 1])
    assert np.array_equal(result.fields["v.y"], given[..., 1] * 2)
    stacked = result.field("v")
    assert stacked.shape == (3, 4, 2) and stacked.dtype == np.float32
    assert np.array_equal(stacked[..., 1], result.fields["v.y"])
    assert result.field("v.x") is result.fields["v.x"]
    with pytest.raises(KeyError, match="no field `w`"):
        result.field("w")
