# Two entry points for a fresh machine:
#   make run    set up .venv and run the main job (nrirp hardware on this machine)
#   make test   set up .venv and run every check: ruff, mypy --strict, pytest (unit, property, e2e)
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp

.PHONY: setup run test lint typecheck unit e2e bench image clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev]'
	touch $(STAMP)

setup: $(STAMP)

run: $(STAMP)
	$(BIN)/nrirp hardware

lint: $(STAMP)
	$(BIN)/ruff check src tests bench tools examples
	$(BIN)/ruff format --check src tests bench tools examples

typecheck: $(STAMP)
	$(BIN)/mypy

unit: $(STAMP)
	$(BIN)/pytest -m "not e2e"

e2e: $(STAMP)
	$(BIN)/pytest -m e2e

test: lint typecheck
	$(BIN)/pytest

# the container image (docs/deploy.md): Debian base by mmdebstrap + our wheel, OCI archive by
# umoci, no registry pull; reproducible (SOURCE_DATE_EPOCH: the last commit's time by default)
image: $(STAMP)
	$(BIN)/python -m tools.image.build --output build/nrirp-image.tar

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache .hypothesis
