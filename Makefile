# kproto: every target installs what it needs into .venv on first use.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.kproto-installed

.PHONY: install fetch-schema build-schema check-schema test test-pure test-docs test-plain-install test-fast demo bench bench-records bench-avro bench-spark bench-broker bench-broker-fairness lint docs docs-serve clean asan fuzz

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

$(STAMP): pyproject.toml setup.py src/kproto/_speedups.c src/kproto/_entity_reader.c src/kproto/_avro.c \
    src/kproto/_entity_writer.c src/kproto/_entity_desc.h src/kproto/_entity_out.h \
    src/kproto/_entity_wrapper.h src/kproto/_arrow_columns.h src/kproto/_record_sequence.h | $(PY)
	$(PY) -m pip install --quiet -e '.[dev,spark,bench,speed,docs]'
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

## The test suite: property, golden, interop (kafka-python, librdkafka mock cluster), Spark;
## then test-pure and test-docs. (tests/records runs every test on both record-loop paths itself.)
test: $(STAMP)
	$(PY) -c "import kproto.speedups as s; print('kproto C extension:', s.reason())"
	$(PY) -m pytest -n 2 -m "not spark" -p no:cacheprovider --hypothesis-seed=0
	$(PY) -m pytest -m spark -p no:cacheprovider --hypothesis-seed=0 || [ $$? -eq 5 ]
	$(MAKE) test-pure
	$(MAKE) test-docs

## Every python code block of README.md and docs/ (Sybil, conftest.py), in page order (one
## process: a page's blocks share a namespace); then the pages with Spark blocks, with Spark.
test-docs: $(STAMP)
	$(PY) -m pytest -n 0 -p no:cacheprovider -q README.md docs
	KPROTO_DOCS_SPARK=1 $(PY) -m pytest -n 0 -p no:cacheprovider -q README.md docs

## The documentation site, built strictly (any warning fails: broken links and anchors too).
docs: $(STAMP)
	$(VENV)/bin/mkdocs build --strict

## The site on http://127.0.0.1:8000, rebuilt on change.
docs-serve: $(STAMP)
	$(VENV)/bin/mkdocs serve --dev-addr 127.0.0.1:8000

## The whole suite but Spark again, with the C extension switched off at import.
test-pure: $(STAMP)
	KPROTO_NO_EXTENSIONS=1 $(PY) -m pytest -n 2 -m "not spark" -p no:cacheprovider \
	  --hypothesis-seed=0

## The CLI on a plain install: a fresh .venv-plain with `pip install .` (no extras), its
## `python -m kproto` smoke-tested by tests/cli/test_plain_install.py run from .venv.
PLAIN := .venv-plain
test-plain-install: $(STAMP)
	rm -rf $(PLAIN) && $(PYTHON) -m venv $(PLAIN)
	$(PLAIN)/bin/python -m pip install --quiet .
	KPROTO_PLAIN_PYTHON=$(abspath $(PLAIN))/bin/python $(PY) -m pytest -n 0 \
	  -p no:cacheprovider -q tests/cli/test_plain_install.py

## Rebuild the C extension with AddressSanitizer + UBSan, run the records and serial suites
## and a long fuzz pass under it, then rebuild it normally. Not run by CI (slow; gcc/clang).
ASAN_LIB = $(shell $${CC:-cc} -print-file-name=libasan.so)
asan: $(STAMP)
	CFLAGS="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer -g -O1" \
	  LDFLAGS="-fsanitize=address,undefined" $(PY) setup.py -q build_ext --inplace --force
	LD_PRELOAD=$(ASAN_LIB) ASAN_OPTIONS=detect_leaks=0 KPROTO_FUZZ_CASES=20000 \
	  $(PY) -m pytest -p no:cacheprovider --hypothesis-seed=0 tests/records tests/serial tests/avro; \
	  rc=$$?; $(PY) setup.py -q build_ext --inplace --force; exit $$rc

## A long mutation-fuzz pass of the C record loops against the Python ones (~1 minute).
fuzz: $(STAMP)
	KPROTO_FUZZ_CASES=300000 $(PY) -m pytest -p no:cacheprovider -q \
	  tests/records/test_records_native.py -k fuzz
	KPROTO_FUZZ_CASES=100000 $(PY) -m pytest -p no:cacheprovider -q \
	  tests/avro/test_avro_native.py -k fuzz

## The main job on an embedded broker (librdkafka's mock cluster), then the Spark pipeline.
demo: $(STAMP)
	$(PY) -m demo

## Serializer and record-batch benchmarks against kio, kafka-python and aiokafka.
bench: $(STAMP)
	$(PY) -m benchmarks

## Avro -> Arrow on one core: kproto C and Python against fastavro and confluent-kafka.
bench-avro: $(STAMP)
	$(PY) -m benchmarks.avro_bench

## Registry-backed deserializers (Avro, JSON Schema, Protobuf) beside confluent-kafka's on
## the same bytes, the Avro -> Arrow decoder, then the registry's own benchmark.
.PHONY: bench-serde
bench-serde: $(STAMP)
	$(PY) -m benchmarks.serde_bench
	$(PY) -m benchmarks.avro_bench
	@if [ -f benchmarks/registry_bench.py ]; then $(PY) -m benchmarks.registry_bench; fi

bench-spark: $(STAMP)
	$(PY) -m benchmarks.spark_bench
	$(PY) -m benchmarks.spark_live_bench
	$(PY) -m benchmarks.spark_avro_bench

## kproto's broker vs librdkafka's mock cluster: confluent-kafka produce and consume, peak RSS.
bench-broker: $(STAMP)
	$(PY) -m benchmarks.broker_bench
	$(PY) -m benchmarks.broker_fetch_bench
	$(PY) -m benchmarks.broker_request_bench

## The good confluent-kafka pair beside each hostile client of issue 17.
bench-broker-fairness: $(STAMP)
	$(PY) -m benchmarks.broker_fairness_bench

## ruff, black, mypy, and the layering contracts in pyproject.toml (import-linter).
lint: $(STAMP)
	$(PY) -m ruff check src codegen tests benchmarks
	$(PY) -m black --check src codegen tests benchmarks
	$(PY) -m mypy
	$(VENV)/bin/lint-imports

clean:
	rm -rf $(VENV) $(PLAIN) build dist site src/*.egg-info .pytest_cache .mypy_cache .ruff_cache .import_linter_cache
