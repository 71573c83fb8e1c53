"""Wait until a Kafka broker answers a real metadata request.

Standalone on purpose (only aiokafka): deploy/local/infra.sh runs it right after starting the broker.
An open port is not enough; a KRaft broker accepts connections before it has caught up with the
controller, so we wait for a metadata answer that lists at least one broker (--brokers: that many, for a
cluster whose brokers all have to be up).

    kafka_ready.py [--bootstrap 127.0.0.1:9092] [--timeout 120] [--pid PID] [--brokers N]

Exit 0 when ready; 1 on timeout, or as soon as the process --pid is gone (the broker crashed,
no point waiting out the timeout).
"""

import argparse
import asyncio
import logging
import sys
import time

from aiokafka.client import AIOKafkaClient


def process_gone(pid: int | None) -> bool:
    if pid is None:
        return False
    try:
        with open(f"/proc/{pid}/stat") as stat:
            # A zombie (state Z) is dead even though the pid still exists.
            return stat.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


async def metadata_answered(bootstrap: str, brokers: int = 1) -> bool:
    client = AIOKafkaClient(bootstrap_servers=bootstrap, request_timeout_ms=5000)
    try:
        await client.bootstrap()
        metadata = await client.fetch_all_metadata()
        return len(metadata.brokers()) >= brokers
    except Exception:
        return False
    finally:
        await client.close()


async def wait_ready(bootstrap: str, timeout: float, pid: int | None, brokers: int = 1) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process_gone(pid):
            print(f"kafka_ready: broker process {pid} is gone", file=sys.stderr)
            return False
        if await metadata_answered(bootstrap, brokers):
            return True
        await asyncio.sleep(1)
    print(f"kafka_ready: no metadata answer from {bootstrap} in {timeout:.0f}s", file=sys.stderr)
    return False


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap", default="127.0.0.1:9092")
    parser.add_argument("--timeout", type=float, default=120.0)
    parser.add_argument("--pid", type=int, default=None)
    parser.add_argument("--brokers", type=int, default=1)
    args = parser.parse_args()
    # aiokafka logs every refused connection at ERROR while the broker boots; that is expected here.
    logging.basicConfig(level=logging.CRITICAL)
    return 0 if asyncio.run(wait_ready(args.bootstrap, args.timeout, args.pid, args.brokers)) else 1


if __name__ == "__main__":
    sys.exit(main())
