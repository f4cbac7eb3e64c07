"""Query time and recall@1 of the approximate margin oracles on synthetic class vectors.

Class vectors have topic structure (each class = its topic's sparse direction + its own sparse
part, norms spread over a factor 4), queries are noisy class vectors; recall is measured against
brute-force argmax, with one excluded class per query (the margin setting: the query's own class)
and without. Prints one JSON object per (C, oracle); `main(sizes)` returns them for run.py.
"""
from __future__ import annotations

import argparse
import json
import time

import numpy as np
import scipy.sparse as sp

from xcviz.oracles.hnsw import HNSWOracle, HNSWParams
from xcviz.oracles.simplelsh import SimpleLSHOracle, SimpleLSHParams
from xcviz.oracles.spherical import SphericalOracle, SphericalParams
from xcviz.oracles.static import StaticVectors

N_FEATURES = 100_000
NNZ_CLASS = 100
N_QUERIES = 1000
THREADS = 2


def problem(n_classes: int, seed: int = 0) -> tuple[sp.csr_matrix, sp.csr_matrix, np.ndarray]:
    """(W, X, y): W C x D with topic structure, X noisy rows of the classes y."""
    rng = np.random.default_rng(seed)
    topics = max(2, int(np.sqrt(n_classes)))
    T = sp.random(topics, N_FEATURES, density=NNZ_CLASS / N_FEATURES, random_state=rng, format="csr",
                  data_rvs=rng.standard_normal)
    own = sp.random(n_classes, N_FEATURES, density=NNZ_CLASS / N_FEATURES, random_state=rng, format="csr",
                    data_rvs=rng.standard_normal)
    W = (T[rng.integers(0, topics, n_classes)] + own).tocsr()
    W = sp.diags(np.exp(rng.uniform(0.0, np.log(4.0), n_classes))) @ W
    y = rng.integers(0, n_classes, N_QUERIES)
    noise = sp.random(N_QUERIES, N_FEATURES, density=NNZ_CLASS / N_FEATURES, random_state=rng, format="csr",
                      data_rvs=rng.standard_normal)
    X = (W[y] + 0.5 * noise).tocsr()
    return W.tocsr(), X, y


def brute_force(W: sp.csr_matrix, X: sp.csr_matrix, exclude: np.ndarray | None, block: int = 100) -> np.ndarray:
    """Exact argmax of X W^T per row (smallest id on ties), exclude[i] left out."""
    out = np.empty(X.shape[0], np.int64)
    for s in range(0, X.shape[0], block):
        S = (X[s:s + block] @ W.T).toarray()
        if exclude is not None:
            S[np.arange(S.shape[0]), exclude[s:s + block]] = -np.inf
        out[s:s + block] = S.argmax(1)
    return out


def oracles() -> dict:
    """The configurations measured (defaults, plus HNSW with a generous ef and SimpleLSH's banded option)."""
    return {
        "hnsw": lambda: HNSWOracle(HNSWParams(), threads=THREADS),
        "hnsw ef=200": lambda: HNSWOracle(HNSWParams(hnsw_ef=200, hnsw_candidates=50), threads=THREADS),
        "simplelsh": lambda: SimpleLSHOracle(SimpleLSHParams(), threads=THREADS),
        "simplelsh banded 8x8": lambda: SimpleLSHOracle(SimpleLSHParams(lsh_bands=8, lsh_band_bits=8), threads=THREADS),
        "spherical": lambda: SphericalOracle(SphericalParams(), threads=THREADS),
        "spherical all members, 4 probes": lambda: SphericalOracle(SphericalParams(probes=4, cluster_candidates=0),
                                                                   threads=THREADS),
    }


def bench(n_classes: int) -> list[dict]:
    W, X, y = problem(n_classes)
    V = StaticVectors(W)
    t0 = time.perf_counter()
    truth = brute_force(W, X, None)
    truth_ex = brute_force(W, X, y)
    brute_ms = (time.perf_counter() - t0) / 2 * 1000 * 1000 / N_QUERIES
    changed = np.arange(0, n_classes, max(1, n_classes // 1000))
    rows = []
    for name, make in oracles().items():
        oracle = make()
        t0 = time.perf_counter()
        oracle.build(V)
        build = time.perf_counter() - t0
        oracle.query(X[:10], y[:10])
        t0 = time.perf_counter()
        free = oracle.query(X)
        query = time.perf_counter() - t0
        margin = oracle.query(X, y)
        t0 = time.perf_counter()
        oracle.update(changed)
        update = time.perf_counter() - t0
        rows.append({"C": n_classes, "oracle": name, "build_s": round(build, 2),
                     "ms_per_1000_queries": round(query * 1000 * 1000 / N_QUERIES, 1),
                     "brute_force_ms_per_1000": round(brute_ms, 1),
                     "recall": float(np.mean(free == truth)), "recall_excluding_own": float(np.mean(margin == truth_ex)),
                     "update_us_per_class": round(update / changed.size * 1e6, 1)})
        print(json.dumps(rows[-1]), flush=True)
    return rows


def main(sizes: list[int]) -> list[dict]:
    return [row for C in sizes for row in bench(C)]


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    main(ap.parse_args().sizes)
