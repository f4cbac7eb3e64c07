"""DS-MLR: thread independence of `sync`, every mode against L-BFGS's optimum on Bibtex, the
records, the CLI summary, a background run, and the Dask backend (same model as threads; a worker
killed mid-run fails the run cleanly and leaves the store consistent)."""
import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from xcviz.api import evaluate
from xcviz.cli import main
from xcviz.data.dataset import Dataset
from xcviz.data.registry import load
from xcviz.data.synthetic import generate
from xcviz.runs.launcher import launch, wait
from xcviz.records.sinks import MemorySink
from xcviz.runs.spec import RunSpec
from xcviz.runs.store import RunStore, SqliteSink
from xcviz.solvers.dsmlr.solver import ITER_FIELDS, MODES, DsmlrParams, fit_dsmlr

CI = bool(os.environ.get("CI"))


@pytest.fixture(scope="module")
def small():
    ds = generate(400, 50, 12, avg_labels=1.5, avg_nnz=8, seed=2)
    return ds.X, ds.Y


def test_lc_records_its_newton_and_cg_steps(small):
    """LC's outer iteration records its mean Newton steps per class (at most lc_newton) and CG steps
    per Newton step (the cost model's s and m); they were computed and then lost (recorded as NaN)."""
    X, Y = small
    sink = MemorySink()
    fit_dsmlr(X, Y, DsmlrParams(mode="lc", epochs=2, lam=1e-3, lc_newton=3), threads=2, recorder=sink)
    after = sink.frame("iteration").groupby("iteration").first().loc[1:]
    assert ((after["newton_steps"] > 0) & (after["newton_steps"] <= 3)).all() and (after["cg_steps"] >= 1).all()


def test_sync_is_the_same_model_for_one_and_two_threads(small):
    X, Y = small
    p = DsmlrParams(mode="sync", epochs=3, grid=4, alpha=200.0, lam=1e-3)
    one, two = fit_dsmlr(X, Y, p, threads=1), fit_dsmlr(X, Y, p, threads=2)
    assert (one.weights != two.weights).nnz == 0 and np.array_equal(one.bias_weights, two.bias_weights)
    assert one.info["objective"] == two.info["objective"] < np.log(12)


def test_records_hold_every_field_per_worker(small):
    X, Y = small
    sink = MemorySink()
    model = fit_dsmlr(X, Y, DsmlrParams(mode="sync", epochs=4, grid=4, alpha=200.0, lam=1e-3, optimum=1.0),
                      threads=2, recorder=sink, validation=(X, Y))
    it = sink.frame("iteration")
    assert set(ITER_FIELDS) <= set(it) and len(it) == 2 * 5  # outer iterations 0..4, one row per worker
    last = it[it.iteration == 4]
    assert last["objective"].nunique() == 1 and np.isclose(last["objective"].iloc[0], model.info["objective"])
    # L2(W, b_old) = L1(W) + gap, the gap is >= 0; SGD descends (not monotonically)
    after = it[it.iteration > 0].groupby("iteration").first()
    assert np.allclose(after["surrogate"] - after["objective"], after["variational_gap"])
    assert (after["variational_gap"] >= 0).all() and (after["d_max"] >= after["d_p50"]).all()
    assert after["objective"].iloc[-1] < after["objective"].iloc[0] < np.log(12)
    assert np.allclose(after["optimum_gap"], after["objective"] - 1.0)
    # 4 strata of 4 blocks, taken dynamically (on a busy machine one worker may take them all)
    assert last["blocks"].sum() == 16 and last["compute_seconds"].sum() > 0 and (last["idle_seconds"] >= 0).all()
    assert 0 <= last["accuracy"].iloc[0] <= 1 and it["b_p50"].iloc[0] == pytest.approx(-np.log(12))


def test_bad_parameters_are_refused(small):
    X, Y = small
    with pytest.raises(ValueError, match="decay"):
        fit_dsmlr(X, Y, DsmlrParams(alpha=1e6, lam=10.0))
    with pytest.raises(ValueError, match="at least 2"):
        fit_dsmlr(X, np.zeros(X.shape[0], int))
    with pytest.raises(ValueError):
        DsmlrParams(mode="nope")


def test_the_default_step_fits_small_data_and_a_step_too_large_fails_the_run_saying_so():
    """An audit found the default alpha = 1000 (one update's step alpha / N above 1 under 1,000 rows)
    ending 800-row runs at an objective of 600 against an optimum of 0.70, as if they had trained.
    The default is now min(1000, N / 2); a step that blows the objective up fails the run after
    recording the outer iteration that shows it, naming a smaller alpha."""
    ds = generate(1000, 80, 12, multiclass=True, avg_nnz=10, noise=0.3, seed=1)
    X, Y = ds.X[:800], ds.Y[:800]
    best = fit_dsmlr(X, Y, DsmlrParams(mode="lbfgs", epochs=300), threads=2).info["objective"]
    for mode in ("sync", "async"):
        model = fit_dsmlr(X, Y, DsmlrParams(mode=mode), threads=2)
        assert model.info["alpha"] == 400.0 and model.info["objective"] < 1.25 * best < np.log(12)  # was 600
        sink = MemorySink()
        # async's first record comes when its slowest worker has finished one outer iteration or more
        first = "1" if mode == "sync" else r"\d+"
        with pytest.raises(ValueError, match=rf"diverged in outer iteration {first}: .*try --set alpha=100 \(it was 1e\+03\)"):
            fit_dsmlr(X, Y, DsmlrParams(mode=mode, alpha=1000.0), threads=2, recorder=sink)
        climbed = sink.frame("iteration").groupby("iteration")["objective"].first()
        assert climbed.iloc[-1] > 20 * climbed[0] == pytest.approx(20 * np.log(12))
        assert (climbed.iloc[:-1] <= 20 * climbed[0]).all()  # the run failed at the first record of the climb
        assert mode == "async" or list(climbed.index) == [0, 1]


def test_the_default_step_is_1000_from_2000_rows_on():
    ds = generate(2100, 80, 12, multiclass=True, avg_nnz=10, noise=0.3, seed=1)
    default = fit_dsmlr(ds.X, ds.Y, DsmlrParams(epochs=2), threads=2)
    given = fit_dsmlr(ds.X, ds.Y, DsmlrParams(epochs=2, alpha=1000.0), threads=2)
    assert default.info["alpha"] == 1000.0 and (default.weights != given.weights).nnz == 0


@pytest.fixture(scope="module")
def strongly_regularised():
    """A multiclass problem (800 rows, N = 800, K = 10) and L-BFGS's optimum of (2) at lambda 0.5,
    where the SGD step check bites at alpha = 2 N (alpha lam n_i / N = 1)."""
    ds = generate(800, 60, 10, multiclass=True, avg_nnz=8, noise=0.3, seed=3)
    best = fit_dsmlr(ds.X, ds.Y, DsmlrParams(mode="lbfgs", lam=0.5, epochs=200), threads=2).info["objective"]
    return ds.X, ds.Y, best


# (2)'s relative distance to L-BFGS's optimum after 40 outer iterations at lambda 0.5 and the default
# alpha = N / 2: measured 0.96-1.66% (sync) and 1.68-1.91% (async) over seeds 0-2; lc's alternation
# is exact per class and meets L-BFGS's optimum to rounding.
LAM_HALF_BOUND = {"sync": 0.03, "async": 0.03, "lc": 1e-9, "lbfgs": 1e-9}


@pytest.mark.parametrize("mode", MODES)
def test_every_mode_trains_at_lambda_half_to_the_lbfgs_optimum(strongly_regularised, mode):
    """Issue 41: at lambda 0.5 every mode trains (lbfgs and lc used to be refused for the SGD step
    they never take) and reaches L-BFGS's optimum, strictly below the start log K."""
    X, Y, best = strongly_regularised
    epochs = {"sync": 40, "async": 40, "lc": 5, "lbfgs": 200}[mode]
    model = fit_dsmlr(X, Y, DsmlrParams(mode=mode, lam=0.5, epochs=epochs), threads=2)
    assert best < np.log(10) - 0.05
    assert best * (1 - 1e-12) <= model.info["objective"] < best * (1 + LAM_HALF_BOUND[mode])


def test_the_step_check_bites_at_2n_for_the_sgd_modes_only(strongly_regularised):
    """alpha lam n_i / N >= 1 is refused for sync and async (their decay 1 - eta K lam n_i would
    leave (0, 1)); just under it they train; lbfgs and lc ignore alpha: the same model either way."""
    X, Y, best = strongly_regularised
    for mode in ("sync", "async"):
        with pytest.raises(ValueError, match=r"decay .* alpha \* lam \* 1 / N = 1 >= 1"):
            fit_dsmlr(X, Y, DsmlrParams(mode=mode, lam=0.5, alpha=1600.0))
        near = fit_dsmlr(X, Y, DsmlrParams(mode=mode, lam=0.5, alpha=1590.0, epochs=20), threads=2)
        assert best < near.info["objective"] < best * 1.1  # measured 5.9% above (sync)
    for mode, epochs in (("lbfgs", 200), ("lc", 5)):
        given = fit_dsmlr(X, Y, DsmlrParams(mode=mode, lam=0.5, alpha=1600.0, epochs=epochs), threads=2)
        default = fit_dsmlr(X, Y, DsmlrParams(mode=mode, lam=0.5, epochs=epochs), threads=2)
        assert (given.weights != default.weights).nnz == 0 and given.info["objective"] == pytest.approx(best, rel=1e-9)


def test_async_reaches_one_percent_of_the_lbfgs_optimum(strongly_regularised):
    """The barrier-free async (each worker's own 1/sqrt(t) step) within 1% of L-BFGS's optimum:
    measured 0.64% after 60 outer iterations at alpha 200 on 2 threads (deterministic for a given
    thread count, so the measured number is the test's)."""
    X, Y, best = strongly_regularised
    model = fit_dsmlr(X, Y, DsmlrParams(mode="async", lam=0.5, alpha=200.0, epochs=60), threads=2)
    assert best < model.info["objective"] < best * 1.01


@pytest.mark.parametrize("threads", [1, 2])
def test_async_is_the_same_model_run_after_run_for_a_given_thread_count(small, threads):
    """With FIFO queues in a ring every worker meets the class blocks in one fixed periodic order,
    and a worker's step and b depend only on its own count of blocks: the scheduler changes when
    things happen, not what is computed. Recording (which pauses the workers at varying points)
    does not change the model either; a different thread count does (other row blocks)."""
    X, Y = small
    p = DsmlrParams(mode="async", epochs=4, grid=4, alpha=100.0, lam=1e-3)
    models = [fit_dsmlr(X, Y, p, threads=threads, recorder=sink) for sink in (None, MemorySink(), MemorySink())]
    for other in models[1:]:
        assert (models[0].weights != other.weights).nnz == 0
        assert np.array_equal(models[0].bias_weights, other.bias_weights)


def test_an_async_worker_finishes_an_outer_iteration_without_waiting_for_the_others(small):
    """No barrier: with every class block in worker 0's queue, worker 0 alone (worker 1 never
    started) updates all of them, refreshes its b and counts its outer iteration; then it waits
    for blocks, which only worker 1 would send, until told to stop."""
    import threading

    from xcviz.engine import dsmlr as kernels
    from xcviz.solvers.dsmlr.problem import State, prepare
    from xcviz.solvers.dsmlr.threads_backend import ThreadAsync

    X, Y = small
    prob = prepare(X, Y, True, 1.0)
    st = State(np.zeros((prob.n_classes, prob.dim)), np.ones(prob.n_classes), np.full(prob.n_rows, -np.log(12)))
    engine = ThreadAsync(prob, st, 4, 2, 0, 0.1, 1e-3, 20.0, 3)
    engine.queue[0, :4], engine.tails[:] = np.arange(4), (4, 0)
    engine.heads[:] = 0
    worker = threading.Thread(target=engine._work, args=(0,))
    worker.start()
    deadline = time.monotonic() + 60
    while engine.epochs_done[0] < 1 and time.monotonic() < deadline:
        time.sleep(0.01)
    engine.close()
    worker.join()
    rows0 = engine.order[engine.row_ptr[0]:engine.row_ptr[1]]
    rows1 = engine.order[engine.row_ptr[1]:engine.row_ptr[2]]
    assert engine.epochs_done.tolist() == [1, 0] and engine.counters["blocks"].tolist() == [4, 0]
    assert (st.b[rows0] != -np.log(12)).all() and (st.b[rows1] == -np.log(12)).all()
    assert engine.tails[1] == 4 and engine.control[0] == kernels.STOP  # the blocks wait in worker 1's queue


BIBTEX_HALF_OPTIMUM = 5.0618  # L-BFGS's objective on Bibtex at lambda 0.5 (the slow test below computes it)


@pytest.mark.parametrize("mode", MODES)
def test_the_cli_trains_every_mode_on_bibtex_at_lambda_half(capsys, mode):
    """`xcviz train bibtex --solver dsmlr --mode M --lam 0.5` for every mode: lbfgs and lc used to
    exit 2 with the SGD step's refusal, and sync and async at the default alpha (1000: a Bibtex row
    has 28 labels, 1000 * 0.5 * 28 / 11616 >= 1) too; the default now keeps the decay at 1/2 or more.
    Every mode ends within 1% of L-BFGS's optimum (5.0618, 0.14% under the start log 159: at
    lambda 0.5 there is little to learn, and 3 SGD epochs end about 0.2% above it)."""
    epochs = {"lbfgs": "30", "lc": "2"}.get(mode, "3")
    code = main(["train", "bibtex", "--solver", "dsmlr", "--mode", mode, "--lam", "0.5", "--epochs", epochs,
                 "--threads", "2", "--json"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    summary = json.loads(captured.out.strip().splitlines()[-1])
    assert summary["mode"] == mode and summary["objective"] < BIBTEX_HALF_OPTIMUM * 1.01


def _cli(*argv: str) -> subprocess.CompletedProcess:
    """`xcviz` in a process of its own, as a user runs it."""
    return subprocess.run([sys.executable, "-m", "xcviz.cli", *argv], capture_output=True, text=True, timeout=600)


@pytest.mark.slow
def test_the_issue_41_command_trains_in_a_real_process():
    """`xcviz train bibtex --solver dsmlr --mode lc|lbfgs --lam 0.5` exited 2 with the SGD step's
    refusal. In a process of its own: lc and lbfgs train to L-BFGS's optimum of Bibtex at lambda 0.5
    (5.0618, 4 L-BFGS iterations); sync at alpha = 1000 is refused (a row of Bibtex has
    28 labels: 1000 * 0.5 * 28 / 11616 >= 1) naming the fix, and at alpha = 800 trains to within 1%
    (measured 0.4% after 3 outer iterations)."""
    train, _ = load("bibtex")
    best = fit_dsmlr(train.X, train.Y, DsmlrParams(mode="lbfgs", lam=0.5, epochs=30), threads=2).info["objective"]
    assert best < np.log(159) - 1e-3
    common = ("train", "bibtex", "--solver", "dsmlr", "--lam", "0.5", "--threads", "2", "--json")
    for mode in ("lc", "lbfgs"):
        run = _cli(*common, "--mode", mode, "--epochs", "30" if mode == "lbfgs" else "2")
        assert run.returncode == 0, run.stderr
        summary = json.loads(run.stdout.strip().splitlines()[-1])  # the summary rounds to 6 decimals
        assert summary["mode"] == mode and summary["objective"] == pytest.approx(best, abs=1e-6)
    refused = _cli(*common, "--mode", "sync", "--epochs", "3", "--alpha", "1000")
    assert refused.returncode == 2 and "decay 1 - eta K lam n_i" in refused.stderr and "lower alpha" in refused.stderr
    run = _cli(*common, "--mode", "sync", "--epochs", "3", "--alpha", "800")
    assert run.returncode == 0, run.stderr
    assert best < json.loads(run.stdout.strip().splitlines()[-1])["objective"] < best * 1.01


@pytest.fixture(scope="module")
def bibtex_runs():
    """Every mode on Bibtex-multiclass (multi-label rows replicated: 11,616 training copies),
    lambda = 1e-3; under CI the first 1,500 training rows (alpha = 0.13 N, a step of 0.13 / sqrt(t)
    per (row, class) pair, 25 outer iterations). On the whole of Bibtex 0.13 N reaches the objective
    but its test accuracy swings by +-0.3 points from one iteration to the next: 0.1 N and 40."""
    train, test = load("bibtex")
    if CI:
        train = Dataset(X=train.X[:1500], Y=train.Y[:1500], name="bibtex-1500")
    common = dict(lam=1e-3, alpha=(0.13 if CI else 0.1) * train.Y.nnz)
    sgd_epochs = 25 if CI else 40
    runs = {}
    for mode, epochs in (("lbfgs", 300), ("sync", sgd_epochs), ("async", sgd_epochs), ("lc", 12)):
        model = fit_dsmlr(train.X, train.Y, DsmlrParams(mode=mode, epochs=epochs, **common), threads=2)
        runs[mode] = (model.info["objective"], evaluate(model, test, threads=2)["accuracy"])
    return runs


# Test-accuracy distance to L-BFGS's, in percentage points. async is not deterministic (which thread
# meets which class block first depends on the scheduler): under CI's settings five runs ended at
# objectives within 4e-4 of L-BFGS's and accuracies 0.16 to 0.83 points from it (the objective is
# nearly flat where many classes tie), so its bound is wider; the objective bound is the same for all.
ACCURACY_BOUND = {"sync": 0.5, "async": 1.5, "lc": 0.5}


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["sync", "async", "lc"])
def test_every_mode_reaches_the_lbfgs_optimum_on_bibtex(bibtex_runs, mode):
    best, best_acc = bibtex_runs["lbfgs"]
    objective, acc = bibtex_runs[mode]
    assert best < objective < best * (1 + 1e-3)
    assert abs(acc - best_acc) <= ACCURACY_BOUND[mode]


def test_cli_json_summary_has_the_keys_of_the_issue(capsys, tmp_path):
    ds = generate(600, 60, 8, multiclass=True, avg_nnz=8, seed=5)
    from xcviz.data.synthetic import split
    from xcviz.data.textio import write_xc

    train, test = split(ds, 0.3, seed=1)
    write_xc(tmp_path / "t_train.txt", train)
    write_xc(tmp_path / "t_test.txt", test)
    code = main(["train", str(tmp_path / "t_train.txt"), "--test", str(tmp_path / "t_test.txt"), "--solver", "dsmlr",
                 "--mode", "lc", "--epochs", "3", "--threads", "1", "--json"])
    out = capsys.readouterr().out
    assert code == 0
    summary = json.loads(out.strip().splitlines()[-1])
    assert {"mode", "objective", "accuracy", "macro_f1", "epoch_seconds", "train_seconds", "peak_rss_mb"} <= set(summary)
    assert summary["mode"] == "lc" and summary["objective"] < np.log(8) and summary["accuracy"] > 100 / 8
    assert main(["train", str(tmp_path / "t_train.txt"), "--solver", "dsmlr", "--mode", "nope"]) == 2


@pytest.mark.slow
def test_a_background_run_trains_and_summarises(tmp_path):
    store = RunStore(tmp_path)
    spec = RunSpec(dataset="bibtex", solver="dsmlr", params={"mode": "sync", "epochs": 2, "lam": 1e-3},
                   threads=1, name="dsmlr-sync").validate()
    row = wait(store, launch(spec, store), timeout=600)
    assert row["status"] == "done", row["error"]
    assert row["summary"]["mode"] == "sync" and row["summary"]["objective"] < np.log(159)
    records, _ = store.records(row["id"], "iteration")
    assert sorted(records["iteration"].unique()) == [0, 1, 2] and "variational_gap" in records


# ---- Dask

@pytest.mark.cluster
def test_a_background_run_with_a_cluster_spec_trains_sync_on_dask(tmp_path):
    """The run spec's `cluster` reaches DS-MLR: local:2x1 starts a Dask LocalCluster for the run;
    the stored model is the threads sync model; other modes are refused on a cluster."""
    from xcviz.data.synthetic import split
    from xcviz.data.textio import write_xc

    ds = generate(500, 40, 10, multiclass=True, avg_nnz=8, seed=7)
    train, test = split(ds, 0.3, seed=1)
    write_xc(tmp_path / "c_train.txt", train)
    write_xc(tmp_path / "c_test.txt", test)
    params = {"mode": "sync", "epochs": 2, "grid": 4, "alpha": 100.0, "lam": 1e-3}
    store = RunStore(tmp_path / "home")
    spec = RunSpec(dataset=str(tmp_path / "c_train.txt"), test=str(tmp_path / "c_test.txt"), solver="dsmlr",
                   params=params, threads=1, cluster="local:2x1", name="dsmlr-dask").validate()
    row = wait(store, launch(spec, store), timeout=600)
    assert row["status"] == "done", row["error"]
    assert row["summary"]["cluster"] == "local:2x1" and row["summary"]["workers"] == 2
    from xcviz.models.sparse import SparseModel

    stored = SparseModel.load(store.run_dir(row["id"]) / "model")
    threads = fit_dsmlr(train.X, train.Y, DsmlrParams(**params), threads=1)
    assert (stored.weights != threads.weights).nnz == 0 and np.array_equal(stored.bias_weights, threads.bias_weights)
    with pytest.raises(ValueError, match="mode 'sync' only"):
        fit_dsmlr(train.X, train.Y, DsmlrParams(mode="async"), cluster=object())


@pytest.fixture(scope="module")
def client():
    """A plain LocalCluster(2). Its nannies write Dask's pre-spawn environment (MALLOC_TRIM_THRESHOLD_)
    into this process's os.environ, where every process started later would inherit it: put back as
    it was after, so a later test sees the environment it started with."""
    distributed = pytest.importorskip("distributed")
    before = dict(os.environ)
    try:
        with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                      dashboard_address="127.0.0.1:0") as cluster:
            with distributed.Client(cluster) as c:
                yield c
    finally:
        os.environ.clear()
        os.environ.update(before)


@pytest.mark.cluster
def test_dask_sync_is_the_threads_sync_model(client, small):
    X, Y = small
    p = DsmlrParams(mode="sync", epochs=3, grid=4, alpha=200.0, lam=1e-3)
    threads = fit_dsmlr(X, Y, p, threads=2)
    sink = MemorySink()
    dask = fit_dsmlr(X, Y, p, threads=1, cluster=client, recorder=sink)
    assert (threads.weights != dask.weights).nnz == 0 and np.array_equal(threads.bias_weights, dask.bias_weights)
    assert dask.info["workers"] == 2 and np.isclose(dask.info["objective"], threads.info["objective"], rtol=1e-12)
    it = sink.frame("iteration")
    assert (it[it.iteration == 3]["bytes_moved"] > 0).all()  # W blocks travelled between the workers


@pytest.mark.cluster
def test_dask_sync_asks_the_scheduler_for_its_workers_not_the_clients_cache(client, small, monkeypatch):
    """The client's periodic refresh caches an identity without workers; read between a fresh
    fetch and the read, it made a run fail at start ("no workers") or mid-wait ("worker left the
    cluster", a CI failure). Here the cache always lists none and the workers are checked on every
    wait of 1 ms: the run must still be the threads run."""
    import xcviz.solvers.dsmlr.distributed as dsmlr_dask
    from distributed import Client

    monkeypatch.setattr(Client, "scheduler_info", lambda self, *a, **k: {"workers": {}})
    monkeypatch.setattr(dsmlr_dask, "LOST_CHECK", 1e-3)
    X, Y = small
    p = DsmlrParams(mode="sync", epochs=2, grid=4, alpha=200.0, lam=1e-3)
    dask = fit_dsmlr(X, Y, p, threads=1, cluster=client)
    threads = fit_dsmlr(X, Y, p, threads=1)
    assert dask.info["workers"] == 2 and (threads.weights != dask.weights).nnz == 0


class _KillingSink(SqliteSink):
    """Kills one Dask worker process (SIGKILL) when the second outer iteration is recorded."""

    def __init__(self, store, run, pid):
        super().__init__(store, run)
        self.pid, self.writes = pid, 0

    def write(self, kind, columns):
        super().write(kind, columns)
        self.writes += 1
        if self.writes == 2:
            os.kill(self.pid, signal.SIGKILL)


@pytest.mark.cluster
def test_a_killed_dask_worker_fails_the_run_cleanly(client, small, tmp_path):
    """Fails cleanly, by design: the killed worker's row blocks were scattered to it and cannot
    be recomputed. The store keeps whole batches only, and the run can start again."""
    X, Y = small
    store = RunStore(tmp_path)
    run = store.create(json.dumps({"dataset": "small"}), "dask-kill")
    pids = client.run(os.getpid)
    p = DsmlrParams(mode="sync", epochs=30, grid=4, alpha=200.0, lam=1e-3)
    with pytest.raises(RuntimeError, match="worker was probably lost"):
        fit_dsmlr(X, Y, p, threads=1, cluster=client, recorder=_KillingSink(store, run, sorted(pids.values())[0]))
    records, _ = store.records(run, "iteration")
    assert len(records) >= 4 and len(records) % 2 == 0  # whole outer iterations, two workers each
    assert records.groupby("iteration").size().eq(2).all()
    client.wait_for_workers(2, timeout=120)  # the nanny restarted the worker: the run starts again
    store.clear_records(run)
    model = fit_dsmlr(X, Y, DsmlrParams(mode="sync", epochs=2, grid=4, alpha=200.0, lam=1e-3), threads=1,
                      cluster=client, recorder=SqliteSink(store, run))
    assert model.info["epochs_done"] == 2 and sorted(store.records(run, "iteration")[0]["iteration"].unique()) == [0, 1, 2]
