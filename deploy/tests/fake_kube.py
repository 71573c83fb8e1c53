"""A Kubernetes API server that holds Secrets and nothing else: enough for `helm template --dry-run=server`,
whose `lookup` reads the cluster (the chart's JWT key is read back that way). Plain HTTP on loopback."""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

RESOURCES = {"kind": "APIResourceList", "groupVersion": "v1", "resources": [
    {"name": "secrets", "singularName": "secret", "namespaced": True, "kind": "Secret", "verbs": ["get", "list"]}]}


def _answer(path: str, secrets: dict[str, dict[str, str]]) -> dict[str, Any] | None:
    parts = path.split("?")[0].strip("/").split("/")
    if parts == ["api", "v1"]:
        return RESOURCES
    if parts[:3] != ["api", "v1", "namespaces"] or len(parts) < 5 or parts[4] != "secrets":
        return None
    namespace = parts[3]

    def secret(name: str) -> dict[str, Any]:
        data = {k: base64.b64encode(v.encode()).decode() for k, v in secrets[name].items()}
        return {"kind": "Secret", "apiVersion": "v1", "metadata": {"name": name, "namespace": namespace}, "data": data}

    if len(parts) == 5:
        return {"kind": "SecretList", "apiVersion": "v1", "metadata": {}, "items": [secret(n) for n in secrets]}
    return secret(parts[5]) if parts[5] in secrets else None


@contextmanager
def fake_cluster(secrets: dict[str, dict[str, str]], kubeconfig: Path) -> Iterator[Path]:
    """Serve `secrets` (name -> key -> text) in every namespace; yields a kubeconfig pointing at it."""
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = _answer(self.path, secrets)
            data = json.dumps(body if body is not None else
                              {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 404}).encode()
            self.send_response(200 if body is not None else 404)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *_: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    kubeconfig.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "fake",
        "clusters": [{"name": "fake", "cluster": {"server": f"http://127.0.0.1:{server.server_port}"}}],
        "users": [{"name": "fake", "user": {"token": "fake"}}],
        "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "fake", "namespace": "default"}}]}))
    try:
        yield kubeconfig
    finally:
        server.shutdown()
        server.server_close()
