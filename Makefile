# Set-up and entry points.  `make run` and `make test` work on a fresh
# machine: they create .venv, install the package with its test extra, and
# then do their job.
PYTHON ?= python3.11
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
EXAMPLE ?= examples/list_fold.relay
EXAMPLE_ARGS ?= --input "a=[1, 2, 3]" --input "b=[0.5, 0.25, 2]"

.PHONY: all install deps run lint test bench check clean fuzz

all: test

$(PY):
	$(PYTHON) -m venv $(VENV) || python3 -m venv $(VENV)

# setuptools reports every editable install with an "Editable installation"
# notice (information only: folders named like the package may shadow it);
# it is silenced here, real warnings still show.
$(STAMP): $(PY) pyproject.toml
	$(PY) -m pip install --quiet --upgrade pip
	PYTHONWARNINGS="ignore:Editable installation" \
	    $(PY) -m pip install --quiet -e ".[test,conformance,lint]"
	touch $(STAMP)

install: $(STAMP)

# System tools the tests need (gcc, clang, make, and the Cortex-M
# cross toolchain and QEMU for examples/embedded); installs only what is
# missing.
deps:
	bash scripts/install-ci-deps.sh --embedded

# The main job on a bundled example: type-check it and run it with the
# reference interpreter.
run: install
	$(VENV)/bin/aot check $(EXAMPLE)
	$(VENV)/bin/aot run $(EXAMPLE) $(EXAMPLE_ARGS) --backend interp

# ruff (pyflakes, pycodestyle, bugbear and a complexity cap) on the Python
# trees, mypy on the package; both configured in pyproject.toml.
lint: install
	$(PY) -m ruff check aot tests bench examples scripts
	$(PY) -m mypy aot

# pytest-xdist, one worker per core; work stealing keeps both cores busy to
# the end (the default hands out fixed chunks: 14.5 min against 8.9 min on
# two cores, the same tests).  Bytecode is written even where the
# environment says not to (PYTHONDONTWRITEBYTECODE, as some sandboxes set):
# otherwise each of the suite's hundreds of `aot` subprocesses compiles the
# package from source again (0.4 s of CPU each).
test: install deps lint
	PYTHONDONTWRITEBYTECODE= $(PY) -m pytest -n auto --dist worksteal

# Benchmarks (numbers, never pass/fail): the MLPerf Tiny models against
# onnxruntime (latency, memory, code and constant bytes, compile time), the
# same models in int8 against float32 (constants, arena, Cortex-M4
# instructions, agreement with onnxruntime's integer kernels), and compile
# time against program size and against weight size.  Each writes a JSON report.
bench: install deps
	$(PY) bench/onnx_models.py --repeats 3 --json bench/onnx_models.json
	$(PY) bench/quantized_models.py --json bench/quantized_models.json
	$(PY) bench/compile_time.py --json bench/compile_time.json
	$(PY) bench/compile_weights.py --json bench/compile_weights.json
	$(PY) bench/compile_weights.py --tuning simd --json bench/compile_weights_simd.json
	$(PY) bench/train_step.py --json bench/train_step.json

# Differential fuzzing (scripts/fuzz.py): N random programs (whole-language
# Relay, operator chains, ONNX graphs) through C and the interpreter (and
# onnxruntime), many per C build; failures are shrunk and saved under
# tests/fuzz_regressions/, which `make test` replays.
N ?= 1000
SEED ?= 1
fuzz: install
	$(PY) scripts/fuzz.py -n $(N) --seed $(SEED)

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache .hypothesis out

# The C backend's e2e tests again, built with AddressSanitizer and
# UndefinedBehaviorSanitizer (AOT_SANITIZE; see tests/e2e/test_sanitizers.py).
.PHONY: test-sanitize
test-sanitize: install deps
	$(PY) -m pytest tests/e2e/test_sanitizers.py
