"""Dask schedulers from the page: a scheduler sends its workers' results back to the run's process,
which unpickles them, so a scheduler address typed into the page let a page user's own scheduler
run code as the server's owner. The page offers only the schedulers `xcviz serve
--allow-scheduler` names, and a confined run (launched from the page) is refused any other at
launch and at resume, before anything connects to it."""
import socket
from contextlib import contextmanager

import panel as pn
import pytest
from bokeh.document import Document

from xcviz.cli import main
from xcviz.runs.inputs import InputError, check, record
from xcviz.runs.launcher import launch
from xcviz.runs.spec import RunSpec
from xcviz.runs.store import RunStore
from xcviz.app.dashboard import Dashboard


@contextmanager
def _listener():
    """A scheduler address nothing answers on but a socket that counts who connected."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        server.setblocking(False)
        yield f"tcp://127.0.0.1:{server.getsockname()[1]}", server


def _connected(server: socket.socket) -> bool:
    try:
        server.accept()[0].close()
        return True
    except BlockingIOError:
        return False


@pytest.mark.slow
def test_the_page_offers_only_the_servers_schedulers(tmp_path, small_xc):
    train, _ = small_xc
    plain = Dashboard(RunStore(tmp_path / "home"), data_dirs=[train.parent])
    plain.view().get_root(Document())
    assert plain.launcher.backend.kind.options == ["threads", "local cluster"]
    hint = next(w for w in plain.launcher.backend.panel().select(pn.widgets.TooltipIcon)).value
    assert "--allow-scheduler" in hint  # where the scheduler choice went
    allowed = ["tcp://10.0.0.7:8786", "tls://scheduler.example.org:8786"]
    offered = Dashboard(RunStore(tmp_path / "home"), data_dirs=[train.parent], schedulers=allowed)
    offered.view().get_root(Document())
    backend = offered.launcher.backend
    assert backend.kind.options == ["threads", "local cluster", "scheduler"]
    assert backend.address.options == allowed  # a choice, not a text box
    backend.kind.value, backend.address.value = "scheduler", allowed[1]
    assert backend.cluster(1) == allowed[1]


def test_a_scheduler_the_server_was_not_started_with_is_refused(tmp_path, small_xc, capsys):
    train, test = small_xc
    store = RunStore(tmp_path / "home")
    with _listener() as (address, server):
        spec = RunSpec(dataset=str(train), test=str(test), params={"max_iter": 1}, threads=1, cluster=address)
        with pytest.raises(InputError, match="not one this server was started with"):
            launch(spec, store, data_dirs=[train.parent], schedulers=["tcp://10.0.0.7:8786"])
        assert store.list() == []
        # the checks themselves: a local cluster and threads are always allowed, a listed scheduler
        # too, and a run launched by the local user's own CLI (not confined) may name any
        for cluster in (None, "local:2", address):
            record(RunSpec(dataset=str(train), test=str(test), cluster=cluster), [train.parent], [address])
        record(spec, None)
        confined = record(RunSpec(dataset=str(train), test=str(test)), [train.parent], [])
        with pytest.raises(InputError, match="not one this server was started with"):
            check(spec, confined)  # a spec changed after launch, or a run of an older xcviz
        # at resume: the worker would connect; the CLI refuses first
        run = store.create(spec.to_json(), "planted", inputs=confined)
        store.update(run, status="cancelled")
        assert main(["resume", run, "--home", str(tmp_path / "home")]) == 2
        assert "not one this server was started with" in capsys.readouterr().err
        assert store.get(run)["status"] == "cancelled"
        assert not _connected(server), "something connected to the scheduler"
        # a run launched while the server allowed the scheduler, resumed from a page of a server that
        # no longer does: refused (the list saved at launch is not enough)
        allowed_then = store.create(spec.to_json(), "allowed-then", inputs=record(spec, [train.parent], [address]))
        store.update(allowed_then, status="cancelled")
        page = Dashboard(store, data_dirs=[train.parent], schedulers=[])
        with pytest.raises(InputError, match="not one this server was started with"):
            page.runs._resume(allowed_then)
        assert store.get(allowed_then)["status"] == "cancelled"
        assert not _connected(server), "something connected to the scheduler"
    assert store.get(run)["inputs"]["schedulers"] == []


def test_serve_takes_only_scheduler_addresses(capsys):
    for given in ("local:2", "http://10.0.0.7:8786"):
        assert main(["serve", "--port", "1", "--allow-scheduler", given]) == 2
        assert "--allow-scheduler" in capsys.readouterr().err
