"""A local Dask cluster works only in a private folder of its own: never in the shared
$TMPDIR/dask-scratch-space (whose `global.lock` Dask's scheduler opened with truncation, following a
symlink another local user planted there), and a killed driver's folder is removed at the next start."""
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from xcviz.compute.cluster import SCRATCH_PREFIX, cluster_client

pytestmark = pytest.mark.cluster

_DRIVER = textwrap.dedent("""
    import sys, time
    from xcviz.compute.cluster import cluster_client
    with cluster_client("local:1x1", 1) as (client, _):
        print(client.run(lambda dask_worker: dask_worker.local_directory).popitem()[1], flush=True)
        if sys.argv[1] == "hang":
            time.sleep(600)
""")


def _driver(tmp: Path, mode: str) -> subprocess.Popen:
    """A driver process starting a local cluster with TMPDIR=tmp; prints its worker's folder."""
    return subprocess.Popen([sys.executable, "-c", _DRIVER, mode], env={**os.environ, "TMPDIR": str(tmp)},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)


def test_a_local_cluster_leaves_a_planted_scratch_space_alone(tmp_path):
    tmp = tmp_path / "tmp"
    shared = tmp / "dask-scratch-space"
    shared.mkdir(parents=True)
    victim = tmp_path / "victim.txt"
    victim.write_text("the victim's data\n")
    (shared / "global.lock").symlink_to(victim)
    driver = _driver(tmp, "once")
    out, err = driver.communicate(timeout=120)
    assert driver.returncode == 0, err[-2000:]
    assert victim.read_text() == "the victim's data\n"
    assert sorted(p.name for p in shared.iterdir()) == ["global.lock"]
    assert Path(out.strip()).is_relative_to(tmp) and SCRATCH_PREFIX in out
    assert not any(p.name.startswith(SCRATCH_PREFIX) for p in tmp.iterdir())  # removed with the cluster


def test_a_killed_drivers_scratch_folder_is_removed_at_the_next_start(tmp_path):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    driver = _driver(tmp, "hang")
    try:
        folder = Path(driver.stdout.readline().strip())
    finally:
        os.killpg(driver.pid, signal.SIGKILL)  # the driver and the cluster's processes, as kill -9 leaves them
        driver.wait()
    (left,) = [p for p in tmp.iterdir() if p.name.startswith(SCRATCH_PREFIX)]
    assert folder.is_relative_to(left)
    time.sleep(0.5)
    with cluster_client("local:1x1", 1, scratch_in=tmp):
        assert not left.exists()
        (ours,) = [p for p in tmp.iterdir() if p.name.startswith(SCRATCH_PREFIX)]
        assert ours.name.startswith(f"{SCRATCH_PREFIX}{os.getpid()}-")
    assert not any(p.name.startswith(SCRATCH_PREFIX) for p in tmp.iterdir())
