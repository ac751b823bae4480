# Two entry points for a fresh machine:
#   make run    set up .venv and run the main job (nrirp hardware on this machine)
#   make test   set up .venv and run every check: ruff, mypy --strict, pytest (unit, property, e2e)
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp

.PHONY: setup run test lint typecheck unit e2e bench clean

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

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache .hypothesis
