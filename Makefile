# The two commands of a newcomer: `make run` (set up what serving needs, then serve on SQLite) and
# `make test`. Each target installs what it needs and no more (scripts/setup.sh, one part at a time,
# each with its stamp file in .venv): run and demo only the service and the client; test, lint, fuzz,
# docs and bench add their extras the first time they run. `make setup` installs every part.
VENV := .venv
SETUP_INPUTS := pyproject.toml client/pyproject.toml requirements.lock scripts/setup.sh
SERVE := $(VENV)/.installed-serve
DEV := $(VENV)/.installed-dev
BENCH := $(VENV)/.installed-bench
DOCS := $(VENV)/.installed-docs
AXE := .cache/axe/node_modules/axe-core/axe.min.js

.PHONY: setup run demo test lint docs bench fuzz
# the parts install into one virtual environment: one pip at a time, even under make -j
.NOTPARALLEL:

$(SERVE): $(SETUP_INPUTS)
	bash scripts/setup.sh serve

$(DEV) $(BENCH) $(DOCS): $(VENV)/.installed-%: $(SERVE)
	bash scripts/setup.sh $*

$(AXE):
	bash scripts/setup.sh axe

setup: $(SERVE) $(DEV) $(BENCH) $(DOCS) $(AXE)

run: $(SERVE)
	$(VENV)/bin/localbo serve

# a server with a study that a simulated lab runs in the background: watch it on the dashboard
demo: $(SERVE)
	$(VENV)/bin/localbo demo

# the documentation site from docs/ (MkDocs, Material): REST, configuration and results pages generated
docs: $(DOCS)
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --site-dir site

# the suite runs the benchmarks' smoke modes, builds the site and scans the dashboard with axe-core; on two
# processes (pytest-xdist), a test file to each, as its module fixtures (servers, a browser) expect: most of the
# suite waits on servers, workers and the browser, so two halve its wall time even on two cores
test: $(DEV) $(BENCH) $(DOCS) $(AXE)
	bash scripts/test_database.sh
	$(VENV)/bin/python -m pytest -n 2 --dist loadfile

# Schema fuzzing (schemathesis, every check) against a live server on SQLite with a token: bounded to
# a few minutes (examples per operation and a time budget); fails on any 5xx or schema violation.
fuzz: $(DEV)
	nice -n 10 $(VENV)/bin/python scripts/fuzz.py

# ruff; the layering contracts ([tool.importlinter] in pyproject.toml); mypy ([tool.mypy]) on the
# whole service and the client.
MYPY_PATHS := service/localbo client/localbo_client

lint: $(DEV)
	$(VENV)/bin/ruff check service client tests benchmarks migrations
	$(VENV)/bin/ruff format --check service client tests benchmarks migrations
	$(VENV)/bin/lint-imports
	$(VENV)/bin/mypy $(MYPY_PATHS)

bench: $(BENCH)
	$(VENV)/bin/python benchmarks/asktell_throughput.py
