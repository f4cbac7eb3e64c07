"""Tests for xcviz.metrics: hand-computed cases, a brute-force reference, edge cases."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from xcviz import metrics as m

LOG2_3 = math.log2(3)  # 1/log2(3) = 0.63093 is the rank-2 DCG discount

# Hand example: L = 5 labels, 3 rows, the last one without labels.
#   row 0: y = {0, 2}     top-3 = [2, 1, 0]   hits at ranks 1 and 3
#   row 1: y = {1, 3, 4}  top-3 = [0, 4, -1]  hit at rank 2; slot 3 is padding
#   row 2: y = {}         top-3 = [1, 2, 3]   no hits possible
Y_HAND = sp.csr_matrix(
    np.array(
        [
            [1, 0, 1, 0, 0],
            [0, 1, 0, 1, 1],
            [0, 0, 0, 0, 0],
        ]
    )
)
TOPK_HAND = np.array([[2, 1, 0], [0, 4, -1], [1, 2, 3]])
# Explicit inverse propensities 1/p for labels 0..4 (p = 1, 1/2, 1/4, 1, 1/3).
INV_PROP_HAND = np.array([1.0, 2.0, 4.0, 1.0, 3.0])


def test_hand_precision() -> None:
    # P@1 = (1 + 0 + 0) / 3 rows = 1/3.
    assert m.precision_at_k(Y_HAND, TOPK_HAND, 1) == pytest.approx(1 / 3)
    # P@3 = (2/3 + 1/3 + 0) / 3 = 1/3; the unlabelled row still counts.
    assert m.precision_at_k(Y_HAND, TOPK_HAND, 3) == pytest.approx(1 / 3)


def test_hand_ndcg() -> None:
    # row 0: DCG = 1/log2(2) + 1/log2(4) = 1.5; ideal (min(3, 2) = 2 hits) = 1 + 1/log2(3)
    #        = 1.63093 -> 0.91972
    # row 1: DCG = 1/log2(3) = 0.63093; ideal (3 hits) = 1 + 1/log2(3) + 1/2 = 2.13093 -> 0.29608
    # row 2: no labels -> 0.   nDCG@3 = (0.91972 + 0.29608 + 0) / 3 = 0.40527
    row0 = 1.5 / (1 + 1 / LOG2_3)
    row1 = (1 / LOG2_3) / (1 + 1 / LOG2_3 + 0.5)
    expected = (row0 + row1) / 3
    assert expected == pytest.approx(0.40527, abs=1e-5)
    assert m.ndcg_at_k(Y_HAND, TOPK_HAND, 3) == pytest.approx(expected)
    # nDCG@1 = P@1 for binary relevance: 1/3.
    assert m.ndcg_at_k(Y_HAND, TOPK_HAND, 1) == pytest.approx(1 / 3)


def test_hand_psp() -> None:
    # PSP@3: achieved 1/p over hits: row 0 labels 2, 0 -> 4 + 1 = 5; row 1 label 4 -> 3; total 8.
    # Oracle: row 0 {4, 1} -> 5; row 1 {2, 1, 3} -> 6; row 2 -> 0; total 11.  PSP@3 = 8/11.
    assert m.psp_at_k(Y_HAND, TOPK_HAND, 3, INV_PROP_HAND) == pytest.approx(8 / 11)
    # PSP@1: achieved row 0 label 2 -> 4, row 1 miss; oracle best single label 4 + 3 = 7.
    assert m.psp_at_k(Y_HAND, TOPK_HAND, 1, INV_PROP_HAND) == pytest.approx(4 / 7)


def test_hand_psndcg() -> None:
    # Achieved: row 0: 4/log2(2) + 1/log2(4) = 4.5; row 1: 3/log2(3) = 1.89279; total 6.39279.
    # Oracle:   row 0: 4 + 1/log2(3) = 4.63093; row 1 sorted (3, 2, 1): 3 + 2/log2(3) + 1/2 = 4.76186;
    #           total 9.39279.   PSnDCG@3 = 6.39279 / 9.39279 = 0.68061
    expected = (4.5 + 3 / LOG2_3) / (4 + 1 / LOG2_3 + 3 + 2 / LOG2_3 + 0.5)
    assert expected == pytest.approx(0.68061, abs=1e-5)
    assert m.psndcg_at_k(Y_HAND, TOPK_HAND, 3, INV_PROP_HAND) == pytest.approx(expected)


def test_hand_recall_and_coverage() -> None:
    # Recall over the 2 labelled rows: @3 (2/2 + 1/3) / 2 = 2/3; @1 (1/2 + 0) / 2 = 1/4.
    assert m.recall_at_k(Y_HAND, TOPK_HAND, 3) == pytest.approx(2 / 3)
    assert m.recall_at_k(Y_HAND, TOPK_HAND, 1) == pytest.approx(1 / 4)
    # Relevant labels {0..4}; correctly predicted @3 {2, 0, 4} -> 3/5, @1 {2} -> 1/5.
    assert m.coverage_at_k(Y_HAND, TOPK_HAND, 3) == pytest.approx(3 / 5)
    assert m.coverage_at_k(Y_HAND, TOPK_HAND, 1) == pytest.approx(1 / 5)


def test_evaluate_reports_percent() -> None:
    result = m.evaluate(Y_HAND, TOPK_HAND, ks=(1, 3), inv_prop=INV_PROP_HAND)
    assert list(result) == [
        "p@1", "p@3", "ndcg@1", "ndcg@3", "recall@1", "recall@3",
        "coverage@1", "coverage@3", "psp@1", "psp@3", "psndcg@1", "psndcg@3",
    ]  # fmt: skip
    assert result["p@1"] == pytest.approx(100 / 3)
    assert result["psp@3"] == pytest.approx(800 / 11)
    assert result["coverage@3"] == pytest.approx(60.0)
    assert "psp@1" not in m.evaluate(Y_HAND, TOPK_HAND, ks=(1,))


def test_propensities_closed_form() -> None:
    # N = 100, A = 0.55, B = 1.5:
    #   C = (ln 100 - 1) * 2.5^0.55 = 3.605170 * 1.655263 = 5.967505
    #   N_l = 0:   1.5^-0.55  = 0.800110 -> p = 1 / (1 + 4.774661) = 0.173170
    #   N_l = 1:   2.5^-0.55  = 0.604134 -> C * 0.604134 = ln 100 - 1, so p = 1 / ln 100 = 0.217147
    #   N_l = 10:  11.5^-0.55 = 0.260985 -> p = 1 / (1 + 1.557432) = 0.391017
    #   N_l = 100: 101.5^-0.55 = 0.078785 -> p = 1 / (1 + 0.470150) = 0.680203
    counts = [0, 1, 10, 100]
    dense = np.zeros((100, len(counts)))
    for label, count in enumerate(counts):
        dense[:count, label] = 1
    p = m.propensities(sp.csr_matrix(dense))
    assert p[1] == pytest.approx(1 / math.log(100))
    assert p == pytest.approx([0.173170, 0.217147, 0.391017, 0.680203], abs=1e-6)


def test_propensities_validation() -> None:
    with pytest.raises(ValueError, match="at least 3"):
        m.propensities(sp.csr_matrix(np.ones((2, 3))))
    with pytest.raises(ValueError, match="B must be positive"):
        m.propensities(sp.csr_matrix(np.ones((5, 3))), B=0.0)


def test_macro_f1_and_accuracy() -> None:
    y_true = np.array([0, 0, 1, 1, 2])
    y_pred = np.array([0, 1, 1, 1, 3])
    # Classes {0, 1, 2, 3}; F1 = 2TP / (2TP + FP + FN):
    #   0: TP 1, FP 0, FN 1 -> 2/3     1: TP 2, FP 1, FN 0 -> 4/5
    #   2: TP 0, FP 0, FN 1 -> 0       3: TP 0, FP 1, FN 0 -> 0 (predicted, never true)
    #   macro = (2/3 + 4/5 + 0 + 0) / 4 = 11/30
    assert m.macro_f1(y_true, y_pred) == pytest.approx(11 / 30)
    assert m.accuracy(y_true, y_pred) == pytest.approx(3 / 5)
    with pytest.raises(ValueError):
        m.accuracy(y_true, y_pred[:-1])


def test_padding_never_hits() -> None:
    Y = sp.csr_matrix(np.array([[1, 1, 0], [0, 0, 1]]))
    topk = np.array([[1, -1, -1], [-1, -1, -1]])
    # Only row 0 rank 1 is a hit: P@3 = (1/3 + 0) / 2.
    assert m.precision_at_k(Y, topk, 3) == pytest.approx(1 / 6)
    assert m.recall_at_k(Y, topk, 3) == pytest.approx((1 / 2 + 0) / 2)


def test_repeated_prediction_counts_once() -> None:
    Y = sp.csr_matrix(np.array([[1, 0, 1]]))
    # Label 2 at ranks 1 and 2 is one hit; label 0 at rank 3 is the second.
    topk = np.array([[2, 2, 0]])
    assert m.precision_at_k(Y, topk, 3) == pytest.approx(2 / 3)
    expected = (1 + 1 / math.log2(4)) / (1 + 1 / LOG2_3)
    assert m.ndcg_at_k(Y, topk, 3) == pytest.approx(expected)


def test_labels_are_binarised_without_mutating_input() -> None:
    # Stored zero at (0, 1) is not a label; duplicate (0, 0) entries are one label.
    Y = sp.csr_matrix((np.array([0.0, 2.0, 3.0]), np.array([1, 0, 0]), np.array([0, 3])), shape=(1, 3))
    topk = np.array([[1, 0]], dtype=np.int32)
    assert m.precision_at_k(Y, topk, 2) == pytest.approx(1 / 2)
    assert m.recall_at_k(Y, topk, 2) == pytest.approx(1.0)
    assert Y.nnz == 3


@pytest.mark.parametrize(
    ("topk", "k", "message"),
    [
        (TOPK_HAND, 4, "k must be"),
        (TOPK_HAND, 0, "k must be"),
        (TOPK_HAND[:2], 1, "rows"),
        (np.array([[5, 0, 0], [0, 0, 0], [0, 0, 0]]), 1, "label indices"),
        (np.array([[-2, 0, 0], [0, 0, 0], [0, 0, 0]]), 1, "label indices"),
        (TOPK_HAND.astype(float), 1, "integer"),
    ],
)
def test_invalid_inputs(topk: np.ndarray, k: int, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        m.precision_at_k(Y_HAND, topk, k)


def test_invalid_inv_prop_and_ks() -> None:
    with pytest.raises(ValueError, match="inv_prop"):
        m.psp_at_k(Y_HAND, TOPK_HAND, 1, INV_PROP_HAND[:4])
    with pytest.raises(ValueError, match="k must be"):
        m.evaluate(Y_HAND, TOPK_HAND, ks=(1, 5))


def _reference(labels: list[set[int]], topk: list[list[int]], k: int, inv: list[float]) -> dict[str, float]:
    """Direct transcription of the metric definitions, one row at a time."""
    n = len(labels)
    disc = [1 / math.log2(r + 2) for r in range(k)]
    p = ndcg = 0.0
    recalls = []
    covered: set[int] = set()
    ps_num = ps_den = psd_num = psd_den = 0.0
    for y, row in zip(labels, topk):
        seen: set[int] = set()
        ranks = []
        for r, label in enumerate(row[:k]):
            if label in y and label not in seen:
                seen.add(label)
                ranks.append(r)
        p += len(ranks) / k
        covered |= seen
        if y:
            ndcg += sum(disc[r] for r in ranks) / sum(disc[: min(k, len(y))])
            recalls.append(len(ranks) / len(y))
        ps_num += sum(inv[row[r]] for r in ranks)
        psd_num += sum(inv[row[r]] * disc[r] for r in ranks)
        best = sorted((inv[label] for label in y), reverse=True)[:k]
        ps_den += sum(best)
        psd_den += sum(w * d for w, d in zip(best, disc))
    relevant = set().union(*labels)
    return {
        "p": p / n,
        "ndcg": ndcg / n,
        "recall": sum(recalls) / len(recalls) if recalls else 0.0,
        "coverage": len(covered) / len(relevant) if relevant else 0.0,
        "psp": ps_num / ps_den if ps_den else 0.0,
        "psndcg": psd_num / psd_den if psd_den else 0.0,
    }


@st.composite
def _xc_problems(draw: st.DrawFn) -> tuple[list[set[int]], list[list[int]], int, list[float]]:
    n = draw(st.integers(1, 6))
    n_labels = draw(st.integers(1, 6))
    n_cols = draw(st.integers(1, 5))
    labels = [draw(st.sets(st.integers(0, n_labels - 1))) for _ in range(n)]
    topk = [draw(st.lists(st.integers(-1, n_labels - 1), min_size=n_cols, max_size=n_cols)) for _ in range(n)]
    k = draw(st.integers(1, n_cols))
    # inverse propensities are >= 1 (p <= 1); 0 is allowed as a weight. Tiny values would only test
    # subnormal rounding, where summation order legitimately changes the result.
    inv = draw(st.lists(st.just(0.0) | st.floats(1.0, 10.0), min_size=n_labels, max_size=n_labels))
    return labels, topk, k, inv


@settings(max_examples=150, deadline=None)
@given(_xc_problems())
def test_matches_reference(problem: tuple[list[set[int]], list[list[int]], int, list[float]]) -> None:
    labels, topk, k, inv = problem
    dense = np.zeros((len(labels), len(inv)))
    for i, y in enumerate(labels):
        dense[i, list(y)] = 1
    Y, topk_arr, inv_arr = sp.csr_matrix(dense), np.array(topk), np.array(inv)
    expected = _reference(labels, topk, k, inv)
    got = {
        "p": m.precision_at_k(Y, topk_arr, k),
        "ndcg": m.ndcg_at_k(Y, topk_arr, k),
        "recall": m.recall_at_k(Y, topk_arr, k),
        "coverage": m.coverage_at_k(Y, topk_arr, k),
        "psp": m.psp_at_k(Y, topk_arr, k, inv_arr),
        "psndcg": m.psndcg_at_k(Y, topk_arr, k, inv_arr),
    }
    assert got == pytest.approx(expected, rel=1e-9, abs=1e-12)
    assert all(0.0 <= v <= 1.0 + 1e-12 for v in got.values())
    reported = m.evaluate(Y, topk_arr, ks=(k,), inv_prop=inv_arr)
    in_percent = {f"{name}@{k}": 100 * v for name, v in expected.items()}
    assert reported == pytest.approx(in_percent, rel=1e-9, abs=1e-10)
