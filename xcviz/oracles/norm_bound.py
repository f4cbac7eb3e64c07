"""The norm bound M of the MIPS-to-cosine reductions (SimpleLSH's transform, the reduced spherical
index): P(w) = [w, sqrt(M^2 - ||w||^2)] needs M >= every norm, and a loose M crowds every class of
small norm onto the appended axis. One rule for both: M = (1 + slack) * a norm level (SimpleLSH:
the largest norm; the block index: the median), reset when the level leaves [M / (1 + slack)^2, M]."""
from __future__ import annotations


def norm_bound(top: float, slack: float) -> float:
    """M for a norm level `top` (1 while every vector is zero)."""
    return (1.0 + slack) * top if top > 0.0 else 1.0


def outside_band(top: float, bound: float, slack: float) -> bool:
    """Whether the norm level `top` left [M / (1 + slack)^2, M] (M = 1 while every vector is zero)."""
    if top == 0.0:
        return bound != 1.0
    return top > bound or top * (1.0 + slack) ** 2 < bound
