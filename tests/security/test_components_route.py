"""Panel's `/components/MODULE/...` route imported whatever module its URL named, without a login:
one GET (an <img> on any page a local browser opens) ran a module's code in the server, and a
module that exits stopped it. Against a real `xcviz serve`, with modules planted on its path."""
import http.client

import pytest

from tests.security.conftest import serve
from tests.security.test_auth import _login


def _get(port: int, path: str, cookie: str = "") -> int:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    connection.request("GET", path, headers={"Cookie": cookie} if cookie else {})
    status = connection.getresponse().status
    connection.close()
    return status


@pytest.mark.slow
def test_a_components_url_imports_no_module_and_cannot_stop_the_server(tmp_path):
    planted = tmp_path / "planted"
    planted.mkdir()
    marker = tmp_path / "imported"
    (planted / "xcviz_planted.py").write_text(f"open({str(marker)!r}, 'w').close()\n")
    (planted / "xcviz_exits.py").write_text("raise SystemExit(3)\n")
    log = tmp_path / "serve.log"
    with serve(["--home", str(tmp_path / "home")], log, env={"PYTHONPATH": str(planted)}) as (proc, port):
        for module in ("xcviz_planted", "xcviz_exits", "this", "os", "panel.not_a_module"):
            assert _get(port, f"/components/{module}/x/_css/y") == 404, module
        assert not marker.exists(), "the URL's module was imported"
        assert proc.poll() is None, "a module's SystemExit stopped the server"
        assert _get(port, "/dashboard") == 200
        # a component of Panel's own, imported already, still reaches Panel's handler (which refuses a
        # path its component does not list)
        assert _get(port, "/components/panel.models.tabulator/DataTabulator/__css__/x") == 403
    assert "Beautiful is better than ugly" not in log.read_text(errors="replace")


@pytest.mark.slow
def test_components_ask_for_the_login(tmp_path):
    url = "/components/panel.models.tabulator/DataTabulator/__css__/x"
    with serve(["--home", str(tmp_path / "home")], tmp_path / "serve.log",
               env={"XCVIZ_PASSWORD": "correct horse"}) as (_proc, port):
        assert _get(port, url) == 302  # to the login page
        status, _, cookie = _login(port, "correct horse")
        assert status == 302 and cookie
        assert _get(port, "/dashboard", cookie) == 200  # a page imports the component's module
        assert _get(port, url, cookie) == 403  # logged in: Panel's handler answers
