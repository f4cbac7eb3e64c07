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


# the longest work starts first, in this order (CI's --durations=30 on two workers, 29 Nov: test_page's
# module about 600 s, notebook 08 159 s, notebook 04 104 s, the Delicious climb 97 s, ...): started
# last, a notebook or a browser module kept one worker busy for minutes after the other had finished
LONG_FIRST = ("tests/ui/test_page.py", "tests/test_notebooks.py::test_notebook_runs[08",
              "tests/test_notebooks.py::test_notebook_runs[04", "tests/records/test_climbs.py::test_ldgs_decomp_on_delicious",
              "tests/ui/test_workbench.py", "tests/test_notebooks.py::test_notebook_runs[05",
              "tests/dask/test_worker_loss_amazon.py", "tests/faults/test_probe_matrix.py",
              "tests/test_notebooks.py::test_notebook_runs[03", "tests/ui/test_dashboard.py", "tests/ui/test_lab_offline.py",
              "tests/solvers/test_ldgs.py::test_decomp_is_as_accurate_as_exact_on_bibtex", "tests/ui/test_components.py",
              "tests/ui/test_views.py", "tests/solvers/test_warmup.py", "tests/dask/test_dsmlr_worker_killed.py",
              "tests/test_notebooks.py", "tests/ui/test_upload.py", "tests/solvers/test_dsmlr.py")
# modules whose tests share a costly module-scoped fixture (trained runs and a served page, a Dask
# cluster, reference models): `make test` sends each to one worker, which builds it once (dealt one
# test at a time, both workers built test_page's runs and server, DS-MLR's Bibtex runs, ...)
SHARED_FIXTURE_MODULES = frozenset({
    "tests/ui/test_page.py", "tests/ui/test_workbench.py", "tests/ui/test_dsmlr_reference.py",
    "tests/solvers/test_dsmlr.py", "tests/solvers/test_dsmlr_shards.py", "tests/solvers/test_dismec_vs_liblinear.py",
    "tests/solvers/test_ppdsparse.py", "tests/dask/test_costmodel_and_views.py", "tests/dask/test_worker_data.py",
    "tests/dask/test_cluster_runs.py", "tests/runs/test_background.py", "tests/test_report.py",
    "tests/test_golden.py", "tests/test_inexact.py", "tests/test_extras.py"})


def _rank(item: pytest.Item) -> int:
    return next((i for i, prefix in enumerate(LONG_FIRST) if item.nodeid.startswith(prefix)), len(LONG_FIRST))


def pytest_collection_modifyitems(items):
    """LONG_FIRST goes first; the rest keeps the suite's order."""
    items.sort(key=_rank)


def pytest_xdist_make_scheduler(config, log):
    """`--dist loadgroup` deals the tests one at a time in the collected order, a module of
    SHARED_FIXTURE_MODULES as one unit. (pytest-xdist's own loadgroup reads xdist_group marks by
    rewriting Node._nodeid, which pytest 9 no longer reads: its groups were ignored.)"""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class SharedFixtureScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            module = nodeid.split("::")[0]
            return module if module in SHARED_FIXTURE_MODULES else nodeid

    return SharedFixtureScheduling(config, log)


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
