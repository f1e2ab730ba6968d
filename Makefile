# The two commands of a newcomer: `make run` (set up, then serve on SQLite) and `make test`.
VENV := .venv
STAMP := $(VENV)/.installed

.PHONY: setup run demo test lint docs bench fuzz

$(STAMP): pyproject.toml client/pyproject.toml scripts/setup.sh
	bash scripts/setup.sh

setup: $(STAMP)

run: $(STAMP)
	$(VENV)/bin/localbo serve

# a server with a study that a simulated lab runs in the background: watch it on the dashboard
demo: $(STAMP)
	$(VENV)/bin/localbo demo

# the documentation site from docs/ (MkDocs, Material): REST, configuration and results pages generated
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --site-dir site

test: $(STAMP)
	bash scripts/test_database.sh
	$(VENV)/bin/python -m pytest

# Schema fuzzing (schemathesis, every check) against a live server on SQLite with a token: bounded to
# a few minutes (examples per operation and a time budget); fails on any 5xx or schema violation.
fuzz: $(STAMP)
	nice -n 10 $(VENV)/bin/python scripts/fuzz.py

# ruff; the layering contracts ([tool.importlinter] in pyproject.toml); mypy ([tool.mypy]) on the
# whole service and the client.
MYPY_PATHS := service/localbo client/localbo_client

lint: $(STAMP)
	$(VENV)/bin/ruff check service client tests benchmarks migrations
	$(VENV)/bin/lint-imports
	$(VENV)/bin/mypy $(MYPY_PATHS)

bench: $(STAMP)
	$(VENV)/bin/python benchmarks/asktell_throughput.py
