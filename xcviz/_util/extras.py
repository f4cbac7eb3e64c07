"""The optional layers of xcviz (pyproject's extras) and the one-line error when one is missing.

The core (numpy, scipy, numba, pandas, param) trains, evaluates and records; the dashboard and
reports need `ui`, clusters `dask`, the HNSW oracle `hnsw`. A missing extra is named with the
command that installs it, which the CLI prints as its one-line error instead of a traceback.
"""
from __future__ import annotations

from importlib.util import find_spec


class MissingExtra(ImportError):
    """An optional package is not installed; the message names the extra that brings it."""


def require(module: str, extra: str, what: str) -> None:
    """Raise MissingExtra, saying that `what` needs xcviz's `extra`, unless `module` can be imported.
    Finds the module without importing it: a check costs nothing where the module is not used yet."""
    try:
        found = find_spec(module) is not None
    except ImportError:
        found = False
    if not found:
        raise MissingExtra(f"{what} needs the '{extra}' extra: pip install 'xcviz[{extra}]' "
                           f"(no module named {module!r})")
