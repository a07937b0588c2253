"""Runs release the GIL, run concurrently from threads, repeat without growing memory, and stop
with KeyboardInterrupt on Ctrl-C."""

import os
import signal
import threading
import time

import numpy as np
import pytest
import tessera

from conftest import EXAMPLES


def heat(n):
    return tessera.Program.from_file(EXAMPLES / "heat.tess", params={"N": n})


def test_concurrent_runs_from_threads_agree_with_a_sequential_run():
    program = heat(96)
    expected = program.run(steps=20, exact=True).fields["u"]
    results = [None] * 6

    def worker(i):
        results[i] = program.run(steps=20, exact=True, threads=1).fields["u"]

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(len(results))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(np.array_equal(r, expected) for r in results)


def test_the_gil_is_released_during_a_run():
    program = heat(256)
    program.run(steps=1, backend="reference")  # prepared and kept
    ticks = []
    running = threading.Event()

    def ticker():
        running.wait()
        while running.is_set():
            ticks.append(time.perf_counter())
            time.sleep(0.001)

    thread = threading.Thread(target=ticker)
    thread.start()
    running.set()
    # Long enough for the ticker to tick many times on any machine: double the steps until
    # the run takes a tenth of a second.
    steps = 40
    while True:
        started = time.perf_counter()
        program.run(steps=steps, backend="reference")
        ended = time.perf_counter()
        if ended - started > 0.1 or steps >= 40 * 2**10:
            break
        steps *= 2
    running.clear()
    thread.join()
    during = [t for t in ticks if started < t < ended]
    # With the GIL held the ticker could not have ticked while the run went on.
    assert ended - started > 0.1
    assert len(during) >= 5, f"{len(during)} ticks during a {ended - started:.3f} s run"


def resident_bytes():
    with open(f"/proc/{os.getpid()}/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="needs /proc (Linux)")
def test_a_thousand_runs_do_not_grow_memory():
    program = heat(64)
    u = np.zeros(program.shape, dtype=np.float32)
    for _ in range(50):
        program.run(steps=3, inputs={"u": u})
        program.run(steps=3)
    before = resident_bytes()
    for _ in range(1000):
        result = program.run(steps=3, inputs={"u": u})
        assert result.fields["u"] is u
        program.run(steps=3)
    grown = resident_bytes() - before
    # One result's arrays are 16 kB: a leak of one per run would add tens of megabytes.
    assert grown < 4 << 20, f"resident memory grew by {grown} bytes over 1000 runs"


@pytest.fixture
def python_sigint_handler():
    """Python's own SIGINT handler, as an interactive Python has it: tests started as a
    background job inherit SIGINT ignored, and Python then installs none."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


@pytest.mark.parametrize(
    "size, keywords",
    [(512, {"backend": "reference"}), (1024, {"strategy": "parallel"})],
    ids=["reference, a pass per step", "cpu, a loop over any number of steps"],
)
def test_ctrl_c_stops_a_run_with_keyboard_interrupt(size, keywords, python_sigint_handler):
    program = heat(size)
    program.run(steps=1, **keywords)
    timer = threading.Timer(0.3, lambda: os.kill(os.getpid(), signal.SIGINT))
    timer.start()
    started = time.perf_counter()
    with pytest.raises(KeyboardInterrupt):
        program.run(steps=10**7, **keywords)
    assert time.perf_counter() - started < 10
    timer.join()
    # The program still runs afterwards.
    assert program.run(steps=2, **keywords).steps == 2
