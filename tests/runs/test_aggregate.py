"""Quantile bands over labels, checked on a hand-made record table."""
import numpy as np
import pandas as pd
import pytest

from xcviz.runs.aggregate import quantile_bands, relative_to_final


def _records():
    # three labels; label 2 stops after iteration 1
    return pd.DataFrame({"label": [0, 0, 0, 1, 1, 1, 2, 2],
                         "iteration": [0, 1, 2, 0, 1, 2, 0, 1],
                         "objective": [10.0, 6.0, 5.0, 20.0, 8.0, 4.0, 30.0, 3.0]})


def test_bands_by_iteration():
    bands = quantile_bands(_records(), "objective", quantiles=(0.0, 1.0))
    assert list(bands["iteration"]) == [0, 1, 2]
    assert list(bands["median"]) == [20.0, 6.0, 4.5]
    assert list(bands["lower"]) == [10.0, 3.0, 4.0] and list(bands["upper"]) == [30.0, 8.0, 5.0]
    assert list(bands["count"]) == [3, 3, 2]
    with pytest.raises(ValueError):
        quantile_bands(_records(), "objective", quantiles=(0.6, 0.9))
    with pytest.raises(KeyError):
        quantile_bands(_records(), "nope")


def test_relative_to_final():
    rel = relative_to_final(_records())
    np.testing.assert_allclose(rel, [1.0, 0.2, 0.0, 4.0, 1.0, 0.0, 9.0, 0.0])
