"""Shared fixtures: the bundled Bibtex splits, loaded once per session."""
import pytest

from xcviz.data import load


@pytest.fixture(scope="session")
def bibtex():
    return load("bibtex")
