# The front door: `make up` runs the whole system, `make test` runs every test.
SHELL := /bin/bash
.DEFAULT_GOAL := help
PY := .venv/bin/python
PYTEST := .venv/bin/pytest

.PHONY: help up down status logs venv env infra infra-down infra-status migrate migrate-test topics \
        lint test test-unit bench bench-tools bench-outbox bench-holds bench-vouchers bench-body-limit token

help: ## list the targets
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-16s %s\n", $$1, $$2}'

up: venv infra migrate topics ## install and start everything (infra, migrations, topics, every service)
	@deploy/local/apps.sh up

down: ## stop the services (infra keeps running; see infra-down)
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

infra-status:
	@deploy/local/infra.sh status

migrate: ## apply every service's migrations to the dev database
	@deploy/local/migrate.sh

migrate-test:
	@deploy/local/migrate.sh ticketing_test

topics: ## create the Kafka topics (idempotent)
	@.venv/bin/ticketing topics

token: ## print a dev JWT (make token SUB=7 ROLE=customer)
	@.venv/bin/ticketing token --sub $(or $(SUB),7) --role $(or $(ROLE),customer)

lint: venv ## ruff, mypy (strict) and the import-linter architecture contracts
	.venv/bin/ruff check .
	.venv/bin/mypy shared/src services/*/src
	.venv/bin/lint-imports

test: infra topics migrate-test lint ## infra (idempotent) + lint + every test against real Kafka, Postgres, Redis
	$(PYTEST) -p no:cacheprovider

test-unit: venv ## fast tests only (no infrastructure)
	$(PYTEST) -m "not integration and not e2e and not reliability" -q

bench: bench-outbox bench-holds bench-vouchers bench-body-limit ## every benchmark (prints figures; not pass/fail)

bench-outbox: infra topics migrate-test ## relay throughput and commit-to-consume latency
	$(PY) tests/bench/bench_outbox.py

bench-tools: ## wrk (Debian), the closed-loop HTTP load generator the benchmarks use for capacity
	@command -v wrk >/dev/null || { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q wrk; }

bench-holds: infra topics migrate-test bench-tools ## hold throughput and latency, gate on/off, against a bare endpoint
	$(PY) tests/bench/bench_holds.py

bench-vouchers: infra topics migrate-test bench-tools ## voucher reserve throughput and p99, normal vs flash mode
	$(PY) tests/bench/bench_vouchers.py

bench-body-limit: venv ## CPU per request of the MAX_BODY_BYTES guard, hot and routed POST, in-process
	$(PY) tests/bench/bench_body_limit.py
