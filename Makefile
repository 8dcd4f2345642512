# Entry points, all from a fresh clone with only Python >= 3.10, pip and make:
#   make demo   set up .venv and run the main job: check the shipped sample model, explain a spec example
#   make test   set up .venv with the development group (pyproject.toml [dependency-groups] dev) and run
#               lint, types and the test suite; the large test tables run as pairwise covering designs
#               (tests/covering.py)
#   make test-full  the rest of those tables and the exhaustive runs at full scale (pytest -m full);
#               make test, then make test-full, run every test
# and two development tools (benchmarks/ and tools/ of this repository, not part of the installed package):
#   make bench  time the engine against NumPy, PyTorch, ONNX Runtime and OpenVINO (python -m benchmarks.bench);
#               options in ARGS, e.g. make bench ARGS=--quick, make bench ARGS="--json r.json --plot r"
#               (r.png and r.svg); docs/benchmarks.md is then generated from the JSON:
#               python -m benchmarks.report r.json --plot docs/bench/throughput
#   make tour   every worked example of the spec texts, explained and evaluated (python -m tools.tour);
#               make tour ARGS=--brief for one line per example
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# the stamp of the development install (below); defined here, before the rules that name it
TEST_STAMP := $(VENV)/.installed-test

.PHONY: demo test test-full bench tour lint venv clean kernels

$(BIN)/python:
	$(PYTHON) -m venv $(VENV) || ( $(PYTHON) -m pip install --user -q virtualenv && $(PYTHON) -m virtualenv $(VENV) )

venv: $(BIN)/python

# Each step says what it shows. Two of them exit 1 on purpose: the demo checks that they do (0
# would be the failure there), so `make demo` itself succeeds only when every step behaves.
demo: $(BIN)/python
	@echo '== installing bcast with the onnx extra (pip install -e ".[onnx]") into $(VENV)'
	@$(BIN)/python -m pip install -q -e ".[onnx]"
	@echo
	@echo '== 1. bcast check --sample: the sample ONNX model shipped with bcast has a DELIBERATE broadcasting bug'
	@echo '==    (an Add of [4,16,8,8] and [16,8]) and two symbolic constraints; check reports them and exits 1, as it should'
	@$(BIN)/bcast check --sample; status=$$?; test $$status -eq 1 || { echo "demo: expected exit status 1 from check, got $$status"; exit 1; }
	@echo
	@echo '== 2. bcast explain: a worked example of the OpenVINO Broadcast-1 text (explicit mode), which broadcasts; exits 0'
	@$(BIN)/bcast explain "[16]" --to "[1,16,50,50]" --mode explicit --axes-mapping 1
	@echo
	@echo '== 3. bcast explain on two shapes that do NOT broadcast ([2,3] and [4,3,3]): it explains the clash and exits 1, on purpose'
	@$(BIN)/bcast explain "[2,3]" "[4,3,3]"; status=$$?; test $$status -eq 1 || { echo "demo: expected exit status 1 from explain, got $$status"; exit 1; }
	@echo
	@echo '== demo done: every step gave the exit status it should'

bench: $(TEST_STAMP)
	$(BIN)/python -m benchmarks.bench $(ARGS)

tour: $(BIN)/python
	$(BIN)/python -m pip install -q -e .
	$(BIN)/python -m tools.tour $(ARGS)

# rebuild the compiled kernels (csrc/) in place after editing them; `make test` and `make demo` build them too
kernels: $(BIN)/python
	$(BIN)/python -m pip install -q -e .

lint: $(BIN)/python
	$(BIN)/ruff check src tests benchmarks tools conftest.py
	$(BIN)/ruff format --check src tests benchmarks tools conftest.py
	$(BIN)/mypy src

# the development group and the compiled kernels, installed again only when what they are built from
# changes (an install that has nothing to do still rebuilds the kernels: half a minute). Dependency
# groups (PEP 735, `--group`) need pip >= 25.1, hence pip is upgraded inside the venv first.
$(TEST_STAMP): $(BIN)/python pyproject.toml CMakeLists.txt $(wildcard csrc/*)
	$(BIN)/python -m pip install -q -U "pip>=25.1"
	$(BIN)/python -m pip install -q -e . --group dev
	@touch $@

test: $(TEST_STAMP)
	$(MAKE) --no-print-directory lint
	$(BIN)/python -m pytest

# the tests marked full, which `make test` deselects (pyproject.toml: -m 'not full')
test-full: $(TEST_STAMP)
	$(BIN)/python -m pytest -m full

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis build dist CMakeFiles CMakeCache.txt CMakeInit.txt build.ninja cmake_install.cmake .ninja_deps .ninja_log .cmake .skbuild-info.json src/bcast/engines/numpy/_kernels*.so src/bcast/onnx/_wire*.so src/bcast/graph/_walk*.so src/bcast/check/_rows*.so
