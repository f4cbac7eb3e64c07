"""Every notebook runs top to bottom in a fresh kernel, and is committed with its outputs cleared.
(`make test`'s two workers run two notebooks at a time.)"""
import tempfile
from pathlib import Path

import nbformat
import pytest
from jupyter_client.manager import KernelManager
from nbclient import NotebookClient

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))


def _execute(path: Path) -> nbformat.NotebookNode:
    """The notebook run in a fresh kernel that talks over Unix sockets in a private folder (as
    `make lab`'s kernels do), not over local TCP ports; the kernel is shut down after (nbclient
    leaves a kernel it was handed running: each notebook's stayed alive, with its Dask clusters,
    until the session ended)."""
    nb = nbformat.read(path, as_version=4)
    with tempfile.TemporaryDirectory() as tmp:
        km = KernelManager(kernel_name="python3", transport="ipc", connection_file=str(Path(tmp) / "kernel.json"))
        NotebookClient(nb, km=km, timeout=600, resources={"metadata": {"path": str(path.parent)}}).execute(
            cleanup_kc=True)
    return nb


def _tiers(path: Path) -> list[pytest.MarkDecorator]:
    """Every notebook is slow; one whose code trains on a cluster (`cluster=`) starts Dask too."""
    code = "".join(c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code")
    return [pytest.mark.slow, *([pytest.mark.cluster] if "cluster=" in code else [])]


@pytest.mark.parametrize("path", [pytest.param(p, marks=_tiers(p), id=p.name) for p in NOTEBOOKS])
def test_notebook_runs(path: Path):
    committed = nbformat.read(path, as_version=4)
    assert all(not c.get("outputs") and not c.get("execution_count") for c in committed.cells
               if c.cell_type == "code"), f"{path.name}: clear the outputs before committing"
    nb = _execute(path)
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert not errors
