# Two commands set everything up on a fresh machine: `make dashboard` and `make test` (`make demo` trains
# MSI on Bibtex in the terminal).
# `make bench` writes BENCHMARKS.md; `make lab` opens the notebooks.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: install browser dashboard demo test test-fast bench lab docs clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

$(STAMP): $(PY) pyproject.toml
	$(PY) -m pip install --quiet -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

# Debian's chromium for the browser tests (Playwright cannot download browsers here)
browser:
	@command -v chromium >/dev/null 2>&1 || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium)

dashboard: $(STAMP)
	$(VENV)/bin/xcviz serve --address 127.0.0.1 --port 5006

demo: $(STAMP)
	$(VENV)/bin/xcviz train bibtex --init msi --threads 2

# two workers (pytest-xdist): the suite's tests spend most of their time waiting on the servers,
# browsers and processes they start, and one core sat idle. `--dist load` hands each worker the tests
# in the suite's order (work stealing would run a later file before an earlier one). The log ends
# with the 30 slowest tests: the suite's 15-minute budget on 2 cores is cut from that list
test: $(STAMP) browser
	$(VENV)/bin/lint-imports
	$(PY) -m pytest -q -n 2 --dist load --durations=30

# the quick tier while working: the tests not marked slow, browser or cluster (pyproject's markers),
# no chromium needed. Measured on this 2-core machine with a warm kernel cache: 661 tests, 1 min 50 s
# for the whole target (pytest 105 s). `make test` (CI) runs every tier.
test-fast: $(STAMP)
	$(VENV)/bin/lint-imports
	$(PY) -m pytest -q -n 2 --dist load -m "not slow and not browser and not cluster"

# Kernels talk over Unix sockets in the user's private runtime folder, not local TCP ports;
# root (a container) needs JupyterLab's explicit --allow-root.
lab: $(STAMP)
	$(VENV)/bin/jupyter lab --KernelManager.transport=ipc $(if $(filter 0,$(shell id -u)),--allow-root) notebooks/

bench: $(STAMP) browser
	$(PY) -m pip install --quiet -e '.[bench]'
	$(PY) benchmarks/run.py --out BENCHMARKS.md

# the Sphinx site into docs/_build/html, warnings as errors; the notebooks are rendered without running
# them, unless XCVIZ_DOCS_EXECUTE=1 (myst-nb's cache mode: each runs once, again only when it changes)
docs: $(STAMP)
	$(VENV)/bin/sphinx-build -W --keep-going -b html docs docs/_build/html

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis
