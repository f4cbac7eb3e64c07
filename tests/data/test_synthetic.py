"""The synthetic XMC generator and the random split of xcviz.data.synthetic."""
import numpy as np
import pytest
import scipy.sparse as sp

from xcviz.data.dataset import Dataset
from xcviz.data.synthetic import generate, split


@pytest.fixture(scope="module")
def multilabel():
    return generate(3000, 2000, 300, avg_labels=4.0, avg_nnz=30.0, seed=3)


@pytest.fixture(scope="module")
def multiclass():
    return generate(20000, 20000, 200, avg_nnz=40.0, multiclass=True, seed=5)


def test_shapes_and_averages(multilabel):
    stats = multilabel.label_stats()
    assert (stats["n"], stats["d"], stats["l"]) == (3000, 2000, 300)
    assert abs(stats["avg_labels"] - 4.0) < 0.15
    assert abs(stats["avg_nnz"] - 30.0) < 0.6
    assert stats["rows_without_labels"] == 0 and np.diff(multilabel.X.indptr).min() >= 1
    assert multilabel.X.has_canonical_format and multilabel.Y.has_canonical_format


def test_reproducible_from_seed():
    a, b, c = (generate(300, 400, 50, avg_nnz=20, seed=s) for s in (7, 7, 8))
    assert (a.X != b.X).nnz == 0 and (a.Y != b.Y).nnz == 0
    assert (a.X != c.X).nnz > 0


def test_rows_have_unit_norm(multilabel):
    norms = np.sqrt(np.asarray(multilabel.X.multiply(multilabel.X).sum(axis=1)).ravel())
    np.testing.assert_allclose(norms, 1.0, rtol=1e-12)
    assert multilabel.X.data.min() > 0


def test_multiclass_has_one_label_per_row(multiclass):
    assert multiclass.is_multiclass
    assert np.all(np.diff(multiclass.Y.indptr) == 1)


@pytest.mark.parametrize("zipf", [1.0, 2.0])
def test_label_frequencies_follow_zipf(zipf):
    ds = generate(20000, 50, 200, avg_nnz=5, zipf=zipf, multiclass=True, seed=1)
    counts = np.bincount(ds.Y.indices, minlength=ds.n_labels)
    assert counts.argmax() == 0
    for other in (1, 3):
        expected = (other + 1) ** zipf
        assert counts[0] / counts[other] == pytest.approx(expected, rel=0.2)


def test_labels_are_learnable_from_features(multiclass):
    """Rows of one label share a signature: centroids of disjoint halves of a label agree, while
    the centroids of two different labels are far apart."""
    columns = multiclass.Y.tocsc()

    def centroid(rows):
        c = np.asarray(multiclass.X[rows].mean(axis=0)).ravel()
        return c / np.linalg.norm(c)

    rows0, rows1 = columns[:, 0].indices, columns[:, 1].indices
    within = centroid(rows0[::2]) @ centroid(rows0[1::2])
    between = centroid(rows0) @ centroid(rows1)
    assert within > 0.9 and between < 0.3


def test_amazon_670k_scaled_down_shape():
    ds = generate(49000, 13600, 67000, avg_labels=5.45, avg_nnz=75.7, seed=0)
    stats = ds.label_stats()
    assert (stats["n"], stats["d"], stats["l"]) == (49000, 13600, 67000)
    assert abs(stats["avg_labels"] - 5.45) < 0.05
    assert abs(stats["avg_nnz"] - 75.7) < 0.5


def test_multiclass_at_memoir_scale():
    """C = 100,000 classes over D = 10^6 features (MEMOIR's benchmark shape) in seconds, with every
    row of a class drawing half its terms from the class's own signature."""
    ds = generate(200_000, 1_000_000, 100_000, multiclass=True, zipf=0.0, avg_nnz=30, seed=1)
    assert ds.is_multiclass and ds.X.shape == (200_000, 1_000_000) and ds.n_labels == 100_000
    y = ds.Y.indices
    counts = np.bincount(y, minlength=100_000)
    assert (counts > 0).mean() > 0.8
    a, b = np.flatnonzero(y == 0)[:2]  # two rows of class 0 share signature terms; rows of other classes rarely do
    shared = np.intersect1d(ds.X[a].indices, ds.X[b].indices).size
    other = np.flatnonzero(y == 1)[0]
    assert shared >= 1 and shared > np.intersect1d(ds.X[a].indices, ds.X[other].indices).size


def test_invalid_parameters():
    for bad in (dict(n=0), dict(avg_labels=0.5), dict(avg_labels=6), dict(avg_nnz=0), dict(zipf=-1)):
        with pytest.raises(ValueError):
            generate(**{"n": 5, "d": 5, "labels": 5, **bad})


def test_split_partitions_rows():
    ids = np.arange(1, 101, dtype=float)
    ds = Dataset(sp.csr_matrix(ids[:, None]), sp.csr_matrix(np.ones((100, 3))), name="toy")
    train, test = split(ds, 0.25, seed=2)
    assert (train.n, test.n) == (75, 25)
    assert train.X.shape[1] == test.X.shape[1] == 1 and train.n_labels == test.n_labels == 3
    together = np.sort(np.concatenate([train.X.toarray().ravel(), test.X.toarray().ravel()]))
    np.testing.assert_array_equal(together, ids)
    again, _ = split(ds, 0.25, seed=2)
    assert (again.X != train.X).nnz == 0
    with pytest.raises(ValueError):
        split(ds, 1.5)


def _nearest_mean_accuracy(ds):
    """Training accuracy of the nearest class mean (cosine): how separable the classes are."""
    y = ds.Y.indices
    means = sp.csr_matrix((np.ones(y.size), (y, np.arange(y.size))), shape=(ds.n_labels, y.size)) @ ds.X
    return np.mean(np.asarray((ds.X @ means.T).argmax(axis=1)).ravel() == y)


def test_the_noise_knob_makes_multiclass_classes_confusable():
    base = generate(3000, 2000, 100, multiclass=True, seed=5)
    same = generate(3000, 2000, 100, multiclass=True, noise=0.0, seed=5)
    assert (base.X != same.X).nnz == 0 and (base.Y != same.Y).nnz == 0  # noise 0 keeps the old stream
    accuracy = [_nearest_mean_accuracy(generate(3000, 2000, 100, multiclass=True, noise=v, seed=5))
                for v in (0.0, 0.5, 0.8)]
    assert accuracy[0] > 0.5 and accuracy[0] > accuracy[1] + 0.2 > accuracy[2] + 0.2
    with pytest.raises(ValueError):
        generate(10, 10, 5, multiclass=True, noise=1.0)
