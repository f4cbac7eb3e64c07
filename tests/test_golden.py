"""Every family's golden case (tests/golden/make_golden.py) trains to the stored weights bit for
bit and to the stored scores: a refactor that changes a number fails here. Rewrite the files on
purpose with `python tests/golden/make_golden.py FAMILY` when a change is meant to move them."""
import json
from pathlib import Path

import numpy as np
import pytest

from tests.golden.make_golden import CASES, train_case, weights

GOLDEN = Path(__file__).parent / "golden"


@pytest.mark.parametrize("family", list(CASES))
def test_family_matches_its_golden_weights_and_scores(family):
    model, scores = train_case(family)
    stored = np.load(GOLDEN / f"{family}.npz")
    got = weights(model)
    assert sorted(got) == sorted(stored.files)
    for key in stored.files:
        assert got[key].dtype == stored[key].dtype and got[key].shape == stored[key].shape, key
        assert np.array_equal(got[key], stored[key]), f"{family}: {key} differs from the golden file"
    expected = json.loads((GOLDEN / f"{family}.json").read_text())
    assert {k: round(v, 10) for k, v in scores.items()} == expected
