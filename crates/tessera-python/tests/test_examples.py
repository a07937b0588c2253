"""The Python example script and notebook run (plots drawn off-screen)."""

import json
import os
import subprocess
import sys

import pytest

from conftest import EXAMPLES, REPO

if os.environ.get("CI") == "true":
    import matplotlib  # noqa: F401  CI installs it: missing, it is an error, not a skip
else:
    pytest.importorskip("matplotlib", reason="the examples plot with matplotlib")


def test_the_example_script_writes_its_picture(tmp_path):
    output = tmp_path / "heat.png"
    completed = subprocess.run(
        [sys.executable, str(EXAMPLES / "python" / "heat.py"), "--size", "64", "--steps", "300",
         "--output", str(output)],
        capture_output=True, text=True, env={**os.environ, "MPLBACKEND": "Agg"},
    )
    assert completed.returncode == 0, completed.stderr
    assert "300 steps of 64x64" in completed.stdout
    assert output.read_bytes().startswith(b"\x89PNG")


def test_the_notebook_runs(monkeypatch):
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.chdir(REPO)
    notebook = json.loads((EXAMPLES / "python" / "heat.ipynb").read_text())
    code = [
        "".join(cell["source"]) for cell in notebook["cells"] if cell["cell_type"] == "code"
    ]
    namespace = {}
    for source in code:
        exec(compile(source, "heat.ipynb", "exec"), namespace)
    assert namespace["result"].steps == 1000
