"""Warm numba's on-disk cache for the test suite: a tiny run of every solver family, estimator,
oracle and mode, in a process of its own that `tests/conftest.py` starts with the session.

On a fresh clone (CI) the kernels are not compiled yet, and compiling them took about three of the
suite's thirteen minutes, one kernel after another inside the first test that needed each. Here
they compile beside the first tests (Dask clusters starting, browsers waiting on pages), on a core
those leave idle. A test that needs a kernel before it is cached compiles it itself, as before;
nothing here is asserted, the tests check the numbers. The order follows the suite's: what its
first files need early is left to them (the one-vs-all Newton kernels), the LDGS, oracle and DS-MLR
kernels of the files after come first here."""
import numpy as np

import xcviz
from xcviz.data.synthetic import generate
from xcviz.engine.ldgs import greedy_messages
from xcviz.oracles.registry import ORACLES
from xcviz.solvers.dismec import INITS
from xcviz.solvers.dsmlr.solver import MODES
from xcviz.solvers.ldgs.search import ESTIMATORS


def main() -> None:
    multilabel = generate(300, 60, 40, avg_labels=2, avg_nnz=8, seed=0)
    multiclass = generate(300, 60, 40, multiclass=True, avg_nnz=8, seed=0)
    zb, pos = np.zeros((6, 2)), np.zeros(6, np.bool_)
    greedy_messages(zb, pos, 2, 0.0, 0, 1.0, np.zeros((6, 2)), np.empty(3))
    for data in (multiclass, multilabel):
        for gradient in ESTIMATORS:  # the loss is a run-time number inside the same kernels: one suffices
            xcviz.train(data, solver="ldgs", gradient=gradient, epochs=1, dim=8, threads=2)
        xcviz.train(data, solver="ldgs", embedding="learned", epochs=1, dim=8, threads=2)
    for oracle in ORACLES:
        model = xcviz.train(multiclass, solver="memoir", oracle=oracle, epochs=1, threads=2)
    xcviz.evaluate(model, multiclass)
    for mode in MODES:
        xcviz.train(multilabel, solver="dsmlr", mode=mode, epochs=2, threads=2)
    xcviz.train(multilabel, solver="ppdsparse", threads=2)
    for init in INITS:
        xcviz.evaluate(xcviz.train(multilabel, solver="dismec", init=init, threads=2), multilabel)


if __name__ == "__main__":
    main()
