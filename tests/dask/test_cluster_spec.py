"""The `cluster` field and options: accepted forms, bounds and addresses refused with clear
errors, the block plan of a Dask run (guided sizes, stratified by label frequency)."""
import json
import re

import numpy as np
import pytest

from xcviz.cli import main
from xcviz.compute.cluster import MAX_LOCAL_WORKERS, parse_cluster, task_threads
from xcviz.runs.spec import RunSpec, SpecError
from xcviz.solvers._onevsall.blocks import BlockPlan, labels_within_budget
from xcviz.solvers._onevsall.dask_backend import block_plan, guided_sizes, stratified_blocks


def test_accepted_cluster_values():
    assert parse_cluster(None) is None
    local = parse_cluster("local:3x1")
    assert (local.kind, local.workers, local.threads) == ("local", 3, 1)
    assert task_threads(local, threads=2) == 1  # T of NxT wins over the spec's threads
    assert task_threads(parse_cluster("local:2"), threads=2) == 2
    remote = parse_cluster("tcp://scheduler.example.org:8786")
    assert (remote.kind, remote.address) == ("scheduler", "tcp://scheduler.example.org:8786")
    assert task_threads(remote, threads=None) is None  # each worker uses its own cores
    assert parse_cluster("tcp://[::1]:8786").kind == "scheduler"
    assert parse_cluster("tls://scheduler.example.org:8786").address == "tls://scheduler.example.org:8786"
    spec = RunSpec(dataset="bibtex", cluster="local:2x1").validate()
    assert RunSpec.from_json(spec.to_json()).cluster == "local:2x1"


@pytest.mark.parametrize("text, phrase", [
    ("local:0", f"1 to {MAX_LOCAL_WORKERS} workers, got 0"),
    (f"local:{MAX_LOCAL_WORKERS + 1}", f"1 to {MAX_LOCAL_WORKERS} workers"),
    ("local:2x0", "threads per worker must be from 1"),
    ("local:2x9999", "threads per worker must be from 1"),
    ("local:two", "expected 'local:N' or 'local:NxT'"),
    ("tcp://host", "scheduler address 'tcp://HOST:PORT'"),
    ("tcp://host:99999", "port must be from 1 to 65535"),
    ("tcp://bad host:8786", "scheduler address"),
    ("udp://host:8786", "scheduler address"),
    ("tcp://h:0", "port must be from 1 to 65535"),
])
def test_refused_cluster_values(text, phrase):
    with pytest.raises(SpecError, match=re.escape(f"spec field 'cluster': cluster {text!r}: ") + ".*" + re.escape(phrase)):
        RunSpec(dataset="bibtex", cluster=text).validate()


def test_spec_errors_name_the_field_and_the_source():
    with pytest.raises(SpecError, match=r"s\.json: spec field 'cluster': cluster 'local:0'"):
        RunSpec.from_json('{"dataset": "bibtex", "cluster": "local:0"}', source="s.json")
    with pytest.raises(SpecError, match="spec field 'cluster': cluster must be null"):
        RunSpec.from_json('{"dataset": "bibtex", "cluster": 2}')
    with pytest.raises(SpecError, match="memoir.*no label blocks to distribute"):
        RunSpec(dataset="bibtex", solver="memoir", cluster="local:2").validate()


def test_cli_spec_and_train_options(capsys):
    assert main(["spec", "bibtex", "--cluster", "local:2x1"]) == 0
    assert json.loads(capsys.readouterr().out)["cluster"] == "local:2x1"
    assert main(["spec", "bibtex", "--scheduler", "10.0.0.5:8786"]) == 0
    assert json.loads(capsys.readouterr().out)["cluster"] == "tcp://10.0.0.5:8786"
    for argv, phrase in ((["spec", "bibtex", "--cluster", "local:0"], "1 to 64 workers"),
                         (["train", "bibtex", "--cluster", "local:2", "--scheduler", "h:1"], "not both"),
                         (["train", "bibtex", "--scheduler", "tcp://h"], "tcp://HOST:PORT"),
                         (["train", "bibtex", "--solver", "memoir", "--cluster", "local:2"], "no label blocks")):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.startswith("xcviz: error: ") and phrase in err and "Traceback" not in err


def test_guided_block_sizes_by_hand():
    # 159 labels on 2 workers: a quarter of what is left each time (rounded up), at least 8; the
    # last 3 would make a block under 8, so they join the one before
    assert guided_sizes(159, 2, 10**6) == [40, 30, 23, 17, 13, 9, 8, 8, 11]
    assert guided_sizes(159, 2, 25) == [25, 25, 25, 21, 16, 12, 9, 8, 8, 10]  # within the memory cap
    assert guided_sizes(20, 1, 3) == [3, 3, 3, 3, 3, 3, 2]  # a cap below the minimum wins
    assert guided_sizes(5, 4, 100) == [5] and guided_sizes(0, 2, 100) == []


def test_stratified_blocks_by_hand():
    # labels ranked 9, 8, ..., 0 (most positives first); blocks of 4, 3, 3 take the ranks at the
    # quantiles (k + 1/2)/size: .125 .375 .625 .875 | .17 .5 .83 | .17 .5 .83, dealt in that order
    blocks = stratified_blocks(np.arange(10), np.arange(10), [4, 3, 3])
    assert [b.tolist() for b in blocks] == [[9, 6, 3, 0], [8, 5, 2], [7, 4, 1]]


def test_block_plan_covers_every_label_with_even_samples_of_the_ranking():
    rng = np.random.default_rng(0)
    n_pos = np.sort(rng.zipf(1.5, 1000))[::-1].copy()
    rng.shuffle(n_pos)
    todo = np.setdiff1d(np.arange(1000), [3, 500])  # a resumed run: two labels already trained
    plan = BlockPlan(n_features=50, dim=51, rec_len=1, iter_fields=("x",), label_fields=("x",), converged=0,
                     first_iteration=0, bias_index=50, prune_threshold=0.0)
    blocks = block_plan(todo, n_pos, 2, plan)
    sizes = [b.size for b in blocks]
    assert sizes == guided_sizes(todo.size, 2, 10**9) and sizes[0] == 250 and len(blocks) == 15
    assert sorted(np.concatenate(blocks).tolist()) == todo.tolist()
    rank = np.empty(1000, int)
    rank[todo[np.argsort(-n_pos[todo], kind="stable")]] = np.arange(todo.size)
    for b in blocks:
        assert (np.diff(n_pos[b]) <= 0).all()  # heaviest first inside each block
        quantile = (np.arange(b.size) + 0.5) / b.size  # its k-th label sits at that quantile of the ranking
        assert np.abs(rank[b] - quantile * todo.size).max() <= len(blocks)
    wide = plan._replace(dim=2**20)  # 8 MB of weights a label: 7 labels fit the 64 MB a block may hold
    assert max(b.size for b in block_plan(todo, n_pos, 2, wide)) == labels_within_budget(2**20, 1, 1) == 7


def test_dsmlr_async_on_a_cluster_is_refused_before_any_cluster_starts(monkeypatch, capsys):
    """DS-MLR's async on a local cluster was refused inside the solver, after the cluster had started:
    shut down as it came up, it printed a traceback beside the refusal once in 6 (issue #42). The
    train command, the API and a run spec now refuse it first, in one line."""
    import xcviz.api

    def no_cluster(*args, **kwargs):
        raise AssertionError("a cluster was started")

    monkeypatch.setattr(xcviz.api, "cluster_client", no_cluster)
    assert main(["train", "bibtex", "--solver", "dsmlr", "--set", "mode=async", "--cluster", "local:2"]) == 2
    assert capsys.readouterr().err == "xcviz: error: dsmlr runs on a Dask cluster in mode 'sync' only, not 'async'\n"
    with pytest.raises(SpecError, match="spec field 'cluster': dsmlr runs on a Dask cluster in mode 'sync' only"):
        RunSpec(dataset="bibtex", solver="dsmlr", params={"mode": "lbfgs"}, cluster="local:2").validate()
