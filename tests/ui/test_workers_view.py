"""The Workers view sends its data to the page only when there is something new to draw."""
import pandas as pd

from xcviz.app.ui.workers_view import WorkersView


class _Store:
    """Task records of one run, handed out after a batch number; `add` appends a block."""

    def __init__(self) -> None:
        self.batches = [pd.DataFrame({"task": [0], "worker": ["threads:2"], "start": [10.0], "end": [11.0],
                                      "labels": [5], "seconds": [1.0], "bytes": [100]})]

    def add(self, task: int) -> None:
        self.batches.append(pd.DataFrame({"task": [task], "worker": ["threads:2"], "start": [11.0 + task],
                                          "end": [12.0 + task], "labels": [5], "seconds": [1.0], "bytes": [100]}))

    def records(self, run, kind, after=0):
        new = self.batches[after:]
        return (pd.concat(new, ignore_index=True) if new else pd.DataFrame()), len(self.batches)


def _changes(view: WorkersView) -> list:
    seen = []
    view.source.on_change("data", lambda attr, old, new: seen.append(len(new["task"])))
    return seen


def test_an_unchanged_timeline_is_not_sent_again_and_new_blocks_are():
    store = _Store()
    view = WorkersView(store)
    seen = _changes(view)
    rows = {"r": {"name": "run one", "status": "running", "number": 1}}
    view.update(rows, ["r"])
    view.update(rows, ["r"])
    view.update(rows, ["r"])
    assert seen == [1]  # drawn once, then nothing new: no message per tick
    store.add(1)
    view.update(rows, ["r"])
    assert seen == [1, 2] and list(view.source.data["task"]) == [0, 1]
    rows["r"]["name"] = "renamed"  # a renamed run is drawn again (its name is in the bars' hover)
    view.update(rows, ["r"])
    assert seen == [1, 2, 2] and set(view.source.data["run"]) == {"renamed"}
    view.update(rows, [])  # hiding the run empties the timeline
    assert seen == [1, 2, 2, 0] and "No blocks" in view.table.object
    view.forget("r")
    view.update(rows, ["r"])  # a forgotten run is read and drawn again from the start
    assert seen == [1, 2, 2, 0, 2]
