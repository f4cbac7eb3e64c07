"""Seed groups: which runs differ only by seed, a group's legend name, and the band across seeds
checked against numpy's median and quantiles of the same values."""
import json

import numpy as np
import pandas as pd

from xcviz.runs.seed_groups import across_seeds, group_name, seed_groups, seed_key
from xcviz.runs.spec import RunSpec


def _spec(seed: int, C: float = 1.0, name: str = "", solver: str = "ppdsparse") -> dict:
    params = {"C": C} if solver == "dismec" else {"C": C, "seed": seed}
    return json.loads(RunSpec(dataset="bibtex", solver=solver, params=params, name=name).validate().to_json())


def test_runs_that_differ_only_by_seed_form_a_group():
    specs = {"a": _spec(0, name="x seed=0"), "b": _spec(1, C=2.0), "c": _spec(1, name="other"), "d": _spec(2),
             "e": _spec(0, solver="dismec"), "f": _spec(0, C=2.0)}
    assert seed_groups(specs) == [["a", "c", "d"], ["b", "f"], ["e"]]
    assert seed_key(specs["e"]) is None  # dismec has no seed: never grouped
    assert seed_key(specs["a"]) == seed_key(specs["d"]) != seed_key(specs["b"])


def test_group_name_drops_the_seed_and_counts_the_runs():
    assert group_name(["bibtex-ppdsparse seed=0", "bibtex-ppdsparse seed=1", "x"]) == "bibtex-ppdsparse (3 seeds)"
    assert group_name(["run-a", "run-b"]) == "run-a (2 seeds)"


def test_the_band_across_seeds_is_the_median_and_quantiles_of_the_runs_curves():
    rng = np.random.default_rng(0)
    curves = [pd.DataFrame({"x": np.arange(n, dtype=float), "median": rng.random(n)}) for n in (6, 6, 4)]
    band = across_seeds(curves)
    assert band["x"].tolist() == [0, 1, 2, 3, 4, 5]
    assert band["count"].tolist() == [3, 3, 3, 3, 2, 2]  # the third run stopped at x = 3
    for i, x in enumerate(band["x"]):
        values = np.array([c["median"].iloc[int(x)] for c in curves if len(c) > x])
        assert np.isclose(band["median"][i], np.median(values))
        assert np.isclose(band["lower"][i], np.quantile(values, 0.05))
        assert np.isclose(band["upper"][i], np.quantile(values, 0.95))
    assert across_seeds([]).empty
