"""tf-idf, row normalisation and bias column of xcviz.data.transforms."""
import math

import numpy as np
import pytest
import scipy.sparse as sp

from xcviz.data.transforms import add_bias, l2_normalize, tfidf

X3 = np.array([[1.0, 0.0, 2.0], [0.0, 3.0, 0.0], [4.0, 5.0, 0.0]])


def snapshot(X: sp.csr_matrix) -> tuple:
    return X.data.copy(), X.indices.copy(), X.indptr.copy()


def assert_unchanged(X: sp.csr_matrix, before: tuple) -> None:
    for now, then in zip((X.data, X.indices, X.indptr), before):
        np.testing.assert_array_equal(now, then)


def test_tfidf_by_hand():
    X = sp.csr_matrix(X3)
    before = snapshot(X)
    out, idf = tfidf(X)
    # df = (2, 2, 1) over N = 3 rows
    a, b = math.log(3 / 2), math.log(3)
    np.testing.assert_allclose(idf, [a, a, b])
    np.testing.assert_allclose(out.toarray(), [[1 * a, 0, 2 * b], [0, 3 * a, 0], [4 * a, 5 * a, 0]])
    assert_unchanged(X, before)


def test_tfidf_unused_features_and_explicit_zeros_get_idf_zero():
    X = sp.csr_matrix((np.array([1.0, 0.0]), np.array([0, 1]), np.array([0, 2, 2])), shape=(2, 3))
    _, idf = tfidf(X)
    np.testing.assert_allclose(idf, [math.log(2), 0.0, 0.0])


def test_tfidf_applies_given_idf_as_is():
    idf = np.array([0.5, 2.0, 0.0])
    out, used = tfidf(sp.csr_matrix(X3), idf)
    np.testing.assert_allclose(out.toarray(), X3 * idf)
    np.testing.assert_array_equal(used, idf)
    with pytest.raises(ValueError, match="shape"):
        tfidf(sp.csr_matrix(X3), np.ones(2))


def test_l2_normalize_keeps_zero_rows_zero():
    X = sp.csr_matrix(np.array([[3.0, 4.0], [0.0, 0.0], [0.0, -2.0]]))
    before = snapshot(X)
    out = l2_normalize(X)
    np.testing.assert_allclose(out.toarray(), [[0.6, 0.8], [0.0, 0.0], [0.0, -1.0]])
    assert np.all(np.isfinite(out.data))
    assert_unchanged(X, before)


def test_add_bias():
    X = sp.csr_matrix(X3)
    before = snapshot(X)
    out = add_bias(X, 0.5)
    assert out.shape == (3, 4) and sp.isspmatrix_csr(out) and out.has_canonical_format
    np.testing.assert_array_equal(out.toarray(), np.hstack([X3, np.full((3, 1), 0.5)]))
    same = add_bias(X, 0)
    assert same.shape == (3, 3) and same is not X
    np.testing.assert_array_equal(same.toarray(), X3)
    assert_unchanged(X, before)
