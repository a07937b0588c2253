"""Tessera: write an iterative stencil computation once, run it fast on CPUs and GPUs with the
same answer everywhere.

    import numpy as np, tessera
    prog = tessera.Program.from_file("examples/heat.tess", params={"N": 512})
    u0 = np.zeros(prog.shape, dtype=np.float32)
    result = prog.run(steps=100, inputs={"u": u0})   # u0 is updated in place
    result.fields["u"] is u0                          # True: no copies
    result.reductions["heat"], result.reduction_steps["heat"]

See docs/python.md in the repository for the whole interface.
"""

from ._tessera import (
    CompileError,
    FieldInfo,
    Plan,
    Program,
    Result,
    RunError,
    TesseraError,
    Verification,
    __version__,
    backends,
    verify,
)

__all__ = [
    "CompileError",
    "FieldInfo",
    "Plan",
    "Program",
    "Result",
    "RunError",
    "TesseraError",
    "Verification",
    "__version__",
    "backends",
    "verify",
]
