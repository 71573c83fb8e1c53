"""Stripe's form encoding read back into nested values: `line_items[0][price_data][unit_amount]=500`,
`metadata[paymentId]=...`, `expand[]=payment_intent` (what the SDK sends)."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import parse_qsl

_PART = re.compile(r"\[([^\]]*)\]")


def _lists(node: Any) -> Any:
    """Dicts whose keys are all indexes become lists, in index order."""
    if not isinstance(node, dict):
        return node
    items = {k: _lists(v) for k, v in node.items()}
    if items and all(k.isdigit() for k in items):
        return [items[k] for k in sorted(items, key=int)]
    return items


def parse_form(body: bytes) -> dict[str, Any]:
    root: dict[str, Any] = {}
    for key, value in parse_qsl(body.decode(errors="replace"), keep_blank_values=True):
        head, _, rest = key.partition("[")
        path = [head, *_PART.findall("[" + rest)] if rest else [head]
        node = root
        for i, part in enumerate(path[:-1]):
            nxt = path[i + 1]
            if not isinstance(node.get(part, {}), dict):  # `a=1&a[b]=2`: the later form wins
                node[part] = {}
            node = node.setdefault(part, {})
            if nxt == "":  # `name[]`: appended
                node[str(len(node))] = value
                break
        else:
            node[path[-1]] = value
    return _lists(root)  # type: ignore[no-any-return]
