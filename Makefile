# tapeviz developer tasks. Everything runs inside .venv (created on demand).
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
VPY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# Extra pytest arguments, e.g. `make test PYTEST_ARGS='-k smoke -x'`.
PYTEST_ARGS ?=
# The lowest TensorFlow tapeviz supports (the lower bound of the [cpu] extra in
# pyproject.toml; tests/package/test_release.py keeps the two equal). `make test-tf-min` runs the
# non-browser suite on it, in its own venv, with the Keras 3 that pip picks for it.
TF_MIN := 2.16
VENV_TF_MIN := .venv-tf$(TF_MIN)
VPY_TF_MIN := $(VENV_TF_MIN)/bin/python

.PHONY: venv node-tools test-js system-parts demo export lint test test-fast bench docs test-docs dist test-wheel venv-tf-min test-tf-min ci

venv: $(STAMP)

# Reinstalls only when pyproject.toml is newer than the stamp. One venv for the tests, the
# docs and the packaging checks.
$(STAMP): pyproject.toml
	@test -x $(VPY) || $(PYTHON) -m venv $(VENV)
	$(VPY) -m pip install --upgrade pip
	$(VPY) -m pip install -e '.[cpu,test,docs,lint]'
	@touch $(STAMP)

# Opens the teaching notebooks in JupyterLab (prints the URL; a browser opens when there
# is a display). Stop with Ctrl+C.
demo: venv
	$(VENV)/bin/tapeviz demo

# Every built-in example as PNG/SVG/GIF in out/demo (no Jupyter needed).
export: venv
	$(VENV)/bin/tapeviz demo --export

# The front end's lint, format and test tools (eslint, prettier, jsdom), pinned in
# package.json / package-lock.json, installed by `npm ci` into node_modules/ (git-ignored)
# when the lock file is newer than the install. Only these checks use them: the package's
# JavaScript (tapeviz/explorer/static) runs in the browser as it is, nothing is fetched.
NODE_STAMP := node_modules/.installed
node-tools: $(NODE_STAMP)

$(NODE_STAMP): package.json package-lock.json
	@command -v npm >/dev/null || { \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
			echo "installing nodejs npm (apt-get)"; \
			DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
			DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends nodejs npm; \
		else \
			echo "npm is missing: the front end's lint and tests need Node.js and npm (as root: apt-get install nodejs npm)"; \
			exit 1; \
		fi; }
	npm ci --no-audit --no-fund
	@touch $@

# Style and likely bugs over the whole checkout (ruff: package, tests, bench, docs extension,
# notebooks), the formatting (ruff format --check; Markdown, notebooks and the message
# catalogues are excluded in pyproject.toml), then types of the package (mypy on tapeviz/);
# all configured in pyproject.toml, pinned in its `lint` extra; then the front end's
# JavaScript and CSS: eslint (eslint.config.js) and prettier's format check (.prettierrc.json).
# A few seconds: `make test` runs it first. `ruff format .` and
# `node_modules/.bin/prettier --write tapeviz/explorer/static tests/js` fix the format.
lint: venv node-tools
	$(VPY) -m ruff check .
	$(VPY) -m ruff format --check .
	$(VPY) -m mypy
	node_modules/.bin/eslint tapeviz/explorer/static tests/js eslint.config.js
	node_modules/.bin/prettier --check tapeviz/explorer/static tests/js eslint.config.js

# The front end's unit tests in node: the page's patch apply and quiz judge on cases made by
# the Python implementations (tests/js/cases; tests/explorer/test_frontend_js.py runs them on fresh
# ones too).
test-js: node-tools
	node --test tests/js/

# The system parts some tests need: Chromium (browser tests) and a CJK font (Chinese text
# measured and drawn). As root they are installed with apt-get when missing; otherwise one
# line says what is missing, and the tests that need it are skipped, each with the reason
# (under CI they fail instead: .ci/run installs both).
SYSTEM_PARTS := $(if $(wildcard /usr/bin/chromium),,chromium) \
	$(if $(wildcard /usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc),,fonts-noto-cjk)
system-parts:
	@missing="$(strip $(SYSTEM_PARTS))"; \
	if [ -z "$$missing" ]; then exit 0; fi; \
	if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		echo "installing $$missing (apt-get)"; \
		{ DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
		  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; } \
		|| echo "apt-get could not install $$missing; the tests that need them are skipped"; \
	else \
		echo "not installed: $$missing (as root: apt-get install $$missing); the tests that need them are skipped"; \
	fi

# Lint first (it fails in seconds what the suite would find in minutes), then the suite.
# Browser tests (marker `browser`) run too. `--dist loadgroup` is meant to keep them
# on one worker (one JupyterLab + one Chromium per run; tests/conftest.py marks them
# xdist_group("browser")). With pytest 9.2 + xdist 3.8 the grouping is silently a
# no-op (pytest-xdist issue #1386) and it behaves like plain `load`; the harness
# works either way, each worker then starts its own server and browser.
test: venv lint system-parts test-js
	$(VPY) -m pytest -q -n 2 --dist loadgroup -rs $(PYTEST_ARGS) tests/

# The quick check while you work: lint, then the suite without the browser tests and without
# the tests marked slow (each took 5 s or more). Its tests' durations, measured one at a time
# on a shared 2-core machine at load 7-9, sum to ~265 s: about 2 min 50 s on 2 workers with
# collection (~35 s), less on a quiet machine. The whole non-browser suite summed to 1,190 s.
test-fast: venv lint
	$(VPY) -m pytest -q -n 2 -m "not browser and not slow" $(PYTEST_ARGS) tests/

# The docs site in docs/_build/html: README, notebooks executed now, gallery, API reference.
# Strict: any Sphinx warning fails the build. Needs npm (ipywidgets' scripts are served
# from the site, not a CDN).
docs: venv
	$(VPY) -m sphinx -W --keep-going -b html docs docs/_build/html

# Builds the docs, then checks the built site (every page there, no CDN, widgets render).
test-docs: docs
	$(VPY) -m pytest -q $(PYTEST_ARGS) tests_dist/test_docs.py

# sdist and wheel in dist/ (the wheel is built from the sdist, as an installer would).
dist: venv
	rm -rf dist
	$(VPY) -m build --outdir dist .

# Builds the sdist and wheel, installs the wheel into a fresh venv (TF from pip's cache)
# and runs the command line and a notebook from the installed package.
test-wheel: venv
	$(VPY) -m pytest -q $(PYTEST_ARGS) tests_dist/test_wheel.py

venv-tf-min: $(VENV_TF_MIN)/.installed

$(VENV_TF_MIN)/.installed: pyproject.toml
	@test -x $(VPY_TF_MIN) || $(PYTHON) -m venv $(VENV_TF_MIN)
	$(VPY_TF_MIN) -m pip install --upgrade pip
	$(VPY_TF_MIN) -m pip install --no-compile -e '.[test]' 'tensorflow-cpu==$(TF_MIN).*'
	@touch $@

# The suite without the browser tests on the lowest supported TensorFlow.
test-tf-min: venv-tf-min
	$(VPY_TF_MIN) -m pytest -q -n 2 -m "not browser" $(PYTEST_ARGS) tests/

# Everything CI runs after `make test` (see .ci/run).
ci: test test-wheel test-tf-min test-docs

bench: venv
	@set -e; shopt -s nullglob; files=(bench/bench_*.py); \
	if [ $${#files[@]} -eq 0 ]; then echo "no bench/bench_*.py files"; exit 0; fi; \
	for f in "$${files[@]}"; do echo "== $$f"; $(VPY) "$$f"; done
