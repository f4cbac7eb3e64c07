"""The `cluster` field and options: accepted forms, bounds and addresses refused with clear
errors, the block plan of a Dask run (balanced by label frequency)."""
import json
import re

import numpy as np
import pytest

from xcviz.cli import main
from xcviz.runs.cluster import MAX_LOCAL_WORKERS, parse_cluster, task_threads
from xcviz.runs.spec import RunSpec, SpecError
from xcviz.solvers.distributed import balanced_blocks


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


def test_balanced_blocks_spread_the_head_labels():
    rng = np.random.default_rng(0)
    n_pos = np.sort(rng.zipf(1.5, 1000))[::-1].copy()
    rng.shuffle(n_pos)
    todo = np.setdiff1d(np.arange(1000), [3, 500])  # a resumed run: two labels already trained
    blocks = balanced_blocks(todo, n_pos, 16)
    assert len(blocks) == 16 and sorted(np.concatenate(blocks)) == list(todo)
    assert max(b.size for b in blocks) - min(b.size for b in blocks) <= 1
    head = todo[np.argsort(-n_pos[todo], kind="stable")][:16]
    assert sorted(int(np.flatnonzero([h in b for b in blocks])[0]) for h in head) == list(range(16))
    for b in blocks:  # heaviest first inside each block
        assert (np.diff(n_pos[b]) <= 0).all()
    assert len(balanced_blocks(todo[:3], n_pos, 16)) == 3  # never an empty block
