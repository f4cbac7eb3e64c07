"""What a local Dask cluster shows the rest of the machine: no HTTP pages, no shared scratch folder."""
import stat
from pathlib import Path
from urllib.error import HTTPError
from urllib.request import Request, urlopen

import pytest

from xcviz.compute.cluster import cluster_client

pytestmark = pytest.mark.cluster


def test_a_local_cluster_serves_no_http_pages_and_keeps_its_scratch_private():
    """Dask's scheduler always runs an HTTP server (info pages, JSON, a proxy) answering any Host
    name without a login, its dashboard on 8787; its workers spilled into the shared
    /tmp/dask-scratch-space. A local cluster now answers 404 to every path on a free port, and its
    workers' folder is an owner-only temporary one, gone with the cluster."""
    with cluster_client("local:1x1", 1) as (client, _info):
        port = client.scheduler_info()["services"]["dashboard"]
        assert port != 8787
        for path in ("/status", "/info/main/workers.html", "/json/identity.json", "/metrics", "/health"):
            request = Request(f"http://127.0.0.1:{port}{path}", headers={"Host": "attacker.example"})
            with pytest.raises(HTTPError) as refused:
                urlopen(request, timeout=10)
            assert refused.value.code == 404, path
        (folder,) = client.run(lambda dask_worker: dask_worker.local_directory).values()
        scratch = Path(folder).parents[1]
        assert scratch.name.startswith("xcviz-dask-") and stat.S_IMODE(scratch.stat().st_mode) == 0o700
    assert not scratch.exists()
