"""Shared fixtures: the bundled Bibtex splits, loaded once per session; under CI, Hypothesis draws
the same examples on every run (a failure found by random exploration is reproduced locally, where
the examples stay random, instead of turning up in one CI run in ten). A session of many tests
warms numba's cache beside them (tests/precompile.py)."""
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import settings

from xcviz.data import load
from xcviz.engine.loading import enable_shortcuts

enable_shortcuts()  # as every entry point does: the kernels the tests compile are those users load

settings.register_profile("ci", derandomize=True)
if os.environ.get("CI"):
    settings.load_profile("ci")
PRECOMPILE_FROM = 100  # tests in a session: fewer need few kernels, and are quick without the warm-up


def pytest_collection_finish(session):
    """Start tests/precompile.py for a session of many tests, at the lowest priority: it compiles on
    the CPU the tests leave idle and never takes it from them. Under pytest-xdist every worker
    collects the whole session; the first worker alone starts it."""
    if len(session.items) >= PRECOMPILE_FROM and os.environ.get("PYTEST_XDIST_WORKER", "gw0") == "gw0":
        session.config.precompile = subprocess.Popen(
            [sys.executable, "-m", "tests.precompile"], cwd=Path(__file__).resolve().parents[1],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, preexec_fn=lambda: os.nice(19))


def pytest_sessionfinish(session):
    """Stop the warm-up if the tests ended first."""
    proc = getattr(session.config, "precompile", None)
    if proc is not None and proc.poll() is None:
        proc.kill()
    if proc is not None:
        proc.wait()


@pytest.fixture(scope="session")
def bibtex():
    return load("bibtex")


@pytest.fixture
def small_xc(tmp_path):
    """A small synthetic XC problem written as data/small_train.txt and data/small_test.txt (300
    labels: five blocks of labels for a one-thread run, trained in about a second)."""
    from xcviz.data.synthetic import generate, split
    from xcviz.data.textio import write_xc

    folder = tmp_path / "data"
    folder.mkdir()
    train, test = split(generate(700, 150, 300, avg_labels=3, avg_nnz=20, seed=1), 0.3, seed=1)
    write_xc(folder / "small_train.txt", train)
    write_xc(folder / "small_test.txt", test)
    return folder / "small_train.txt", folder / "small_test.txt"


@pytest.fixture
def xcviz_cli():
    """Run the `xcviz` command in a fresh process: xcviz_cli(*args, timeout=..., **Popen kwargs)
    returns the CompletedProcess (text output captured)."""
    import subprocess
    import sys

    def run(*args, timeout=300, **kw):
        return subprocess.run([sys.executable, "-m", "xcviz.cli", *map(str, args)], capture_output=True, text=True,
                              timeout=timeout, **kw)

    return run
