"""Loading xcviz's cached kernels without numba's full target set-up.

Before it loads any cached function, numba refreshes its CPU target: it imports and registers every
typing and lowering library it has (linear algebra, random generators, typed containers, jitclass,
datetime, ...). That is most of what a fresh process's first training call pays for its kernels
(BENCHMARKS.md, "Kernel loading"), and loading machine code needs none of it: only numba's runtime
(NRT) symbols, which the code links against, and the module-level helpers numba installs when its
target is created. Compiling does need the registries, and numba's compiler refreshes the target
itself before every compilation, so a cache miss still finds them.

`install()` makes cache loads of functions defined in xcviz's own modules skip the refresh; every
other numba function keeps numba's normal path.
"""
from __future__ import annotations

from numba.core import caching
from numba.core.runtime import nrt

_numba_load_overload = caching.Cache.load_overload


def _load_overload(self, sig, target_context):
    """Cache.load_overload without target_context.refresh() for xcviz's kernels."""
    if not getattr(self._py_func, "__module__", "").startswith("xcviz."):
        return _numba_load_overload(self, sig, target_context)
    nrt.rtsys.initialize(target_context)
    with self._guard_against_spurious_io_errors():
        return self._load_overload(sig, target_context)


def install() -> None:
    """Route numba's cache loads through `_load_overload` (idempotent)."""
    caching.Cache.load_overload = _load_overload
