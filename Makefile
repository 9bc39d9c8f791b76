# make run   - set up (idempotent) and run the service on an embedded default
# make test  - set up (idempotent) and run the whole test suite
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
JS     := tests/interop/js

.PHONY: install run test bench js browser clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev]'
	touch $@

$(JS)/node_modules/.installed: $(JS)/package.json $(JS)/package-lock.json
	cd $(JS) && npm ci --no-audit --no-fund --loglevel=error
	touch $@

install: $(STAMP)

# Debian's chromium for the web page's browser test (Playwright drives it; no browser download)
browser:
	@command -v chromium >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    (apt-get install -y -q chromium >/dev/null 2>&1 || \
	     (apt-get update -q >/dev/null 2>&1 && apt-get install -y -q chromium >/dev/null 2>&1)) || \
	    echo "could not install chromium: the browser test will be skipped"; \
	  else echo "chromium missing and not root: the browser test will be skipped"; fi; }

js: $(JS)/node_modules/.installed

run: install
	$(BIN)/groupcoord serve $(ARGS)

test: install js browser
	$(BIN)/python -m pytest -q $(PYTEST_ARGS)

bench: install
	$(BIN)/python bench/codec.py

clean:
	rm -rf $(VENV) $(JS)/node_modules
