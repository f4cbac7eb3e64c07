"""xcviz: train, watch and understand extreme-classification solvers.

The Python API in one import: `xcviz.train`, `xcviz.evaluate`, `xcviz.OneVsAllClassifier`,
`xcviz.SparseModel`, and the data sets via `xcviz.data.load`. Attributes are imported on first
use, so that `import xcviz.data` does not pay for compiling the engine.
"""
from importlib import import_module

__version__ = "0.1.0"

_LAZY = {"train": "api", "evaluate": "api", "OneVsAllClassifier": "api", "SparseModel": "models"}
__all__ = [*_LAZY, "__version__"]


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module 'xcviz' has no attribute {name!r}")
