"""Fixtures for the shared library's integration tests: a platform-test schema, a fresh topic each."""

from __future__ import annotations

import sys
import uuid
from pathlib import Path

import asyncpg
import pytest
import pytest_asyncio
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

# Test modules import their helpers from platform_support (pytest runs with --import-mode=importlib).
sys.path.insert(0, str(Path(__file__).parent))

@pytest.fixture(scope="session")
def platform_dsn(migrated_dsn) -> str:
    return migrated_dsn("PLATFORM_TEST_DATABASE_URL", None)


@pytest_asyncio.fixture
async def db(platform_dsn):
    conn = await asyncpg.connect(platform_dsn)
    await conn.execute("""
        CREATE TABLE IF NOT EXISTS test_effect (event_id UUID NOT NULL, message_key TEXT NOT NULL,
                                                seq INT NOT NULL, applied_at TIMESTAMPTZ DEFAULT now());
        TRUNCATE outbox, processed_event, test_effect;""")
    yield conn
    await conn.close()


@pytest_asyncio.fixture
async def topic(kafka_bootstrap):
    name = f"platform-test-{uuid.uuid4().hex[:10]}"
    admin = AIOKafkaAdminClient(bootstrap_servers=kafka_bootstrap)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(name, num_partitions=3, replication_factor=1)])
    finally:
        await admin.close()
    yield name
    admin = AIOKafkaAdminClient(bootstrap_servers=kafka_bootstrap)
    await admin.start()
    try:
        await admin.delete_topics([name])
    except Exception:
        pass  # a topic left behind after a broker fault is harmless
    finally:
        await admin.close()


