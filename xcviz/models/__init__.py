"""Trained models as folders of `params.json` and arrays: one-vs-all sparse models (`sparse`) and
LDGS's embedding models (`embedding`); `load_model` reads either. The embedding model's module
(and the LDGS kernels it needs) is imported on first use."""
from importlib import import_module

from .sparse import ModelFormatError, SparseModel

_LAZY = {"EmbeddingModel": "embedding", "load_model": "embedding"}
__all__ = ["EmbeddingModel", "ModelFormatError", "SparseModel", "load_model"]


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module 'xcviz.models' has no attribute {name!r}")
