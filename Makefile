# The two commands of the README are `make run` and `make test`; the rest serve them.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test unit lint format bench chaos stack-start stack-stop clean python-check

# Before the virtualenv is made: a Python too old, or one without venv, would fail deep in pip.
python-check:
	@$(PYTHON) -c 'import sys, venv, ensurepip; sys.exit(sys.version_info < (3, 11))' 2>/dev/null || { \
		echo "make: Python >= 3.11 with venv is needed; $(PYTHON) is $$($(PYTHON) --version 2>/dev/null || echo "not found")" \
		"(Debian: apt-get install python3-venv; another Python: make PYTHON=python3.12 ...)" >&2; exit 2; }

$(STAMP): pyproject.toml | python-check
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/jobpost run

# First what the suite needs (chromium is installed when missing; what cannot be obtained is
# named before any test runs), then the servers, then the suite.
test: $(STAMP)
	$(BIN)/jobpost doctor --obtain
	$(BIN)/jobpost stack fetch
	$(BIN)/jobpost stack fetch --only registry  # the schema registry tests' Apicurio (~158 MB once)
	$(BIN)/pytest

unit: $(STAMP)
	$(BIN)/pytest -m "not integration and not e2e"

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy jobpost schemas runtime sequencer producer_api consumers search_indexer

format: $(STAMP)
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

bench: $(STAMP)
	$(BIN)/python -m bench

# Three brokers, two replicas of everything, faults one after another (about 8 minutes).
chaos: $(STAMP)
	$(BIN)/jobpost stack fetch
	$(BIN)/jobpost chaos

stack-start: $(STAMP)
	$(BIN)/jobpost stack start

stack-stop: $(STAMP)
	$(BIN)/jobpost stack stop

clean:
	-$(BIN)/jobpost stack stop
	rm -rf $(VENV) .stack
