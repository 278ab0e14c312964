# Every target creates the local virtual environment on first use (and again when
# pyproject.toml changes), so a fresh machine needs only Python 3.11+ and make.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DEMO_ROOT ?= $(CURDIR)/.rollout-demo

.PHONY: demo test lint types unit schema bench torture clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --upgrade pip
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[dev]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/rollout --root $(DEMO_ROOT) demo

test: lint types unit

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks examples
	$(BIN)/ruff format --check src tests benchmarks examples

types: $(STAMP)
	$(BIN)/mypy

unit: $(STAMP)
	$(BIN)/pytest -n auto

# The benchmark's peers are installed on first use only: they are heavy and no test needs them.
BENCH_STAMP := $(VENV)/.installed-bench
BENCH_ARGS ?=

$(BENCH_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[dev,bench]'
	touch $(BENCH_STAMP)

bench: $(BENCH_STAMP)
	$(BIN)/python -m benchmarks.run $(BENCH_ARGS)

# The long mode of the fault campaigns (ADR 0050); e.g. make torture TORTURE_ARGS="--trials 500"
torture: $(STAMP)
	$(BIN)/python benchmarks/torture.py $(TORTURE_ARGS)

schema: $(STAMP)
	$(BIN)/python -c 'from pathlib import Path; from ledger.schema import write_golden_schema as w; print("wrote", w(Path(".")))'

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis $(DEMO_ROOT)
