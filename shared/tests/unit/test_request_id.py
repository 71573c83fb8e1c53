"""Request ids: a client's sane id is kept, others are replaced; new ids are unique, per process too."""

from __future__ import annotations

import os
import re

from ticketing import request_id


def test_a_sane_client_id_is_kept_and_anything_else_replaced() -> None:
    assert request_id.accept("req-7f3a.b:c") == "req-7f3a.b:c"
    for offered in (None, "", "two words", "x" * 129, "<script>", "ä"):
        made = request_id.accept(offered)
        assert re.fullmatch(r"[0-9a-f]{32}", made), (offered, made)


def test_new_ids_are_unique_and_a_forked_child_draws_its_own() -> None:
    ids = {request_id.accept(None) for _ in range(10_000)}
    assert len(ids) == 10_000
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - the child reports through the pipe
        os.write(write, request_id.accept(None).encode())
        os._exit(0)
    os.waitpid(child, 0)
    theirs = os.read(read, 64).decode()
    os.close(read)
    os.close(write)
    assert theirs[:16] != request_id.accept(None)[:16] and theirs not in ids  # another process, another prefix
