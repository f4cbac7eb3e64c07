"""Record sinks: memory and JSON lines keep every record; the JSON file is valid line by line."""
import json

import numpy as np

from xcviz.records.sinks import JsonLinesSink, MemorySink, NullSink, TeeSink, read_jsonl


def _emit(sink):
    sink.begin({"run": "r1", "solver": "dismec"})
    sink.write("iteration", {"label": np.array([0, 0, 1]), "iteration": np.array([0, 1, 0]),
                             "objective": np.array([3.0, 2.5, np.nan])})
    sink.write("label", {"label": np.array([0, 1]), "iterations": np.array([1, 0])})
    sink.end({"train_seconds": 0.5})


def test_memory_and_jsonl_sinks_agree(tmp_path):
    mem, path = MemorySink(), tmp_path / "rec.jsonl"
    _emit(TeeSink(mem, JsonLinesSink(path), NullSink()))
    assert mem.meta["run"] == "r1" and mem.summary == {"train_seconds": 0.5}
    assert list(mem.iterations["objective"][:2]) == [3.0, 2.5]
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert [line["kind"] for line in lines] == ["begin", "iteration", "iteration", "iteration", "label", "label", "end"]
    assert lines[3]["objective"] is None  # NaN is not JSON: written as null
    it = read_jsonl(path, "iteration")
    assert list(it["run"]) == ["r1"] * 3 and list(it["label"]) == [0, 0, 1]
    assert len(read_jsonl(path, "label")) == 2
