"""Parameters, fields, reductions as time series, plans, explain, verify, and `until`."""

import numpy as np
import pytest
import tessera

from conftest import EXAMPLES

COUNTER = """
program counter;
param N: i64 = 5;
grid [N, 2 * N];
field c: i64 = x + y;
field h: f64 = 0.5;
stage step { c = c + 1; h = h * 0.5; }
reduce total = sum(c) every 2;
reduce top = max(h) every 3;
"""


def test_parameters_and_fields_are_described():
    program = tessera.Program(COUNTER, params={"N": 4})
    assert program.name == "counter"
    assert program.params == {"N": 4}
    assert program.shape == (4, 8)
    assert [(f.name, f.dtype, f.shape) for f in program.fields] == [
        ("c", "int64", (4, 8)),
        ("h", "float64", (4, 8)),
    ]
    assert program.default_steps == 1


def test_every_evaluation_of_every_reduction_is_a_time_series():
    program = tessera.Program(COUNTER)
    result = program.run(steps=7)
    cells = 5 * 10
    initial = sum(x + y for y in range(5) for x in range(10))
    steps = result.reduction_steps["total"]
    assert steps.tolist() == [1, 3, 5] and steps.dtype == np.uint64
    total = result.reductions["total"]
    assert total.dtype == np.int64
    assert total.tolist() == [initial + cells * (t + 1) for t in (1, 3, 5)]
    assert result.reduction_steps["top"].tolist() == [2, 5]
    assert result.reductions["top"].tolist() == [0.5 ** 4, 0.5 ** 7]
    assert result.steps == 7 and not result.stopped_early
    assert result.seconds >= 0 and result.gcells_per_s >= 0
    assert result.plan.startswith("cpu")


def test_until_stops_every_backend_at_the_same_step():
    source = (EXAMPLES.parent / "crates/tessera-testkit/corpus/decay_until.tess").read_text()
    program = tessera.Program(source)
    u = np.random.default_rng(1).uniform(size=program.shape)
    results = [
        program.run(steps=500, backend=b, exact=True, inputs={"u": u.copy()})
        for b in ("reference", "cpu")
    ]
    assert all(r.stopped_early for r in results)
    assert results[0].steps == results[1].steps < 500
    assert np.array_equal(results[0].fields["u"], results[1].fields["u"])
    assert np.array_equal(results[0].reductions["total"], results[1].reductions["total"])


def test_run_parameters_rebind_the_program():
    program = tessera.Program.from_file(EXAMPLES / "heat.tess", params={"N": 32})
    small = program.run(steps=1)
    larger = program.run(steps=1, params={"N": 40, "real": "f64"})
    assert small.fields["u"].shape == (32, 32) and small.fields["u"].dtype == np.float32
    assert larger.fields["u"].shape == (40, 40) and larger.fields["u"].dtype == np.float64


def test_a_plan_is_data_that_runs_the_same():
    program = tessera.Program.from_file(EXAMPLES / "heat.tess", params={"N": 48})
    plan = program.plan(strategy="overlapped", time_tile=3, exact=True)
    assert str(plan).startswith("cpu/overlapped") and plan.backend == "cpu"
    again = tessera.Plan.from_json(plan.json)
    assert again == plan
    by_plan = program.run(steps=7, plan=again)
    by_keywords = program.run(steps=7, strategy="overlapped", time_tile=3, exact=True)
    reference = program.run(steps=7, backend="reference", exact=True)
    assert by_plan.plan == by_keywords.plan
    assert np.array_equal(by_plan.fields["u"], reference.fields["u"])
    assert np.array_equal(by_keywords.fields["u"], reference.fields["u"])


def test_explain_describes_the_plan_memory_and_traffic():
    program = tessera.Program.from_file(EXAMPLES / "heat.tess", params={"N": 64})
    text = program.explain(strategy="parallel")
    assert text.startswith("plan: cpu/parallel")
    assert "memory:" in text and "traffic model:" in text


def test_verify_compares_a_backend_with_the_reference():
    program = tessera.Program.from_file(EXAMPLES / "heat.tess", params={"N": 40})
    exact = tessera.verify(program, backend="cpu", exact=True, steps=9)
    assert exact and exact.ok and exact.bitwise and exact.criterion == "bitwise"
    assert exact.fields["u"]["differing"] == 0
    assert exact.worst is None and "passed" in str(exact)
    relaxed = tessera.verify(program, backend="cpu", steps=9)
    assert relaxed.ok and relaxed.criterion.startswith("rtol=")
    assert relaxed.fields["u"]["max_rel"] < 1e-4


def test_verify_leaves_its_inputs_untouched():
    program = tessera.Program.from_file(EXAMPLES / "heat.tess", params={"N": 24})
    u = np.random.default_rng(2).uniform(size=(24, 24)).astype(np.float32)
    before = u.copy()
    assert tessera.verify(program, exact=True, inputs={"u": u}, steps=3).bitwise
    assert np.array_equal(u, before)


def test_backends_lists_what_this_build_has():
    assert {"reference", "cpu"} <= set(tessera.backends())


def test_runs_use_the_plan_tessera_tune_stored(tessera_cli, tmp_path, monkeypatch):
    import subprocess

    monkeypatch.setenv("TESSERA_CACHE_DIR", str(tmp_path / "cache"))
    heat = str(EXAMPLES / "heat.tess")
    tune = subprocess.run(
        # Restricted to `naive`, which the model never picks: the stored plan is told apart.
        [str(tessera_cli), "tune", heat, "--set", "N=96", "--budget", "3s", "--steps", "4",
         "--strategy", "naive"],
        capture_output=True, text=True,
    )
    assert tune.returncode == 0, tune.stderr

    def cli_plan(*flags):
        completed = subprocess.run(
            [str(tessera_cli), "plan", heat, "--set", "N=96", "--json", *flags],
            capture_output=True, text=True,
        )
        assert completed.returncode == 0, completed.stderr
        return tessera.Plan.from_json(completed.stdout)

    program = tessera.Program.from_file(EXAMPLES / "heat.tess", params={"N": 96})
    assert program.plan() == cli_plan() and "naive" in str(program.plan())
    assert program.plan(tuned=False) == cli_plan("--no-tuned") != program.plan()
    assert program.plan(strategy="parallel") != program.plan()
    assert program.run(steps=2).plan == program.run(steps=2, plan=cli_plan()).plan
