"""MEMOIR: lazy scaling against explicit dense scaling, the averaged iterate, the exact oracle
against brute force, separable data, l1 sparsity, thread independence, records and bad input."""
import warnings
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from xcviz.data.registry import load, load_files
from xcviz.data.synthetic import generate
from xcviz.data.transforms import l2_normalize, replicate_multiclass
from xcviz.engine.exact_search import uniform_other
from xcviz.oracles.exact import ExactOracle
from xcviz.oracles.indexed import IndexedOracle
from xcviz.oracles.registry import ORACLES, make_oracle
from xcviz.oracles.static import StaticVectors
from xcviz.records.sinks import MemorySink
from xcviz.solvers.classweights import ClassWeights
from xcviz.solvers.memoir import ITER_FIELDS, MemoirParams, fit_memoir


def _explicit_memoir(X, y, C, *, lam, eta0, eta_step, batch, epochs, seed, variant="l2", violation_test="after_decay",
                     truncation="when_small", tolerance=0.01, batch_step="sum"):
    """Algorithms 1 and 2 as the paper lists them, with a dense W scaled explicitly and the random
    oracle: the reference the lazily scaled store must reproduce. l2 decays W, then tests every
    instance against the decayed W; l1 truncates only when that lowers ||W||_2 by at most
    tolerance * ||W||_2 (Theorem 3's condition). The options: the test before the decay, truncation
    after every batch, a step divided by |b|. Returns (last iterate, average of iterates, share of
    truncations skipped)."""
    X = l2_normalize(X)
    W = np.zeros((C, X.shape[1]))
    total = np.zeros_like(W)
    shuffles = np.random.default_rng([seed, 0])
    step = skipped = 0
    for _ in range(epochs):
        order = shuffles.permutation(X.shape[0])
        for start in range(0, X.shape[0], batch):
            rows = order[start:start + batch]
            Xb, yb = X[rows].toarray(), y[rows]
            eta = eta0 / (1 + eta_step * step)
            r = uniform_other(seed, step + 1, yb, C)
            if variant == "l2" and violation_test == "after_decay":
                W *= 1 - eta * lam
            scores = Xb @ W.T
            viol = 1 + scores[np.arange(len(rows)), r] - scores[np.arange(len(rows)), yb] > 0
            if variant == "l2" and violation_test == "before_decay":
                W *= 1 - eta * lam
            move = eta if batch_step == "sum" else eta / len(rows)
            for i in np.flatnonzero(viol):
                W[yb[i]] += move * Xb[i]
                W[r[i]] -= move * Xb[i]
            if variant == "l2":
                norm = np.linalg.norm(W)
                if norm > 1 / np.sqrt(lam):
                    W *= 1 / (np.sqrt(lam) * norm)
            else:
                changed = np.unique(np.concatenate([yb, r]))
                thr = C / changed.size * lam * eta
                truncated = W.copy()
                truncated[changed] = np.sign(W[changed]) * np.maximum(np.abs(W[changed]) - thr, 0)
                norm = np.linalg.norm(W)
                if truncation == "always" or norm - np.linalg.norm(truncated) <= tolerance * norm:
                    W = truncated
                else:
                    skipped += 1
            total += W
            step += 1
    return W, total / step, skipped / step


@pytest.fixture(scope="module")
def small():
    ds = generate(300, 60, 7, multiclass=True, avg_nnz=8, zipf=0.0, seed=3)
    return ds.X, ds.Y.indices.astype(np.int64)


@pytest.mark.parametrize("lam, eta0", [(0.5, 0.5), (1.0, 0.95)])
def test_lazy_scaling_gives_the_explicit_iterates(small, lam, eta0):
    # eta0 * lam = 0.95 shrinks the scale below the fold bound within a few steps, so folds happen
    X, y = small
    common = dict(lam=lam, eta0=eta0, eta_step=0.05, batch=32, epochs=3, seed=5)
    last, mean, _ = _explicit_memoir(X, y, 7, **common)
    p = MemoirParams(oracle="random", lam=lam, eta0=eta0, eta_step=0.05, batch_size=32, epochs=3, seed=5)
    model = fit_memoir(X, y, p)
    assert np.allclose(model.weights.toarray(), last, rtol=1e-9, atol=1e-12 * np.abs(last).max())
    p.average = True
    averaged = fit_memoir(X, y, p).weights.toarray()
    assert np.allclose(averaged, mean, rtol=1e-9, atol=1e-12 * np.abs(mean).max())


@pytest.mark.parametrize("options", [{}, {"violation_test": "before_decay"}, {"batch_step": "mean"}])
def test_l2_options_give_the_explicit_iterates(small, options):
    """The paper's order (decay, then the violation test) by default; the test before the decay
    and the step divided by |b| as options. eta0 * lam = 0.5 halves W's scores at the first
    steps and lam = 0.05 lets margins exceed 1, so the order decides which instances violate."""
    X, y = small
    common = dict(lam=0.05, eta0=10.0, eta_step=0.05, batch=32, epochs=2, seed=3)
    last, _, _ = _explicit_memoir(X, y, 7, **common, **options)
    other, _, _ = _explicit_memoir(X, y, 7, **common, **{"violation_test": "after_decay", "batch_step": "sum",
                                                          **({"violation_test": "before_decay"} if not options else {})})
    assert not np.allclose(last, other)  # the option changes the run
    p = MemoirParams(oracle="random", lam=0.05, eta0=10.0, eta_step=0.05, batch_size=32, epochs=2, seed=3, **options)
    W = fit_memoir(X, y, p).weights.toarray()
    assert np.allclose(W, last, rtol=1e-9, atol=1e-12 * np.abs(last).max())


@pytest.mark.parametrize("truncation", ["when_small", "always"])
def test_l1_truncation_matches_the_explicit_algorithm(small, truncation):
    """Theorem 3's condition by default: a truncation that would lower ||W||_2 by more than the
    tolerance (10% here) is skipped (about a third of them on this problem, while W is small), and
    its change is recorded; `always` truncates after every batch. The running average follows the
    truncations too."""
    X, y = small
    common = dict(lam=0.2, eta0=0.3, eta_step=0.02, epochs=2, seed=1)
    last, mean, skipped = _explicit_memoir(X, y, 7, batch=40, variant="l1", truncation=truncation, tolerance=0.1,
                                           **common)
    p = MemoirParams(variant="l1", oracle="random", batch_size=40, truncation=truncation, truncation_tolerance=0.1,
                     **common)
    model = fit_memoir(X, y, p)
    assert np.allclose(model.weights.toarray(), last, rtol=1e-9, atol=1e-12)
    assert (last == 0).sum() > 0.1 * last.size  # the truncation did zero entries
    assert model.info["truncations_skipped"] == pytest.approx(skipped)
    assert (0.1 < skipped < 0.9) if truncation == "when_small" else skipped == 0
    if truncation == "when_small":
        assert 0 < model.info["truncation_change_max"] <= 0.1 * np.abs(last).sum()
    p.average = True
    assert np.allclose(fit_memoir(X, y, p).weights.toarray(), mean, rtol=1e-9, atol=1e-12)
    sink = MemorySink()  # (the diagnostics ask the random oracle too, which moves its stream: a separate run)
    p.records_per_epoch = 2
    fit_memoir(X, y, p, recorder=sink)
    it = sink.iterations.iloc[1:]
    assert (it["truncation_change"] >= 0).all() and it["truncations_skipped"].between(0, 1).all()


def test_fold_keeps_the_running_sum_of_iterates():
    rng = np.random.default_rng(0)
    X = sp.random(40, 30, density=0.2, format="csr", random_state=2)
    ptr, idx = X.indptr.astype(np.int64), X.indices.astype(np.int64)
    store, dense, total = ClassWeights(5, 30, capacity=8), np.zeros((5, 30)), np.zeros((5, 30))
    for _ in range(12):
        factor = rng.uniform(0.01, 0.5)
        store.multiply(factor)
        dense *= factor
        rows = rng.choice(40, 6, replace=False)
        y, r = rng.integers(0, 5, 40), rng.integers(0, 5, 40)
        store.apply(rows, ptr, idx, X.data, y, r, 0.7)
        for i in rows:
            dense[y[i]] += 0.7 * X[i].toarray()[0]
            dense[r[i]] -= 0.7 * X[i].toarray()[0]
        store.end_iterate()
        total += dense
    assert np.allclose(store.matrix().toarray(), dense, rtol=1e-9, atol=1e-14)
    assert np.allclose(store.average().toarray(), total / 12, rtol=1e-9, atol=1e-14)
    assert np.isclose(store.norm, np.linalg.norm(dense), rtol=1e-9)


@pytest.mark.parametrize("source", ["store", "static"])
def test_exact_oracle_is_the_brute_force_argmax(source):
    rng = np.random.default_rng(1)
    W = sp.random(200, 300, density=0.05, format="csr", random_state=3)
    W.data -= 0.5
    vectors = ClassWeights.from_matrix(W) if source == "store" else StaticVectors(W)
    # 450 random queries and 50 empty ones (every class scores 0 for those)
    Q = sp.vstack([sp.random(450, 300, density=0.03, format="csr", random_state=4), sp.csr_matrix((50, 300))]).tocsr()
    exclude = rng.integers(0, 200, 500)
    dense = (Q @ W.T).toarray()
    oracle = ExactOracle()
    oracle.build(vectors)
    best, value = oracle.search(Q, exclude)
    masked = dense.copy()
    masked[np.arange(500), exclude] = -np.inf
    top = masked.max(1)
    assert np.allclose(value, top) and np.allclose(masked[np.arange(500), best], top)
    ties = (masked == top[:, None]).sum(1)
    unique = ties == 1
    assert unique.mean() > 0.85 and np.array_equal(best[unique], masked.argmax(1)[unique])
    # ties among visited classes go to the smallest id; ties at 0 among unvisited ones are spread
    # by a hash of the row, so that a fresh model's margins do not all fall on class 0
    zero_ties = (top == 0) & (ties > 1)
    assert zero_ties.any() and len(np.unique(best[zero_ties])) > 1
    plain = oracle.query(Q)
    assert np.allclose(dense[np.arange(500), plain], dense.max(1))


def _separable(n=600, C=20, D=400, seed=0):
    """Every class owns 5 features; an instance has 2 of its class's and 4 shared noise features."""
    rng = np.random.default_rng(seed)
    y = np.arange(n) % C
    own = 5 * y[:, None] + rng.integers(0, 5, (n, 2))
    noise = rng.integers(5 * C, D, (n, 4))
    cols = np.hstack([own, noise])
    X = sp.csr_matrix((rng.uniform(0.5, 1.0, cols.size), (np.repeat(np.arange(n), 6), cols.ravel())), shape=(n, D))
    return X, y


@pytest.mark.slow
@pytest.mark.parametrize("variant", ["l2", "l1"])
def test_exact_oracle_separates_separable_data(variant):
    X, y = _separable()
    sink = MemorySink()
    # 30 epochs: at 20, l2 (lam = 1, ||W|| <= 1) leaves 1 of 600 rows on the wrong side for seeds 0 and 2
    model = fit_memoir(X, y, MemoirParams(variant=variant, oracle="exact", epochs=30, sample_size=600), recorder=sink)
    predicted, _ = model.predict_topk(X, k=1)
    assert np.mean(predicted[:, 0] == y) == 1.0
    records = sink.iterations
    assert records["train_accuracy"].iloc[-1] == 1.0
    assert (records["oracle_recall"] == 1.0).all() and (records["margin_error"] == 0).all()
    assert records["objective"].iloc[-1] < records["objective"].iloc[0]


def test_records_follow_the_protocol(small):
    X, y = small
    sink = MemorySink()
    fit_memoir(X, y, MemoirParams(oracle="random", epochs=2, batch_size=50, records_per_epoch=3), recorder=sink,
               validation=(X[:100], y[:100]))
    it = sink.iterations
    assert set(ITER_FIELDS) <= set(it.columns)
    assert list(it["iteration"]) == list(range(len(it)))
    assert it["batch"].iloc[-1] == 12 and it["epoch"].iloc[-1] == 2.0
    assert it["violators"].between(0, 1).all() and it["accuracy"].between(0, 1).all()
    assert it["macro_f1"].between(0, 1).all()
    quantiles = it[["margin_error_p50", "margin_error_p90", "margin_error_p95", "margin_error_p99", "margin_error_max"]]
    assert (quantiles.diff(axis=1).iloc[:, 1:] >= 0).all().all()  # eps grows as delta shrinks
    # the random oracle rarely finds the exact margin class: its recall and margin error show it
    assert it["oracle_recall"].iloc[-1] < 0.6 and it["margin_error"].iloc[-1] > 0
    assert sink.summary["batches"] == 12


def test_an_epoch_has_records_per_epoch_records_evenly_spaced_and_ends_on_one(small):
    """9 batches an epoch, 4 records an epoch: after batches 2, 4, 6 and 9 of each, floor(k 9 / 4)
    counted from the epoch's start (a window of ceil(9 / 4) = 3 batches gave 3 records, not 4)."""
    X, y = small
    sink = MemorySink()
    fit_memoir(X, y, MemoirParams(oracle="random", epochs=2, batch_size=34, records_per_epoch=4), recorder=sink)
    assert list(sink.iterations["batch"]) == [0, 2, 4, 6, 9, 11, 13, 15, 18]


def test_the_model_does_not_depend_on_the_thread_count(small):
    X, y = small
    p = MemoirParams(oracle="exact", epochs=2, batch_size=40)
    one = fit_memoir(X, y, p, threads=1).weights
    two = fit_memoir(X, y, p, threads=2).weights
    assert (one != two).nnz == 0


@pytest.mark.slow
def test_multilabel_rows_are_replicated_and_l1_is_sparser_on_bibtex():
    train, _ = load("bibtex")
    Xr, yr = replicate_multiclass(train.X, train.Y)
    assert Xr.shape[0] == train.Y.nnz and np.array_equal(np.bincount(yr, minlength=159), train.Y.sum(0).A1)
    common = dict(oracle="exact", epochs=2, sample_size=200)
    l2 = fit_memoir(train.X, train.Y, MemoirParams(variant="l2", **common))
    # the paper's lam = 1e-6 hardly truncates rows normalised to unit length; 0.03 does, at the
    # same test accuracy (about 20% on the replicated test split after 5 epochs)
    l1 = fit_memoir(train.X, train.Y, MemoirParams(variant="l1", lam=0.03, **common))
    assert l2.info["n_train"] == train.Y.nnz
    assert l1.weights.nnz < 0.8 * l2.weights.nnz


def test_bad_input_is_refused_with_a_clear_error(small):
    X, y = small
    with pytest.raises(ValueError, match="eta0 \\* lam < 1"):
        fit_memoir(X, y, MemoirParams(lam=20.0))
    with pytest.raises(ValueError, match="at least 2"):
        fit_memoir(X, np.zeros(X.shape[0], int))
    with pytest.raises(ValueError, match="length 300"):
        fit_memoir(X, y[:10])
    with pytest.raises(ValueError):
        MemoirParams(oracle="nope")


def _accuracy(model, X, y) -> float:
    return float((np.asarray((X @ model.weights.T).todense() + model.bias_weights).argmax(axis=1) == y).mean())


@pytest.mark.parametrize("oracle", list(ORACLES))
def test_every_oracle_and_variant_where_the_step_check_bites(small, oracle):
    """l2's decay 1 - eta lam must stay in (0, 1): eta0 lam = 1 is refused; 0.95 trains, its W on
    the ball of radius 1/sqrt(lam) (the projection binds), above chance (1/7; measured 0.40-0.44).
    l1 takes no decay, so eta0 lam = 1 is not refused; there its truncation (lam eta C / |changed|
    per entry) is larger than any weight: `always` leaves W = 0 (objective 1, the hinge at 0), and
    `when_small` skips every truncation (Theorem 3's condition), training as unregularised SGD
    (measured 0.89-0.92)."""
    X, y = small
    common = dict(oracle=oracle, eta0=0.5, epochs=3, batch_size=32)
    with pytest.raises(ValueError, match=r"eta0 \* lam < 1"):
        fit_memoir(X, y, MemoirParams(variant="l2", lam=2.0, **common))
    l2 = fit_memoir(X, y, MemoirParams(variant="l2", lam=1.9, **common), threads=2)
    norm = np.sqrt(l2.weights.multiply(l2.weights).sum() + (l2.bias_weights ** 2).sum())
    assert norm == pytest.approx(1 / np.sqrt(1.9), rel=1e-9) and _accuracy(l2, X, y) > 2 / 7
    wiped = fit_memoir(X, y, MemoirParams(variant="l1", lam=2.0, truncation="always", **common), threads=2)
    assert wiped.weights.nnz == 0 and wiped.info["objective"] == 1.0 and wiped.info["truncations_skipped"] == 0
    skipped = fit_memoir(X, y, MemoirParams(variant="l1", lam=2.0, **common), threads=2)
    assert skipped.info["truncations_skipped"] == 1.0 and _accuracy(skipped, X, y) > 0.85


SECTOR = Path(__file__).resolve().parents[3] / "shared" / "data" / "sector_pdsparse_partial"


@pytest.mark.slow
@pytest.mark.skipif(not SECTOR.exists(), reason="shared data folder not present")
def test_sector_is_a_real_multiclass_check():
    """Train on sector's 865 held-out rows (105 classes), test on its 961 test rows; no published
    number applies to this protocol, so the exact oracle is held to a measured floor (59%) and HNSW
    to within 3 points of it."""
    heldout, test = load_files(SECTOR / "sector.heldout.gz", SECTOR / "sector.test.gz", n_features=55197)
    accuracy = {}
    for oracle in ("exact", "hnsw"):
        model = fit_memoir(heldout.X, heldout.Y, MemoirParams(oracle=oracle, lam=1e-4, epochs=10))
        predicted, _ = model.predict_topk(test.X, k=1)
        accuracy[oracle] = np.mean(predicted[:, 0] == test.Y.indices)
    assert accuracy["exact"] > 0.55
    assert accuracy["hnsw"] > accuracy["exact"] - 0.03


@pytest.mark.parametrize("name", ["simplelsh", "exact"])
def test_a_fold_of_the_store_keeps_the_oracle_index_consistent(name):
    """Folding the lazy scale multiplies every stored row; the store tells the oracle (rescale), so
    its answers equal those of an oracle built afresh on the folded rows."""
    W = sp.random(300, 400, density=0.05, format="csr", random_state=7)
    store = ClassWeights.from_matrix(W)
    Q = sp.random(200, 400, density=0.05, format="csr", random_state=8)
    exclude = np.arange(200) % 300
    kept = make_oracle(name, seed=1)
    kept.build(store)
    store.on_fold.append(kept.rescale)
    store.multiply(1e-5)  # below the fold bound: V is multiplied by 1e-5 in place
    assert store.scale == 1.0
    # then a step changes some classes, re-indexed in the new units beside the old ones
    X = sp.random(20, 400, density=0.05, format="csr", random_state=9)
    y, r = np.arange(20) * 7, np.arange(20) * 7 + 3
    store.apply(np.arange(20), X.indptr.astype(np.int64), X.indices.astype(np.int64), X.data, y, r, 1e-5)
    kept.update(np.unique(np.concatenate([y, r])))
    fresh = make_oracle(name, seed=1)
    fresh.build(store)
    assert np.array_equal(kept.query(Q, exclude), fresh.query(Q, exclude))


@pytest.mark.slow
def test_a_decay_past_float32_keeps_the_hnsw_oracle_searching(monkeypatch):
    """MEMOIR's l2 steps with the paper's lam = 1 and large batches shrink W past 1e-38 within 20
    epochs. The HNSW oracle reads rows in the units it was built in (divided by the product of the
    store's folds, `rescale`) and hands them to hnswlib as float32: it must index them afresh before
    they leave float32's range. It did not (it waited for 1e-100): the sketches overflowed to inf
    (numpy's overflow warning) and hnswlib then failed the run ("Cannot return the results in a
    contiguous 2D array")."""
    folds: list[float] = []
    rescale = IndexedOracle.rescale
    monkeypatch.setattr(IndexedOracle, "rescale", lambda self, f: (folds.append(f), rescale(self, f)))
    ds = generate(600, 200, 40, multiclass=True, seed=3)
    sink = MemorySink()
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        fit_memoir(ds.X, ds.Y, MemoirParams(oracle="hnsw", lam=1.0, epochs=20, batch_size=200), threads=1,
                   recorder=sink)
    assert np.prod(folds) < 1e-38  # the decay this test is about happened
    assert sink.iterations["oracle_recall"].min() > 0.9


def test_the_exact_oracle_stays_exact_between_index_updates(small):
    """reindex_every delays the index updates of approximate oracles; the exact one has no index and
    must answer from the current W after every batch."""
    X, y = small
    sink = MemorySink()
    fit_memoir(X, y, MemoirParams(oracle="exact", epochs=3, batch_size=30, reindex_every=7, records_per_epoch=10),
               recorder=sink)
    it = sink.iterations
    assert (it["oracle_recall"] == 1.0).all() and (it["margin_error"] == 0.0).all()


@pytest.mark.slow
@pytest.mark.parametrize("oracle", list(ORACLES))
@pytest.mark.parametrize("variant", ["l2", "l1"])
def test_recording_does_not_change_the_model(small, oracle, variant):
    """The diagnostics ask the training oracle too (its recall on a fixed sample): they must not
    move its random draws (the random oracle's classes, the exact and SimpleLSH tie-breaking), nor
    the index updates, so a run with a recorder trains the very model a run without one does."""
    X, y = small
    p = MemoirParams(variant=variant, oracle=oracle, lam=1e-3, epochs=3, batch_size=25, records_per_epoch=7,
                     sample_size=100, reindex_every=2, seed=4, sketch_dim=16, clusters=2, cluster_dim=16,
                     cluster_candidates=3, lsh_candidates=3, hnsw_candidates=3)
    quiet = fit_memoir(X, y, p, threads=2).weights
    sink = MemorySink()
    recorded = fit_memoir(X, y, p, threads=2, recorder=sink, validation=(X[:50], y[:50])).weights
    assert len(sink.iterations) > 10  # the diagnostics ran many times
    assert quiet.nnz > 0 and (quiet != recorded).nnz == 0


def test_the_summary_says_where_an_indexed_oracles_time_went(small):
    """Queries, index updates and steps over the whole run, and the oracle's own split of them:
    its candidate search and re-ranking happen inside the queries, its class sketches inside the
    index builds, and every build after the first real step is an update of MEMOIR's."""
    X, y = small
    info = fit_memoir(X, y, MemoirParams(oracle="hnsw", epochs=2, batch_size=25, reindex_every=2, sketch_dim=16),
                      threads=2).info
    parts = ("query_seconds", "update_seconds", "step_seconds", "oracle_index_seconds", "oracle_sketch_seconds",
             "oracle_candidates_seconds", "oracle_rerank_seconds")
    assert all(info[k] > 0 for k in parts)
    assert info["oracle_candidates_seconds"] + info["oracle_rerank_seconds"] <= info["query_seconds"] + 1e-3
    assert info["oracle_sketch_seconds"] <= info["oracle_index_seconds"]
    assert info["update_seconds"] <= info["oracle_index_seconds"] + 1e-3  # the build at W = 0 is not an update
    assert info["query_seconds"] + info["update_seconds"] + info["step_seconds"] <= info["train_seconds"]


def test_the_records_diagnostics_are_not_training_time(small, monkeypatch):
    """`wall` and train_seconds count training alone, as DS-MLR's and LDGS's do: a record's
    diagnostics (here made 0.3 s slower each) go to `diagnostic_seconds` and `elapsed` only."""
    import time

    import xcviz.solvers.memoir as memoir

    measure = memoir._Diagnostics.measure

    def slow_measure(self, weights, oracle):
        time.sleep(0.3)
        return measure(self, weights, oracle)

    monkeypatch.setattr(memoir._Diagnostics, "measure", slow_measure)
    X, y = small
    sink = MemorySink()
    info = fit_memoir(X, y, MemoirParams(epochs=1, records_per_epoch=2), threads=1, recorder=sink).info
    rec = sink.iterations
    assert len(rec) >= 3 and (rec["diagnostic_seconds"] >= 0.3).all()
    assert info["train_seconds"] < 0.25 and rec["wall"].iloc[-1] < 0.25
    assert rec["elapsed"].iloc[-1] >= 0.3 * (len(rec) - 1)
    assert (np.diff(rec["wall"]) >= 0).all() and (rec["elapsed"] >= rec["wall"]).all()
