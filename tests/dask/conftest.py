"""The served dashboard fixtures of tests/ui, for the browser test of a cluster run."""
from tests.ui.conftest import home, server  # noqa: F401
