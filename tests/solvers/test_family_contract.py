"""What every registered family promises (solvers.SOLVERS), on tiny generated data: its declared
record fields are recorded, recording does not move the model, a stop is honoured, the thread
count does not move the weights where it declares so, the model survives a save and load, every
field it declares has a plot or is declared as having none, and a misspelled keyword raises."""
import numpy as np
import pytest

from xcviz.app.ui.fields import FIELDS
from xcviz.data.synthetic import generate
from xcviz.models.embedding import load_model
from xcviz.records.sinks import MemorySink, NullSink
from xcviz.solvers import SOLVERS

# small settings that still run every family's real loop: several blocks, epochs or batches
TINY = {"dismec": {}, "ppdsparse": {}, "memoir": {"epochs": 2, "lam": 1e-3},
        "dsmlr": {"epochs": 3, "grid": 2}, "ldgs": {"epochs": 2, "dim": 8, "clusters": 4}}
FAMILIES = list(SOLVERS)


def _data(family: str):
    """Tiny data; a one-vs-all family gets more labels than one block holds (64 a thread)."""
    solver = SOLVERS[family]
    labels = 12 if solver.multiclass else 80
    return generate(150, 40, labels, multiclass=solver.multiclass and not solver.multilabel, avg_labels=2, avg_nnz=8,
                    noise=0.1, seed=5)


def _fit(family: str, **options):
    solver, ds = SOLVERS[family], _data(family)
    return solver.fit(ds.X, ds.Y, solver.params(**TINY[family]), threads=options.pop("threads", 1), **options)


def _weights(model) -> list[np.ndarray]:
    if hasattr(model, "weights"):
        W = model.weights.tocsr()
        return [W.indptr, W.indices, W.data, model.bias_weights]
    return [model.V, model.W]


def _same(a, b) -> bool:
    return all(x.shape == y.shape and np.array_equal(x, y) for x, y in zip(_weights(a), _weights(b), strict=True))


def test_every_family_is_covered():
    assert set(TINY) == set(SOLVERS)


@pytest.mark.parametrize("family", FAMILIES)
def test_declared_fields_are_recorded_and_recording_does_not_move_the_model(family):
    solver, sink = SOLVERS[family], MemorySink()
    recorded = _fit(family, recorder=sink)
    assert set(solver.iter_fields) <= set(sink.iterations.columns)
    assert set(solver.label_fields) <= set(sink.labels.columns if solver.label_fields else ())
    assert sink.meta["solver"] == family and sink.summary
    assert _same(_fit(family), recorded) and _same(_fit(family, recorder=NullSink()), recorded)


@pytest.mark.parametrize("family", FAMILIES)
def test_a_stop_after_the_first_check_ends_the_run_early(family):
    asked, reported = [], []

    def stop() -> bool:
        asked.append(True)
        return len(asked) > 1

    model = _fit(family, stop=stop, progress=lambda done, total: reported.append((done, total)))
    assert len(asked) == 2 and reported and reported[-1][0] < reported[-1][1]
    if SOLVERS[family].multiclass:
        assert model.info["cancelled"] is True


@pytest.mark.parametrize("family", [f for f in FAMILIES if SOLVERS[f].deterministic_at(SOLVERS[f].params(**TINY[f]))])
def test_the_thread_count_does_not_move_the_weights(family):
    assert _same(_fit(family, threads=1), _fit(family, threads=2))


@pytest.mark.parametrize("family", FAMILIES)
def test_the_model_survives_a_save_and_load(family, tmp_path):
    model = _fit(family)
    model.save(tmp_path / "model")
    loaded = load_model(tmp_path / "model")
    assert type(loaded) is type(model) and loaded.solver == family and _same(loaded, model)


@pytest.mark.parametrize("family", FAMILIES)
def test_every_declared_field_is_plotted_or_declared_unplotted(family):
    solver = SOLVERS[family]
    declared = set(solver.iter_fields) | set(solver.label_fields)
    assert declared - set(FIELDS) <= set(solver.unplotted)
    assert set(solver.unplotted) <= declared  # no stale declaration


@pytest.mark.parametrize("family", FAMILIES)
def test_a_misspelled_keyword_raises(family):
    ds = _data(family)
    with pytest.raises(TypeError, match="stpo"):
        SOLVERS[family].fit(ds.X, ds.Y, None, stpo=lambda: True)
