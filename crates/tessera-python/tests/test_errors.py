"""Every error path: a program with errors raises CompileError with its diagnostics; bad inputs
and requests raise ValueError naming the cause; a backend that cannot run raises RunError."""

import numpy as np
import pytest
import tessera

GOOD = "param N: i64 = 6;\ngrid [N, N];\nfield u: f32 border clamp;\nstage s { u = 0.5 * (u[-1, 0] + u[1, 0]); }\n"


def test_a_program_with_errors_raises_compile_error_with_its_diagnostics():
    source = "grid [8, 8];\nfield u: f32;\nstage s {\n    u = u[-1, 0] + vv;\n}\n"
    with pytest.raises(tessera.CompileError) as caught:
        tessera.Program(source)
    error = caught.value
    assert isinstance(error, tessera.TesseraError)
    assert error.line == 4
    assert error.column >= 5
    assert "vv" in error.message or any("vv" in d["message"] for d in error.diagnostics)
    assert error.rendered == str(error)
    assert "--> <string>:4:" in error.rendered
    first = error.diagnostics[0]
    assert set(first) >= {"line", "column", "message", "code", "severity", "help"}
    assert first["severity"] == "error" and first["code"].startswith("E")


def test_a_literal_that_loses_digits_is_a_user_warning_and_the_program_still_runs():
    source = GOOD.replace("0.5 *", "0.19230769230769232 *")
    with pytest.warns(UserWarning, match=r"W0001.*0\.19230769230769232 becomes 0\.1923077"):
        program = tessera.Program(source)
    assert program.run(steps=1, backend="reference").steps == 1


def test_a_bad_parameter_value_is_a_compile_error():
    with pytest.raises(tessera.CompileError, match="alpa"):
        tessera.Program(GOOD, params={"alpa": 1})
    with pytest.raises(tessera.CompileError):
        tessera.Program(GOOD, params={"N": 1.5})
    with pytest.raises(TypeError, match="parameter `N`"):
        tessera.Program(GOOD, params={"N": [6]})


def test_a_missing_file_raises_file_not_found():
    with pytest.raises(FileNotFoundError, match="no-such.tess"):
        tessera.Program.from_file("no-such.tess")


@pytest.mark.parametrize(
    "given, match",
    [
        (np.zeros((6, 6), dtype=np.float64), r"field `u` holds `f32` values.*float64"),
        (np.zeros((6, 5), dtype=np.float32), r"field `u` needs an array of shape \(6, 6\).*\(6, 5\)"),
        (np.zeros(36, dtype=np.float32), r"shape \(6, 6\).*\(36,\)"),
    ],
    ids=["dtype", "shape", "flat"],
)
def test_a_wrong_input_names_the_field_the_expected_and_the_given(given, match):
    with pytest.raises(ValueError, match=match):
        tessera.Program(GOOD).run(inputs={"u": given})


def test_unknown_names_are_value_errors():
    program = tessera.Program(GOOD)
    with pytest.raises(ValueError, match="no field `v`; did you mean `u`"):
        program.run(inputs={"v": np.zeros((6, 6), np.float32)})
    with pytest.raises(ValueError, match="unknown strategy `fast`"):
        program.run(strategy="fast")
    with pytest.raises(ValueError, match="unknown backend `cpux`; did you mean `cpu`"):
        program.run(backend="cpux")
    with pytest.raises(ValueError, match="max_memory"):
        program.run(max_memory="lots")


def test_a_plan_conflicting_with_the_keywords_is_refused():
    program = tessera.Program(GOOD)
    plan = program.plan(backend="reference")
    with pytest.raises(ValueError, match="for the reference backend, not `cpu`"):
        program.run(plan=plan, backend="cpu")
    with pytest.raises(ValueError, match="plan keywords"):
        program.run(plan=plan, strategy="naive")
    with pytest.raises(ValueError, match="not a Tessera plan"):
        tessera.Plan.from_json("{}")


def test_a_run_over_the_memory_limit_raises_run_error_before_running():
    program = tessera.Program(GOOD, params={"N": 512})
    with pytest.raises(tessera.RunError, match="more than") as caught:
        program.run(max_memory=1000)
    assert caught.value.exit_code == 1


def test_a_plan_for_another_grid_is_refused():
    plan = tessera.Program(GOOD).plan()
    with pytest.raises(tessera.TesseraError, match="grid|program"):
        tessera.Program(GOOD, params={"N": 7}).run(plan=plan)
