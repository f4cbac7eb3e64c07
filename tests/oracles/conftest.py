"""A random maximum-inner-product problem shared by the oracle tests, with its brute-force answers."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest
import scipy.sparse as sp

from xcviz.oracles.static import StaticVectors

C, D, N = 2000, 5000, 600


@dataclass
class Problem:
    """Queries x_i = w_{y_i} + 0.7 w_{z_i} + noise: the answer is mostly y_i, and z_i once y_i is
    excluded (the margin setting)."""
    W: sp.csr_matrix
    X: sp.csr_matrix
    y: np.ndarray


def random_classes(n: int, seed: int) -> sp.csr_matrix:
    """n sparse class vectors (about 100 entries each) with norms spread over a factor 4."""
    rng = np.random.default_rng(seed)
    W = sp.random(n, D, density=0.02, random_state=rng, format="csr", data_rvs=rng.standard_normal)
    return (sp.diags(rng.uniform(0.5, 2.0, n)) @ W).tocsr()


def brute_force(W: sp.csr_matrix, X: sp.csr_matrix, exclude: np.ndarray | None = None) -> np.ndarray:
    """Exact argmax_c w_c . x per row, exclude[i] left out (numpy, dense)."""
    S = (X @ W.T).toarray()
    if exclude is not None:
        S[np.arange(S.shape[0]), exclude] = -np.inf
    return S.argmax(1)


def noisy_rows(W: sp.csr_matrix, y: np.ndarray, seed: int) -> sp.csr_matrix:
    """Queries near the classes y, with a runner-up: w_y + 0.7 w_z (z a random other class) + noise."""
    rng = np.random.default_rng(seed)
    z = (y + 1 + rng.integers(0, W.shape[0] - 1, y.size)) % W.shape[0]
    noise = sp.random(y.size, D, density=0.02, random_state=rng, format="csr", data_rvs=rng.standard_normal)
    return (W[y] + 0.7 * W[z] + 0.3 * noise).tocsr()


class Swappable:
    """ClassVectors whose matrix a test can replace, as a training run changes its weights."""

    def __init__(self, W: sp.csr_matrix) -> None:
        self.set(W)

    def set(self, W: sp.csr_matrix) -> None:
        self.static = StaticVectors(W)
        self.n_classes, self.n_features = W.shape

    def rows(self, classes):
        return self.static.rows(classes)

    def best_among(self, *args):
        return self.static.best_among(*args)


@pytest.fixture(scope="session")
def problem() -> Problem:
    W = random_classes(C, 1)
    y = np.random.default_rng(2).integers(0, C, N)
    return Problem(W, noisy_rows(W, y, 3), y)
