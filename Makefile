# The two commands of the README are `make run` and `make test`; the rest serve them.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
LOCKED := $(VENV)/.locked

.PHONY: run test unit lint format lock audit bench chaos stack-start stack-stop clean python-check

# Every package at the version and hash the lock names (requirements-dev.txt: the runtime's
# requirements.txt plus the dev extra), then the project itself without its dependencies, so
# two installs a week apart run the same code. `make lock` writes both files.
LOCK := requirements.txt
DEV_LOCK := requirements-dev.txt
COMPILE := $(BIN)/uv pip compile pyproject.toml - --universal --python-version 3.11 --generate-hashes \
	--custom-compile-command "make lock" $(if $(UPGRADE),--upgrade)
# setuptools builds the project (--no-build-isolation) and pip installs it: both locked and hashed
# like the rest, so the installer is pinned too.
BUILD := setuptools>=69\npip>=25.3

# Before the virtualenv is made: a Python too old, or one without venv, would fail deep in pip.
python-check:
	@$(PYTHON) -c 'import sys, venv, ensurepip; sys.exit(sys.version_info < (3, 11))' 2>/dev/null || { \
		echo "make: Python >= 3.11 with venv is needed; $(PYTHON) is $$($(PYTHON) --version 2>/dev/null || echo "not found")" \
		"(Debian: apt-get install python3-venv; another Python: make PYTHON=python3.12 ...)" >&2; exit 2; }

# A fresh virtualenv holding exactly the lock's packages (nothing left from an earlier lock).
$(LOCKED): $(DEV_LOCK) | python-check
	rm -rf $(VENV)
	$(PYTHON) -m venv $(VENV)
	@# The installer first, at the lock's version and hash (a current pip takes the lock in half
	@# the time), then everything else.
	awk '/^pip==/ {p = 1} p {print; if ($$0 !~ /\\$$/) exit}' $(DEV_LOCK) > $(VENV)/pip-lock.txt
	$(BIN)/pip install --quiet --require-hashes --no-deps -r $(VENV)/pip-lock.txt
	$(BIN)/pip install --quiet --require-hashes --no-deps -r $(DEV_LOCK)
	touch $(LOCKED)

$(STAMP): $(LOCKED) pyproject.toml
	$(BIN)/pip install --quiet --no-deps --no-build-isolation -e .
	@$(BIN)/pip check || { echo "the lock does not hold what pyproject.toml asks for: run make lock" >&2; exit 1; }
	touch $(STAMP)

# Both locks from pyproject.toml, keeping today's pins where they still fit (UPGRADE=1: the
# newest versions allowed). The dev lock is constrained by the runtime lock, so the image and
# the tests run the same versions.
lock: $(LOCKED)
	printf "$(BUILD)\n" | $(COMPILE) -o $(LOCK)
	printf "$(BUILD)\n" | $(COMPILE) --extra dev -c $(LOCK) -o $(DEV_LOCK)

# Known vulnerabilities of every locked package, from PyPI's advisory data (its JSON API,
# pypi.org/pypi/<name>/<version>/json) through pip-audit. --strict: a package that could not
# be checked fails the audit instead of passing unseen.
audit: $(STAMP)
	@$(BIN)/pip-audit --strict --disable-pip --require-hashes --desc on -r $(LOCK) -r $(DEV_LOCK) \
	  || { echo "make audit: FAILED - a known vulnerability above, or a package PyPI gave no advisory data for" \
	       "(its JSON API unreachable?): nothing is reported clean that was not checked" >&2; exit 1; }

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
	$(BIN)/mypy jobpost schemas runtime sequencer producer_api consumers search_indexer webhooks

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
