"""Every notebook runs top to bottom in a fresh kernel, and is committed with its outputs cleared.

The notebooks run two at a time (each in its own kernel, started by the first test that needs
one): a kernel spends much of its life starting and importing on one core, so two overlap well on
a two-core machine, and the suite's budget is tight."""
import tempfile
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import nbformat
import pytest
from jupyter_client.manager import KernelManager
from nbclient import NotebookClient

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))


def _execute(path: Path) -> nbformat.NotebookNode:
    """The notebook run in a fresh kernel that talks over Unix sockets in a private folder (as
    `make lab`'s kernels do), not over local TCP ports."""
    nb = nbformat.read(path, as_version=4)
    with tempfile.TemporaryDirectory() as tmp:
        km = KernelManager(kernel_name="python3", transport="ipc", connection_file=str(Path(tmp) / "kernel.json"))
        NotebookClient(nb, km=km, timeout=600, resources={"metadata": {"path": str(path.parent)}}).execute()
    return nb


@pytest.fixture(scope="module")
def executed(request):
    """Notebook path -> the future of its executed copy, for every notebook this session tests
    (all submitted at once)."""
    chosen = [item.callspec.params["path"] for item in request.session.items
              if getattr(item, "originalname", None) == "test_notebook_runs"]
    with ThreadPoolExecutor(max_workers=2) as pool:
        yield {path: pool.submit(_execute, path) for path in chosen}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs(path: Path, executed: dict[Path, Future]):
    committed = nbformat.read(path, as_version=4)
    assert all(not c.get("outputs") and not c.get("execution_count") for c in committed.cells
               if c.cell_type == "code"), f"{path.name}: clear the outputs before committing"
    nb = executed[path].result()
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert not errors
