"""A run from Python gives the command line's bits: every corpus program, exact mode, on the
reference and cpu backends, from the same random inputs."""

import subprocess

import numpy as np
import pytest
import tessera

from conftest import at_awkward_size, corpus_programs, random_inputs, same_bits

STEPS = 3


@pytest.mark.parametrize("backend", ["reference", "cpu"])
@pytest.mark.parametrize("path", corpus_programs(), ids=lambda p: p.stem)
def test_python_run_equals_cli_run(tessera_cli, tmp_path, path, backend):
    program = at_awkward_size(tessera.Program, path)
    inputs = random_inputs(program)
    command = [str(tessera_cli), "run", str(path), "--backend", backend, "--exact",
               "--steps", str(STEPS)]
    command += [f"--set={name}={value}" for name, value in program.params.items()]
    for name, values in inputs.items():
        np.save(tmp_path / f"in-{name}.npy", values)
        command += ["--input", f"{name}={tmp_path / f'in-{name}.npy'}"]
    fields = inputs.keys() - program.tables.keys() - program.receivers.keys()
    for name in fields | program.receivers.keys():
        command += ["--output", f"{name}={tmp_path / f'out-{name}.npy'}"]
    completed = subprocess.run(command, capture_output=True, text=True)
    assert completed.returncode == 0, completed.stderr

    result = program.run(steps=STEPS, backend=backend, exact=True, inputs=inputs)

    for name in fields:
        expected = np.load(tmp_path / f"out-{name}.npy")
        assert same_bits(result.fields[name], expected), f"field {name} differs from the CLI's"
    for name in program.receivers:
        expected = np.load(tmp_path / f"out-{name}.npy")
        assert same_bits(result.receivers[name], expected), f"receiver {name} differs"
    assert completed.stdout.startswith(f"{program.name}: {result.steps} step")
