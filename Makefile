# The two commands of the README are `make run` and `make test`; the rest serve them.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
LOCKED := $(VENV)/.locked

.PHONY: run test unit lint format reference lock audit sbom bench chaos stack-start stack-stop clean python-check

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

# The product, then its development tools beside it (dev/: `jobpost run`, `stack`, `doctor`,
# `chaos`, `sandbox`), both editable.
$(STAMP): $(LOCKED) pyproject.toml dev/pyproject.toml
	$(BIN)/pip install --quiet --no-deps --no-build-isolation -e .
	$(BIN)/pip install --quiet --no-deps --no-build-isolation -e dev
	@$(BIN)/pip check || { echo "the lock does not hold what pyproject.toml asks for: run make lock" >&2; exit 1; }
	touch $(STAMP)

# Both locks from pyproject.toml, keeping today's pins where they still fit (UPGRADE=1: the
# newest versions allowed). The dev lock is constrained by the runtime lock, so the image and
# the tests run the same versions.
lock: $(LOCKED)
	printf "$(BUILD)\n" | $(COMPILE) -o $(LOCK)
	printf "$(BUILD)\n" | $(COMPILE) --extra dev -c $(LOCK) -o $(DEV_LOCK)

# Known vulnerabilities of every locked package, through pip-audit, from PyPI's advisory data
# (its JSON API, pypi.org/pypi/<name>/<version>/json) or with AUDIT_SERVICE=osv from OSV
# (api.osv.dev, or AUDIT_OSV_URL: a mirror of its API). One locked package is asked first, as pip-audit will ask each: a source that
# does not answer (no network, a mirror that serves only the package index) is said so, exit
# 2, never reported as a pass or as a vulnerability. --strict: a package that could not be
# checked fails the audit (exit 1) instead of passing unseen.
AUDIT_SERVICE ?= pypi
AUDIT_OSV_URL ?= https://api.osv.dev/v1/query
PIP_LOCKED = $(shell awk -F'==| ' '/^pip==/ {print $$2; exit}' $(LOCK))
PROBE_pypi = https://pypi.org/pypi/pip/$(PIP_LOCKED)/json
PROBE_osv = $(AUDIT_OSV_URL)
QUERY_osv = {"package": {"name": "pip", "ecosystem": "PyPI"}, "version": "$(PIP_LOCKED)"}
ASK = import json, sys, urllib.request as r; \
	json.load(r.urlopen(r.Request(sys.argv[1], sys.argv[2].encode() or None, \
	{"Content-Type": "application/json"}), timeout=20))
audit: $(STAMP)
	@$(BIN)/python -c '$(ASK)' '$(PROBE_$(AUDIT_SERVICE))' '$(QUERY_$(AUDIT_SERVICE))' 2>/tmp/jobpost-audit-probe.$$$$ || { \
	  echo "make audit: NOT RUN - the advisory database ($(AUDIT_SERVICE)) did not answer for pip $(PIP_LOCKED):" \
	       "$$(tail -n 1 /tmp/jobpost-audit-probe.$$$$). Nothing was checked; run it where" \
	       "$(PROBE_$(AUDIT_SERVICE)) answers (AUDIT_SERVICE=pypi or osv)" >&2; \
	  rm -f /tmp/jobpost-audit-probe.$$$$; exit 2; }
	@rm -f /tmp/jobpost-audit-probe.$$$$
	@$(BIN)/pip-audit --strict --disable-pip --require-hashes --desc on --vulnerability-service $(AUDIT_SERVICE) \
	  $(if $(filter osv,$(AUDIT_SERVICE)),--osv-url $(AUDIT_OSV_URL)) -r $(LOCK) -r $(DEV_LOCK) \
	  || { echo "make audit: FAILED - a known vulnerability above, or a package $(AUDIT_SERVICE) had no" \
	       "advisory data for: nothing is reported clean that was not checked" >&2; exit 1; }

# A CycloneDX (JSON) bill of materials of the locked runtime packages, what the image installs:
# each with its version, purl and the lock's hashes, read from the lock alone (no network).
SBOM ?= dist/sbom.cdx.json
sbom: $(STAMP)
	@mkdir -p $(dir $(SBOM))
	@PYTHONWARNINGS=ignore::UserWarning $(BIN)/cyclonedx-py requirements $(LOCK) --pyproject pyproject.toml \
	  --mc-type application --output-reproducible --of JSON -o $(SBOM)
	@echo "$(SBOM): CycloneDX $$($(BIN)/python -c 'import json, sys; d = json.load(open(sys.argv[1])); \
	  print(d["specVersion"], "-", len(d["components"]), "packages of $(LOCK)")' $(SBOM))"

run: $(STAMP)
	$(BIN)/jobpost run

# First what the suite needs (chromium is installed when missing; what cannot be obtained is
# named before any test runs), then the servers, then the suite.
test: $(STAMP)
	$(BIN)/jobpost doctor --obtain
	$(BIN)/jobpost stack fetch
	$(BIN)/jobpost stack fetch --only registry  # the schema registry tests' Apicurio (~158 MB once)
	$(BIN)/python -m tests.suite

unit: $(STAMP)
	$(BIN)/pytest tests/unit -m "not build"

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy jobpost schemas runtime listing sequencer producer_api consumers search_indexer webhooks dev/jobpost_dev

format: $(STAMP)
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

# The configuration reference, written from the settings classes (a unit test fails when the
# file in docs/ is not what this writes).
reference: $(STAMP)
	$(BIN)/jobpost config reference --output docs/configuration/reference.md

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
