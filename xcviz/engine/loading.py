"""Loading xcviz's cached kernels without numba's full set-up.

Before it loads any cached function numba does four things a load of xcviz's machine code does not
need (BENCHMARKS.md, "Kernel loading", measured each):

- it refreshes its CPU target: imports and registers every typing and lowering library it has
  (linear algebra, random generators, typed containers, jitclass, datetime, ...); compiling needs
  them, and numba's compiler refreshes the target itself before every compilation, so a cache miss
  still finds them;
- it runs the `numba_extensions` entry points of every installed package, which means scanning the
  metadata of every installed distribution; xcviz's kernels use no extension type;
- it compiles its runtime's (NRT's) LLVM module, a few atomic reference-count functions, with the
  full LLVM pipeline in every process: `_initialize_runtime` keeps that module's object code in
  the kernels' cache folder, keyed by numba's and llvmlite's versions and the CPU, and links it
  from there (compiling and saving it the first time);
- every call into LLVM fires numba's timing events (for its compile-time statistics), about 1,500
  of them while the kernels' symbols are listed; they are switched off for the load.

`install()` routes cache loads and first-call set-up of functions defined in xcviz's own modules
through these shortcuts; every other numba function keeps numba's normal path. Importing xcviz
changes nothing in numba: the entry points (`xcviz.train` and `xcviz.evaluate`, which the CLI
calls, the server, a background run's worker, each Dask worker) call `enable_shortcuts()`, which installs them unless the
environment says `XCVIZ_NUMBA_SHORTCUTS=0`.

It also compiles the Newton engine's kernels (`VECTORISED`) with LLVM's SLP vectoriser on, which
numba leaves off: it packs the side-by-side columns of `newton._xv_slots` (four labels' entries of
a feature) into vector operations, 1.6x on that pass and about 1.15x on a Bibtex training
(BENCHMARKS.md, "Where the time goes"). SLP packs independent scalar operations without
reordering any sum, so the results are bitwise those of the scalar code (tests/engine/test_newton.py).
"""
from __future__ import annotations

import contextlib
import hashlib
import os
import pickle

import llvmlite
import numba
from llvmlite.binding import ffi
from numba.core import caching, config, dispatcher
from numba.core.runtime import nrt, nrtdynmod

from .._util.atomic_write import write_atomic

# numba's originals (None where a numba version lacks one: `install` then leaves that path alone)
_numba_load_overload = getattr(caching.Cache, "load_overload", None)
_numba_init_hook = getattr(dispatcher.Dispatcher, "_compilation_chain_init_hook", None)
_numba_compile = dispatcher.Dispatcher.compile
VECTORISED = ("xcviz.engine.newton",)  # modules whose kernels compile with the SLP vectoriser


def _ours(py_func) -> bool:
    return getattr(py_func, "__module__", "").startswith("xcviz.")


def _runtime_file(folder: str, codegen) -> str:
    """The cached NRT module's file: one per numba, llvmlite and CPU (a CPU change or an upgrade
    makes a new one, as numba's own cache index does)."""
    key = repr((numba.__version__, llvmlite.__version__, codegen.magic_tuple())).encode()
    return os.path.join(folder, f"xcviz-nrt-{hashlib.sha256(key).hexdigest()[:16]}.nbc")


def _initialize_runtime(target_context, folder: str) -> None:
    """numba's NRT initialisation (nrt.rtsys.initialize), its compiled module read from `folder`
    when it is there and written there when it is not. Any failure falls back to numba's own."""
    rtsys = nrt.rtsys
    if rtsys._init:
        return
    try:
        codegen = target_context.codegen()
        for py_name, address in nrt._nrt.c_helpers.items():
            nrt.ll.add_symbol(py_name if py_name.startswith("_") else "NRT_" + py_name, address)
        path = _runtime_file(folder, codegen)
        try:
            with open(path, "rb") as f:
                library = codegen.unserialize_library(pickle.load(f))
        except (OSError, pickle.UnpicklingError, EOFError, ValueError):
            ir_mod, library = nrtdynmod.create_nrt_module(target_context)
            library.enable_object_caching()
            library.add_ir_module(ir_mod)
            library.finalize()
            _write(path, pickle.dumps(library.serialize_using_object_code(), protocol=-1))
        rtsys._library = library
        rtsys._init = True
    except Exception:  # an internal of numba moved: its own initialisation still works
        rtsys.initialize(target_context)


def _write(path: str, payload: bytes) -> None:
    """Write a whole file or nothing (concurrent processes may write the same one); an unwritable
    cache folder is skipped: the next process compiles the module again."""
    with contextlib.suppress(OSError):
        write_atomic(path, payload)


def _load_overload(self, sig, target_context):
    """Cache.load_overload without target_context.refresh() and with the runtime's module cached,
    for xcviz's kernels."""
    if not _ours(self._py_func):
        return _numba_load_overload(self, sig, target_context)
    lock = getattr(ffi.lib, "_lock", None)
    callbacks = getattr(lock, "_cblist", None)
    if callbacks is not None:  # an llvmlite without the timing events keeps them (nothing to skip)
        lock._cblist = []
    try:
        _initialize_runtime(target_context, self._cache_path)
        with self._guard_against_spurious_io_errors():
            return self._load_overload(sig, target_context)
    finally:
        if callbacks is not None:
            lock._cblist = callbacks


def _compilation_chain_init_hook(self):
    """numba's extension entry points, left out for xcviz's kernels (they use none)."""
    if not _ours(self.py_func):
        _numba_init_hook(self)


def _compile(self, sig):
    """Dispatcher.compile with the SLP vectoriser on for the kernels of `VECTORISED` modules (numba
    reads the setting whenever it optimises a module; a cache load compiles nothing)."""
    if getattr(self.py_func, "__module__", "") not in VECTORISED or config.SLP_VECTORIZE:
        return _numba_compile(self, sig)
    config.SLP_VECTORIZE = 1
    try:
        return _numba_compile(self, sig)
    finally:
        config.SLP_VECTORIZE = 0


def install() -> None:
    """Route numba's cache loads and compilations through this module's versions (idempotent).
    Each shortcut is installed only where this numba has what it replaces, so another numba
    version loses the shortcut, not the kernels."""
    if _numba_load_overload is not None and hasattr(caching.Cache, "_load_overload"):
        caching.Cache.load_overload = _load_overload
    if _numba_init_hook is not None:
        dispatcher.Dispatcher._compilation_chain_init_hook = _compilation_chain_init_hook
    if hasattr(config, "SLP_VECTORIZE"):
        dispatcher.Dispatcher.compile = _compile


def enable_shortcuts() -> bool:
    """What every entry point calls: `install()`, unless XCVIZ_NUMBA_SHORTCUTS is "0" (numba's
    own paths throughout, for a process that embeds xcviz beside other numba code). Returns
    whether the shortcuts are on."""
    if os.environ.get("XCVIZ_NUMBA_SHORTCUTS", "1").strip() == "0":
        return False
    install()
    return True
