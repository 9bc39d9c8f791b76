# make run   - set up .venv with what running needs, and run the service with its admin listener
#              (web page at http://127.0.0.1:8080/)
# make test  - set up .venv with the dev extra and the test clients, and run the whole test suite
PYTHON    ?= python3
VENV      := .venv
BIN       := $(VENV)/bin
RUN_STAMP := $(VENV)/.installed-run
DEV_STAMP := $(VENV)/.installed-dev
JS        := tests/interop/js
# the admin listener of `make run` (empty: none); ARGS may override it (`--http-port 9000`: the last
# one given wins)
HTTP_PORT ?= 8080
# the test suite's workers (pytest-xdist; 0 or empty: none, all in pytest's own process)
TEST_JOBS ?= 2

.PHONY: install install-dev bytecode run lint test bench js browser clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

# what `groupcoord serve`, fleet and simulate need (no PySpark, browser driver or test clients)
$(RUN_STAMP): pyproject.toml setup.py | $(BIN)/python
	$(BIN)/python -m pip install -q -e .
	touch $@

# the dev extra: analytics (PySpark), Playwright, pytest and the Kafka clients of the tests
$(DEV_STAMP): pyproject.toml setup.py | $(BIN)/python
	$(BIN)/python -m pip install -q -e '.[dev]'
	touch $@ $(RUN_STAMP)

$(JS)/node_modules/.installed: $(JS)/package.json $(JS)/package-lock.json
	cd $(JS) && npm ci --no-audit --no-fund --loglevel=error
	touch $@

install: $(RUN_STAMP)

install-dev: $(DEV_STAMP)

# Debian's chromium for the web page's browser test (Playwright drives it; no browser download)
browser:
	@command -v chromium >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing Debian's chromium (apt-get install --no-install-recommends chromium) for the browser test"; \
	    (apt-get install -y -q --no-install-recommends chromium >/dev/null 2>&1 || \
	     (apt-get update -q >/dev/null 2>&1 && \
	      apt-get install -y -q --no-install-recommends chromium >/dev/null 2>&1)) || \
	    echo "could not install chromium: the browser test will be skipped"; \
	  else echo "chromium missing and not root: the browser test will be skipped"; fi; }

js: $(JS)/node_modules/.installed

# the modules' bytecode in __pycache__, written ahead: where PYTHONDONTWRITEBYTECODE is set (as on
# some CI images) Python compiles every module again at each start otherwise, 0.2-0.4 s a command
# or a test's subprocess; up to date after the first time (a file changed since is compiled again)
bytecode: | $(BIN)/python
	$(BIN)/python -m compileall -q -j 0 -x '/test_[^/]*\.py$$|/conftest\.py$$' protocol coordinator client sim analytics cli tests

run: $(RUN_STAMP) bytecode
	$(BIN)/groupcoord serve $(if $(HTTP_PORT),--http-port $(HTTP_PORT)) $(ARGS)

# ruff, and the import contracts of pyproject.toml (which part may import which)
lint: $(DEV_STAMP)
	$(BIN)/ruff check --quiet .
	$(BIN)/lint-imports --no-cache

test: lint js browser bytecode
	$(BIN)/python -m pytest -q $(if $(TEST_JOBS),-n $(TEST_JOBS)) $(PYTEST_ARGS)

bench: $(DEV_STAMP)
	$(BIN)/python bench/codec.py

clean:
	rm -rf $(VENV) $(JS)/node_modules
