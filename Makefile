# The front door: `make up` runs the whole system, `make test` runs every test.
SHELL := /bin/bash
.DEFAULT_GOAL := help
PY := .venv/bin/python
PYTEST := .venv/bin/pytest

.PHONY: help up down status logs venv env infra infra-down infra-status migrate migrate-test topics \
        lint test test-suite test-unit test-readme test-deploy images compose-up compose-down helm-lint chart-files \
        bench bench-tools bench-outbox bench-holds bench-vouchers bench-body-limit bench-boundary bench-telemetry bench-tracing bench-selloff \
        bench-limits bench-report limit-tools demo docs i18n token contract-tools \
        bench-seatmap bench-overload bench-checkout browser bench-queue bench-checkins bench-wave bench-sweeper bench-best cluster-up cluster-down cluster-status test-cluster bench-cluster bench-pg-path bench-granted bench-sustained \
        version idp-up idp-down test-idp

help: ## list the targets
	@grep -hE '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-16s %s\n", $$1, $$2}'

up: venv infra migrate topics ## install and start everything (infra, migrations, topics, every service)
	@deploy/local/apps.sh up

down: ## stop the services and wait until they have stopped (infra keeps running; see infra-down)
	@deploy/local/apps.sh down

status: ## what runs where
	@deploy/local/infra.sh status; deploy/local/apps.sh status

logs: ## follow the services' logs (make logs P=hold-api for one)
	@deploy/local/apps.sh logs $(P)

venv: ## the Python toolchain (uv, .venv from uv.lock)
	@deploy/local/bootstrap.sh

env: ## write .env with fresh secrets if absent
	@deploy/local/write_env.sh

infra: venv env ## PostgreSQL, Redis and Kafka, installed if missing, started if stopped
	@deploy/local/infra.sh up

infra-down: ## stop PostgreSQL, Redis and Kafka
	@deploy/local/infra.sh down

infra-status: ## whether PostgreSQL, Redis and Kafka run and answer
	@deploy/local/infra.sh status

migrate: ## apply every service's migrations to the dev database
	@deploy/local/migrate.sh

migrate-test: ## recreate the test database (TICKETING_TEST_DATABASE, default ticketing_test) from the migrations (--fresh)
	@deploy/local/migrate.sh --fresh $(or $(TICKETING_TEST_DATABASE),ticketing_test)

topics: ## create the Kafka topics (idempotent)
	@.venv/bin/ticketing topics

version: ## the release's version (VERSION), checked against the packages, uv.lock, the chart and the CHANGELOG (SET=x.y.z writes it)
	@python3 deploy/release/version.py $(if $(SET),set $(SET))

browser: ## Debian's chromium and chromium-driver for the page tests (apt, installed if missing)
	@deploy/local/browser.sh

token: ## print a dev JWT (make token SUB=7 ROLE=customer)
	@.venv/bin/ticketing token --sub $(or $(SUB),7) --role $(or $(ROLE),customer)

lint: venv ## ruff, mypy (strict) and the import-linter architecture contracts
	.venv/bin/ruff check .
	.venv/bin/mypy shared/src services/*/src testing/src
	.venv/bin/lint-imports

# The deployment tests (images, compose, chart) run in the background beside lint, the README's path and the
# main suite; `make test` fails if any fails. The README's path runs before the suite, not beside it: it is
# `make up`'s own stack (the real consumer groups on the shared topics, the dev database), and the topics are
# young then, so its consumers have little history to read.
test: infra topics migrate-test contract-tools browser ## infra (idempotent) + lint + the README's path + every test against real Kafka, Postgres, Redis
	@deploy/tests/background.sh start
	@rc=0; $(MAKE) --no-print-directory lint || rc=1; \
	  if [ $$rc = 0 ]; then $(MAKE) --no-print-directory test-readme || rc=1; \
	    $(MAKE) --no-print-directory test-suite || rc=1; fi; \
	  deploy/tests/background.sh wait || rc=1; exit $$rc

# The main suite in two phases. First every test but the serial ones, in TEST_WORKERS processes (pytest-xdist),
# each worker on a copy of the test database of its own, made from it as the workers start; then the serial
# tests alone (they restart Redis, Kafka or PostgreSQL under everyone, or read what the whole run published).
# Both phases run to the end; the run fails if either does. The parallel phase ends with its 15 slowest tests
# (docs/testing.md, "What make test costs the machine").
TEST_WORKERS ?= 2
test-suite: ## the main suite alone (after make migrate-test): in parallel, then the serial tests
	@export TICKETING_RUN_STARTED_AT=$$(date +%s); rc=0; \
	  $(PYTEST) -p no:cacheprovider -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder --durations=15 -m "not serial and not idp" \
	    || rc=1; \
	  $(PYTEST) -p no:cacheprovider -m "serial and not idp" || rc=1; exit $$rc

test-readme: ## the README's path: make up, make down and up at once, make demo (small), make down
	@deploy/tests/readme_path.sh

cluster-up: venv env ## cluster mode: 3 Kafka brokers, a Redis Cluster, Patroni (3 PostgreSQL nodes), every API and worker twice
	@deploy/local/cluster.sh up

cluster-down: ## stop cluster mode (its data stays; deploy/local/cluster.sh clean removes it)
	@deploy/local/cluster.sh down

cluster-status: ## what cluster mode runs where
	@deploy/local/cluster.sh status

idp-up: ## a Keycloak for dev and the sign-in tests on :8180 (fetched from Maven Central; realm deploy/local/idp/)
	@deploy/local/idp.sh up

idp-down: ## stop that Keycloak
	@deploy/local/idp.sh down

test-idp: infra migrate-test browser ## the sign-in tests alone (pytest -m idp): Keycloak up, the browser journeys, Keycloak down
	@deploy/local/idp.sh up && rc=0; $(PYTEST) -p no:cacheprovider -q -m idp tests/e2e/browser/test_sign_in.py || rc=1; \
	  deploy/local/idp.sh down; exit $$rc

test-cluster: infra ## the cluster fault run alone (R16, R20): cluster up on ports of its own, journeys and faults, checker, down
	$(PYTEST) -p no:cacheprovider --timeout 1500 -q -s deploy/tests/test_cluster_faults.py

test-deploy: infra ## the deployment tests alone: images, compose smoke journey, chart checks and runs, cluster faults
	@deploy/tests/background.sh start >/dev/null && deploy/tests/background.sh wait

images: venv ## container images from Debian packages with podman (app, app-dev, postgres, redis, kafka)
	@deploy/images/build.sh

compose-up: images env ## the whole platform in containers (podman-compose here, docker compose elsewhere)
	@deploy/compose/stack.sh up

compose-down: ## stop the compose stack and remove its containers, network and volumes
	@deploy/compose/stack.sh down

helm-lint: ## helm lint --strict with the default (and a kept JWT Secret), every optional part on, the external-infrastructure, cluster-mode and HA PostgreSQL values
	@.venv/bin/python deploy/helm/chart_files.py --check
	@H=$$(deploy/helm/tools.sh helm) && $$H lint --strict deploy/helm/ticketing --set jwt.existingSecret=ticketing-jwt --set contacts.existingSecret=ticketing-contacts \
	  && $$H lint --strict deploy/helm/ticketing --set jwt.existingSecret=ticketing-jwt --set contacts.existingSecret=ticketing-contacts --set networkPolicy.enabled=true \
	     --set monitoring.podMonitor.enabled=true --set monitoring.prometheusRule.enabled=true \
	     --set monitoring.grafanaDashboard.enabled=true --set image.digest=sha256:$$(printf %064d 0) \
	     --set database.maxConnections=2000 \
	  && $$H lint --strict deploy/helm/ticketing -f deploy/helm/ticketing/values-external.yaml \
	  && $$H lint --strict deploy/helm/ticketing -f deploy/helm/ticketing/values-external.yaml \
	     -f deploy/helm/ticketing/values-cluster.yaml \
	  && $$H lint --strict deploy/helm/ticketing -f deploy/helm/ticketing/values-external.yaml \
	     -f deploy/helm/ticketing/values-cluster.yaml -f deploy/helm/ticketing/values-ha-postgres.yaml

test-unit: venv ## fast tests only (no infrastructure)
	$(PYTEST) -m "not integration and not e2e and not reliability" -q

chart-files: venv ## the chart's copies of deploy/observability (alert rules scoped per release, the dashboard)
	@.venv/bin/python deploy/helm/chart_files.py

contract-tools: ## kcat, promtool (Debian), the AsyncAPI 3.0 JSON Schema (npm @asyncapi/specs) and stripe-mock (Go), for the contract tests
	@command -v kcat >/dev/null && command -v promtool >/dev/null || { apt-get update -q && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends kcat prometheus; }
	@deploy/local/asyncapi_schema.sh
	@deploy/local/stripe_mock.sh

NOTIFIER_LOCALE := services/notifier/src/notifier/locale
PAGES_LOCALE := services/hold-service/src/hold_service/entrypoints/api/pages/locale
i18n: venv ## the notifier's and the pages' message catalogues: extract the texts of the code, merge them into each language's .po
	.venv/bin/pybabel extract --no-location --omit-header --sort-output -o $(NOTIFIER_LOCALE)/notifier.pot services/notifier/src/notifier
	.venv/bin/pybabel update --no-fuzzy-matching -w 120 -D notifier \
	  -i $(NOTIFIER_LOCALE)/notifier.pot -d $(NOTIFIER_LOCALE)
	.venv/bin/pybabel extract --no-location --omit-header --sort-output -w 120 -F $(PAGES_LOCALE)/babel.cfg \
	  -o $(PAGES_LOCALE)/pages.pot $(PAGES_LOCALE)/..
	.venv/bin/pybabel update --no-fuzzy-matching -w 120 -D pages -i $(PAGES_LOCALE)/pages.pot -d $(PAGES_LOCALE)

docs: venv ## regenerate docs/api/*.openapi.json and docs/configuration.md from the code (tests/docs checks them)
	$(PY) docs/generate.py

demo: venv ## a flash sale with a live dashboard and a checked table (after make up; ARGS='--help' for flags)
	$(PY) -m tests.demo $(ARGS)

# Every benchmark, each printing its figures and writing them to var/bench/<name>.json; then the report
# (var/bench/report.json, report.md, plots) sets each beside the machine's limits measured in the same run.
bench: ## every benchmark and the report against the physical limits (var/bench/; not pass/fail)
	@rm -f var/bench/*.json
	@$(MAKE) --no-print-directory bench-limits bench-outbox bench-holds bench-vouchers bench-body-limit bench-boundary bench-telemetry \
	  bench-tracing bench-selloff bench-seatmap bench-queue bench-checkins bench-wave bench-sweeper bench-cluster bench-overload \
	  bench-granted bench-sustained
	@$(MAKE) --no-print-directory bench-report

bench-outbox: infra topics migrate-test ## relay throughput and commit-to-consume latency
	$(PY) tests/bench/bench_outbox.py

bench-tools: ## wrk (Debian), the closed-loop HTTP load generator the benchmarks use for capacity
	@command -v wrk >/dev/null || { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q wrk; }

bench-holds: infra topics migrate-test bench-tools ## hold throughput and latency, gate on/off, against a bare endpoint
	$(PY) tests/bench/bench_holds.py

bench-cluster: infra migrate-test bench-tools ## holds/s through HAProxy to one and two API instances, beside direct and bare
	@deploy/local/cluster.sh tools
	$(PY) tests/bench/bench_cluster.py

bench-pg-path: infra migrate-test bench-tools ## holds/s on one PostgreSQL, a Patroni primary direct and via HAProxy, statement cache off
	@deploy/local/cluster.sh tools
	$(PY) tests/bench/bench_pg_path.py

bench-granted: infra migrate-test bench-tools limit-tools ## granted holds/s of the service beside pgbench replaying one hold's statements (alone, and batched as the service ran them) and a bare UPDATE; DB and API CPU per hold, the API's floor
	$(PY) tests/bench/bench_granted.py

# A test database of its own (recreated from the migrations): the whole stack's consumers and relays run on it.
SUSTAINED_DB := $(or $(TICKETING_TEST_DATABASE),ticketing_bench_sustained)
bench-sustained: infra topics ## granted holds/s with every consumer caught up, CPU per hold: request path and deferred work
	@deploy/local/migrate.sh --fresh $(SUSTAINED_DB)
	TICKETING_TEST_DATABASE=$(SUSTAINED_DB) $(PY) tests/bench/bench_sustained.py

bench-overload: infra migrate-test bench-tools ## L4: holds offered 0.5x-4x their capacity, shedding on, signed callbacks beside the 4x
	$(PY) tests/bench/bench_overload.py

bench-checkout: infra migrate-test ## a checkout inside payment-service, p50/p99: the Stripe SDK in a thread (shipped), async, plain httpx
	$(PY) tests/bench/bench_checkout.py

bench-vouchers: infra topics migrate-test bench-tools ## voucher reserve throughput and p99, normal vs flash mode
	$(PY) tests/bench/bench_vouchers.py

bench-body-limit: venv ## CPU per request of the MAX_BODY_BYTES guard, hot and routed POST, in-process
	$(PY) tests/bench/bench_body_limit.py

bench-boundary: venv ## CPU per request of the Boundary (MAX_HEADER_BYTES, nosniff), in-process
	$(PY) tests/bench/bench_boundary.py

bench-telemetry: venv ## CPU per request of RequestTelemetry (RED metrics, request id, access log), in-process
	$(PY) tests/bench/bench_telemetry.py

bench-tracing: venv ## CPU per request of OpenTelemetry tracing (off, on, OTLP to a local sink, 1 % sampled), in-process
	$(PY) tests/bench/bench_tracing.py

bench-wave: infra migrate-test ## a wave of holds' batch statement (take_seats), custom vs generic plan
	$(PY) tests/bench/bench_wave.py

bench-best: infra migrate-test ## best-available holds beside picked holds on one showtime: holds granted/s and 409s per granted hold
	$(PY) tests/bench/bench_best.py

bench-sweeper: infra migrate-test ## expired holds ended per second after a burst of 10,000, one sweeper and two at once; the backlog over time
	$(PY) tests/bench/bench_sweeper.py

bench-selloff: infra topics migrate-test ## L3: showtimes of 300 seats sold out under open-loop customers (default TTL)
	$(PY) tests/bench/bench_selloff.py

bench-limits: infra migrate-test bench-tools limit-tools ## the machine's limits: bare endpoint, redis-benchmark, pgbench, Kafka producer
	$(PY) tests/bench/bench_limits.py

bench-report: venv ## var/bench/report.json, report.md and plots from the figures of the last make bench
	$(PY) tests/bench/report.py

limit-tools: ## redis-benchmark (redis-tools) and pgbench (Debian ships it in postgresql-15, which make infra installs)
	@command -v redis-benchmark >/dev/null && command -v pgbench >/dev/null || { apt-get update -q && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -q redis-tools postgresql; }

bench-seatmap: infra topics migrate-test bench-tools ## seat map GET (full body, 304) vs bare endpoints; stream fan-out per process
	$(PY) tests/bench/bench_seatmap.py

bench-queue: infra migrate-test bench-tools ## waiting room: joins/s and polls/s against bare endpoints, opening to first N admitted
	$(PY) tests/bench/bench_queue.py

bench-checkins: infra migrate-test bench-tools ## the door: check-ins/s (first, repeated, offline batches) against a bare endpoint
	$(PY) tests/bench/bench_checkins.py
