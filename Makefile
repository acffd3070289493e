# The two commands of the README are `make run` and `make test`; the rest serve them.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test unit lint format bench chaos stack-start stack-stop clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/jobpost run

test: $(STAMP)
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
