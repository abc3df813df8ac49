# kproto: every target installs what it needs into .venv on first use.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.kproto-installed

.PHONY: install fetch-schema build-schema check-schema test test-fast demo bench bench-records bench-spark lint clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

$(STAMP): pyproject.toml setup.py src/kproto/_speedups.c | $(PY)
	$(PY) -m pip install --quiet -e '.[dev,spark,bench]'
	touch $@

install: $(STAMP)

## Copy Kafka's JSON definitions into schema/ (from ../shared/kafka-schema, else download), sha256-checked.
fetch-schema: $(STAMP)
	$(PY) -m codegen fetch

## fetch + generate src/kproto/{schema/,index.py,errors.py} + black. Running it twice changes nothing.
build-schema: $(STAMP)
	$(PY) -m codegen generate

## Exit non-zero if the committed generated code is stale.
check-schema: $(STAMP)
	$(PY) -m codegen check

## The test suite: property, golden, interop (kafka-python, librdkafka mock cluster), Spark.
test: $(STAMP)
	$(PY) -m pytest -n 2 -m "not spark" -p no:cacheprovider --hypothesis-seed=0
	$(PY) -m pytest -m spark -p no:cacheprovider --hypothesis-seed=0 || [ $$? -eq 5 ]

## The main job on an embedded broker (librdkafka's mock cluster), then the Spark pipeline.
demo: $(STAMP)
	$(PY) -m demo

## Serializer and record-batch benchmarks against kio, kafka-python and aiokafka.
bench: $(STAMP)
	$(PY) -m benchmarks

bench-spark: $(STAMP)
	$(PY) -m benchmarks.spark_bench

lint: $(STAMP)
	$(PY) -m ruff check src codegen tests benchmarks
	$(PY) -m black --check src codegen tests benchmarks
	$(PY) -m mypy

clean:
	rm -rf $(VENV) build dist src/*.egg-info .pytest_cache .mypy_cache .ruff_cache
