"""The oracle registry: every margin oracle by name, and `make_oracle`.

Each oracle is a class built from its parameter object (`param.Parameterized`, bounds and docs)
plus a seed and a thread count; parameter names are unique across oracles, so the multiclass
solver's parameter class can inherit all of them and a run spec stays one flat dictionary.
"""
from __future__ import annotations

import param

from .base import MarginOracle
from .exact import ExactOracle, ExactParams
from .hnsw import HNSWOracle, HNSWParams
from .simplelsh import SimpleLSHOracle, SimpleLSHParams
from .spherical import SphericalOracle, SphericalParams
from .uniform import UniformOracle, UniformParams

ORACLES: dict[str, tuple[type[param.Parameterized], type]] = {
    "exact": (ExactParams, ExactOracle),
    "random": (UniformParams, UniformOracle),
    "simplelsh": (SimpleLSHParams, SimpleLSHOracle),
    "hnsw": (HNSWParams, HNSWOracle),
    "spherical": (SphericalParams, SphericalOracle),
}

def make_oracle(name: str, params: param.Parameterized | None = None, *, seed: int = 0,
                threads: int | None = None) -> MarginOracle:
    """The oracle called `name`, configured from `params` (any object carrying its parameters, such
    as the multiclass solver's parameter object; None = the oracle's defaults)."""
    try:
        params_cls, oracle_cls = ORACLES[name]
    except KeyError:
        raise ValueError(f"unknown oracle {name!r}; known: {', '.join(ORACLES)}") from None
    own = params_cls()
    if params is not None:
        own.param.update(**{k: getattr(params, k) for k in own.param if k != "name" and hasattr(params, k)})
    return oracle_cls(own, seed=seed, threads=threads)
