"""MEMOIR and DS-MLR load their kernels before the training clock starts (LDGS's own test is in
test_ldgs.py): a kernel's first call in a process compiles it on a fresh checkout, or loads it from
numba's cache, and counted as training that made a Compare at equal wall time unfair."""
import json
import subprocess
import sys
import time

import pytest

from xcviz.data.synthetic import generate
from xcviz.solvers import memoir
from xcviz.solvers._driver import Driver
from xcviz.solvers.dsmlr import solver as dsmlr

LATE_KERNELS = """
import importlib, json, pkgutil
from numba.core.registry import CPUDispatcher
import xcviz.engine, xcviz.oracles, xcviz.solvers
from xcviz.data.synthetic import generate
from xcviz.oracles.registry import ORACLES
from xcviz.records.sinks import MemorySink
from xcviz.solvers import memoir
from xcviz.solvers.dsmlr import solver as dsmlr
mods = [importlib.import_module(f"{pkg.__name__}.{m.name}") for pkg in (xcviz.engine, xcviz.oracles, xcviz.solvers)
        for m in pkgutil.iter_modules(pkg.__path__)]
kernels = {f"{m.__name__}.{n}": v for m in mods for n, v in vars(m).items() if isinstance(v, CPUDispatcher)}
late = {}

def check(name, warm, fit):
    warm()
    before = {n: len(k.signatures) for n, k in kernels.items()}
    fit()
    late[name] = [n for n, k in kernels.items() if len(k.signatures) != before[n]]

ds = generate(300, 60, 40, multiclass=True, avg_nnz=8, seed=3)
options = dict(threads=2, recorder=MemorySink(), validation=(ds.X, ds.Y))
for oracle in ORACLES:
    for variant in ("l2", "l1"):
        p = memoir.MemoirParams(oracle=oracle, variant=variant, epochs=1)
        check(f"memoir {oracle} {variant}", lambda: memoir._Memoir(ds.X, ds.Y, p, **options).warm_up(),
              lambda: memoir.fit_memoir(ds.X, ds.Y, p, **options))
for multiclass in (False, True):
    ds = generate(300, 60, 40, multiclass=multiclass, avg_labels=3, avg_nnz=8, seed=3)
    for mode in dsmlr.MODES:
        p = dsmlr.DsmlrParams(mode=mode, epochs=2)
        options = dict(threads=2, recorder=MemorySink(), validation=(ds.X, ds.Y))
        check(f"dsmlr {mode} multiclass={multiclass}", lambda: dsmlr._Dsmlr(ds.X, ds.Y, p, **options).warm_up(),
              lambda: dsmlr.fit_dsmlr(ds.X, ds.Y, p, **options))
print(json.dumps(late))
"""


@pytest.mark.slow
def test_after_the_warm_up_training_loads_no_kernel_of_its_own():
    """In a fresh process, every MEMOIR oracle and variant and every DS-MLR mode, recording and
    validating: once the warm-up has run, training calls no kernel for the first time."""
    out = subprocess.run([sys.executable, "-c", LATE_KERNELS], capture_output=True, text=True, timeout=600, check=True)
    late = json.loads(out.stdout.strip().splitlines()[-1])
    assert len(late) == 2 * 5 + 2 * 4 and all(names == [] for names in late.values()), late


def test_the_warm_up_is_not_training_time(monkeypatch):
    def slow_warm_up(*_args) -> None:  # as a compile would be
        time.sleep(1.0)

    ds = generate(200, 50, 20, multiclass=True, seed=1)
    monkeypatch.setattr(Driver, "warm_up", slow_warm_up)
    assert memoir.fit_memoir(ds.X, ds.Y, memoir.MemoirParams(epochs=1), threads=1).info["train_seconds"] < 0.9
    assert dsmlr.fit_dsmlr(ds.X, ds.Y, dsmlr.DsmlrParams(epochs=2), threads=1).info["train_seconds"] < 0.9
