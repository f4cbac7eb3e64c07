"""Rewrite the golden files: each family trained on a tiny fixed problem, its weights and P@k.

Run it on purpose, after a change that is meant to change a family's numbers:
`python tests/golden/make_golden.py` (then review the diff of the .npz and .json files). The
contract test `tests/test_golden.py` trains the same cases (`--out DIR`) and demands bit-identical
weights. Both run with OpenBLAS's Haswell (AVX2) kernels: OpenBLAS picks its kernels by CPU, an
AVX-512 machine's differ from an AVX2 one's in the last bit, and LDGS's projection goes through
BLAS (its golden weights failed on an AVX-512 machine, and passed there with these kernels).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
BLAS_ENV = {"OPENBLAS_CORETYPE": "Haswell"}  # every x86-64 CPU this runs on has AVX2

# family -> (generator keywords, solver parameters): small enough for a second each, large enough
# that every family runs its real code paths (several labels, several epochs, an index).
CASES: dict[str, tuple[dict, dict]] = {
    "dismec": ({"n": 300, "d": 200, "labels": 20, "avg_labels": 2.0, "avg_nnz": 15.0, "seed": 1},
               {"init": "msi"}),
    # lam 0.01, the default until issue #38 measured 0.1: these weights have been pinned since then
    "ppdsparse": ({"n": 300, "d": 200, "labels": 20, "avg_labels": 2.0, "avg_nnz": 15.0, "seed": 1}, {"lam": 0.01}),
    "memoir": ({"n": 400, "d": 150, "labels": 30, "avg_nnz": 15.0, "multiclass": True, "noise": 0.2, "seed": 2},
               {"lam": 1.0, "epochs": 2}),
    "dsmlr": ({"n": 400, "d": 150, "labels": 30, "avg_nnz": 15.0, "multiclass": True, "noise": 0.2, "seed": 2},
              {"mode": "sync", "epochs": 3, "grid": 2}),
    "ldgs": ({"n": 400, "d": 150, "labels": 30, "avg_nnz": 15.0, "multiclass": True, "noise": 0.2, "seed": 2},
             {"gradient": "decomp", "dim": 16, "epochs": 2, "clusters": 6}),
}


def train_case(family: str):
    """(model, scores) of one golden case, trained on one thread."""
    from xcviz import evaluate, train
    from xcviz.data import generate, split

    gen, params = CASES[family]
    train_set, test_set = split(generate(**gen, name=f"golden-{family}"), 0.25, seed=0)
    model = train(train_set, solver=family, threads=1, **params)
    return model, evaluate(model, test_set, ks=(1, 3))


def weights(model) -> dict[str, np.ndarray]:
    """The model's weights as plain arrays: a sparse model's CSR parts and bias weights, an
    embedding model's (LDGS) projection V and class vectors W."""
    if hasattr(model, "weights"):
        W = model.weights.tocsr()
        return {"indptr": W.indptr, "indices": W.indices, "data": W.data, "bias_weights": model.bias_weights}
    return {"V": model.V, "W": model.W}


def pinned_env() -> dict[str, str]:
    """This environment with OpenBLAS's kernels pinned (BLAS_ENV): set before numpy loads."""
    return {**os.environ, **BLAS_ENV}


def main(families: list[str], out: Path = HERE) -> None:
    for family in families or list(CASES):
        model, scores = train_case(family)
        np.savez_compressed(out / f"{family}.npz", **weights(model))
        (out / f"{family}.json").write_text(json.dumps({k: round(v, 10) for k, v in scores.items()},
                                                       indent=1, sort_keys=True) + "\n")
        print(family, {k: round(v, 2) for k, v in scores.items() if k in ("P@1", "accuracy")})


if __name__ == "__main__":
    if any(os.environ.get(k) != v for k, v in BLAS_ENV.items()):  # numpy is not loaded yet: start again pinned
        os.execve(sys.executable, [sys.executable, *sys.argv], pinned_env())
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("families", nargs="*", help=f"the cases to write: {', '.join(CASES)} (default: all)")
    parser.add_argument("--out", type=Path, default=HERE, help="the folder to write (default: beside this file)")
    args = parser.parse_args()
    if set(args.families) - set(CASES):
        parser.error(f"unknown case {', '.join(sorted(set(args.families) - set(CASES)))}; known: {', '.join(CASES)}")
    main(args.families, args.out)
