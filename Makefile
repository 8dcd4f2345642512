# Two entry points, both from a fresh clone with only Python >= 3.10, pip and make:
#   make demo   set up .venv and run the main job: check the shipped sample model, explain a spec example
#   make test   set up .venv with the test extras and run lint, types and the test suite
# and two development tools (benchmarks/ and tools/ of this repository, not part of the installed package):
#   make bench  time the engine against NumPy, PyTorch, ONNX Runtime and OpenVINO (python -m benchmarks.bench);
#               options in ARGS, e.g. make bench ARGS=--quick, make bench ARGS="--json r.json --plot r.svg"
#   make tour   every worked example of the spec texts, explained and evaluated (python -m tools.tour);
#               make tour ARGS=--brief for one line per example
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: demo test bench tour lint venv clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV) || ( $(PYTHON) -m pip install --user -q virtualenv && $(PYTHON) -m virtualenv $(VENV) )

venv: $(BIN)/python

demo: $(BIN)/python
	$(BIN)/python -m pip install -q -e ".[onnx]"
	@# the sample model has a deliberate bug: check exits 1 when it finds problems (0 would be wrong)
	$(BIN)/bcast check --sample; test $$? -eq 1
	$(BIN)/bcast explain "[16]" "[1,16,50,50]" --mode explicit --axes-mapping 1
	$(BIN)/bcast explain "[2,3]" "[4,3,3]"; test $$? -eq 1

bench: $(BIN)/python
	$(BIN)/python -m pip install -q -e ".[test]"
	$(BIN)/python -m benchmarks.bench $(ARGS)

tour: $(BIN)/python
	$(BIN)/python -m pip install -q -e .
	$(BIN)/python -m tools.tour $(ARGS)

lint: $(BIN)/python
	$(BIN)/ruff check src tests benchmarks tools conftest.py
	$(BIN)/ruff format --check src tests benchmarks tools conftest.py
	$(BIN)/mypy src

test: $(BIN)/python
	$(BIN)/python -m pip install -q -e ".[test]"
	$(MAKE) --no-print-directory lint
	$(BIN)/python -m pytest

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis build dist
