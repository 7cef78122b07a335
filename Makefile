# tapeviz developer tasks. Everything runs inside .venv (created on demand).
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
VPY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# Extra pytest arguments, e.g. `make test PYTEST_ARGS='-k smoke -x'`.
PYTEST_ARGS ?=

.PHONY: venv demo export test bench

venv: $(STAMP)

# Reinstalls only when pyproject.toml is newer than the stamp.
$(STAMP): pyproject.toml
	@test -x $(VPY) || $(PYTHON) -m venv $(VENV)
	$(VPY) -m pip install --upgrade pip
	$(VPY) -m pip install -e '.[cpu,test]'
	@touch $(STAMP)

# Opens the teaching notebooks in JupyterLab (prints the URL; a browser opens when there
# is a display). Stop with Ctrl+C.
demo: venv
	$(VENV)/bin/tapeviz demo

# Every built-in example as PNG/SVG/GIF in out/demo (no Jupyter needed).
export: venv
	$(VENV)/bin/tapeviz demo --export

# Browser tests (marker `browser`) run too. `--dist loadgroup` is meant to keep them
# on one worker (one JupyterLab + one Chromium per run; tests/conftest.py marks them
# xdist_group("browser")). With pytest 9.2 + xdist 3.8 the grouping is silently a
# no-op (pytest-xdist issue #1386) and it behaves like plain `load`; the harness
# works either way, each worker then starts its own server and browser.
test: venv
	$(VPY) -m pytest -q -n 2 --dist loadgroup $(PYTEST_ARGS) tests/

bench: venv
	@set -e; shopt -s nullglob; files=(bench/bench_*.py); \
	if [ $${#files[@]} -eq 0 ]; then echo "no bench/bench_*.py files"; exit 0; fi; \
	for f in "$${files[@]}"; do echo "== $$f"; $(VPY) "$$f"; done
