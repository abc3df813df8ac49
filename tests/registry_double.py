"""A small in-memory Schema Registry served over HTTP on 127.0.0.1, for the client and
serializer tests (and confluent-kafka's ``SchemaRegistryClient`` in the interop tests)
until the real server (``Cluster(schema_registry=True)``) is on this branch.

It keeps schemas by exact text (no canonical forms, no compatibility checks: every
test answers compatible unless ``incompatible`` is set), subjects, versions, soft and
permanent deletes, config and mode, and answers Confluent's JSON error bodies. Faults
for the retry tests: ``fail_next`` (HTTP statuses answered, in order, before serving).
"""

from __future__ import annotations

import base64
import json
import ssl
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import attrs


@attrs.define
class Entry:
    schema_id: int
    version: int
    deleted: bool = False


@attrs.define
class State:
    schemas: list[dict[str, Any]] = attrs.Factory(list)  # index = id - 1
    guids: dict[str, int] = attrs.Factory(dict)
    subjects: dict[str, list[Entry]] = attrs.Factory(dict)
    config: dict[str | None, str] = attrs.Factory(lambda: {None: "BACKWARD"})
    mode: dict[str | None, str] = attrs.Factory(lambda: {None: "READWRITE"})
    fail_next: list[int] = attrs.Factory(list)
    incompatible: list[str] = attrs.Factory(list)
    auth: tuple[str, str] | None = None
    requests: list[tuple[str, str]] = attrs.Factory(list)


class Problem(Exception):
    def __init__(self, code: int, message: str) -> None:
        self.code, self.message = code, message


def _schema_key(body: dict[str, Any]) -> tuple[str, str, str]:
    return (
        body.get("schemaType") or "AVRO",
        body["schema"],
        json.dumps(body.get("references") or [], sort_keys=True),
    )


class Handler(BaseHTTPRequestHandler):
    state: State
    lock = threading.Lock()

    def log_message(self, *args: Any) -> None:  # quiet
        pass

    def _serve(self, method: str) -> None:
        parts = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
        path = [unquote(p) for p in parts.path.strip("/").split("/") if p]
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        st = self.state
        st.requests.append((method, parts.path))
        if st.fail_next:
            self._send(
                st.fail_next.pop(0), {"error_code": 50001, "message": "injected"}
            )
            return
        if st.auth is not None:
            expected = "Basic " + base64.b64encode(":".join(st.auth).encode()).decode()
            if self.headers.get("Authorization") != expected:
                self._send(401, {"error_code": 401, "message": "Unauthorized"})
                return
        try:
            body = json.loads(raw) if raw else None
            with self.lock:
                status, answer = 200, self.route(method, path, query, body)
        except Problem as p:
            status = p.code if p.code < 1000 else p.code // 100
            answer = {"error_code": p.code, "message": p.message}
        self._send(status, answer)

    def _send(self, status: int, answer: Any) -> None:
        data = json.dumps(answer).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/vnd.schemaregistry.v1+json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        self._serve("GET")

    def do_POST(self) -> None:
        self._serve("POST")

    def do_PUT(self) -> None:
        self._serve("PUT")

    def do_DELETE(self) -> None:
        self._serve("DELETE")

    # ------------------------------------------------------------------ routes

    def route(self, method: str, path: list[str], q: dict[str, str], body: Any) -> Any:
        st = self.state
        flag = lambda name: q.get(name) == "true"  # noqa: E731
        match method, path:
            case "GET", ["schemas", "types"]:
                return ["AVRO", "JSON", "PROTOBUF"]
            case "GET", ["schemas", "ids", sid]:
                return self.schema_json(int(sid))
            case "GET", ["schemas", "guids", guid]:
                if guid not in st.guids:
                    raise Problem(40403, "Schema not found")
                return self.schema_json(st.guids[guid])
            case "GET", ["schemas", "ids", sid, "subjects"]:
                self.schema_json(int(sid))
                return [
                    s
                    for s, es in st.subjects.items()
                    if any(e.schema_id == int(sid) for e in es)
                ]
            case "GET", ["subjects"]:
                prefix = q.get("subjectPrefix", "")
                return [
                    s
                    for s, es in st.subjects.items()
                    if s.startswith(prefix)
                    and (flag("deleted") or any(not e.deleted for e in es))
                ]
            case "POST", ["subjects", subject, "versions"]:
                schema_id = self.register(subject, body)
                return {"id": schema_id, "guid": st.schemas[schema_id - 1]["guid"]}
            case "POST", ["subjects", subject]:
                key = _schema_key(body)
                for e in self.entries(subject):
                    if (
                        _schema_key(st.schemas[e.schema_id - 1]) == key
                        and not e.deleted
                    ):
                        return {
                            "subject": subject,
                            "version": e.version,
                            "id": e.schema_id,
                            **body,
                        }
                raise Problem(40403, "Schema not found")
            case "GET", ["subjects", subject, "versions"]:
                return [
                    e.version
                    for e in self.entries(subject)
                    if flag("deleted") or not e.deleted
                ]
            case "GET", ["subjects", subject, "versions", v]:
                e = self.version(subject, v, flag("deleted"))
                return {
                    "subject": subject,
                    "version": e.version,
                    **self.schema_json(e.schema_id),
                }
            case "DELETE", ["subjects", subject]:
                es = self.entries(subject)
                if flag("permanent"):
                    if any(not e.deleted for e in es):
                        raise Problem(40405, "Subject not soft-deleted")
                    del st.subjects[subject]
                    return [e.version for e in es]
                live = [e for e in es if not e.deleted]
                if not live:
                    raise Problem(40404, "Subject was soft deleted")
                for e in live:
                    e.deleted = True
                return [e.version for e in live]
            case "DELETE", ["subjects", subject, "versions", v]:
                e = self.version(subject, v, True)
                if flag("permanent"):
                    if not e.deleted:
                        raise Problem(40407, "Version not soft-deleted")
                    st.subjects[subject].remove(e)
                else:
                    if e.deleted:
                        raise Problem(40406, "Version was soft deleted")
                    e.deleted = True
                return e.version
            case "POST", ["compatibility", "subjects", subject, "versions", *_]:
                self.entries(subject)
                ok = subject not in st.incompatible
                answer: dict[str, Any] = {"is_compatible": ok}
                if flag("verbose"):
                    answer["messages"] = [] if ok else ["injected incompatibility"]
                return answer
            case "GET", ["config"]:
                return {"compatibilityLevel": st.config[None]}
            case "GET", ["config", subject]:
                if subject not in st.config:
                    if flag("defaultToGlobal"):
                        return {"compatibilityLevel": st.config[None]}
                    raise Problem(
                        40408,
                        "Subject does not have subject-level compatibility configured",
                    )
                return {"compatibilityLevel": st.config[subject]}
            case "PUT", ["config", *rest]:
                level = body.get("compatibility", "")
                if level not in (
                    "NONE",
                    "BACKWARD",
                    "BACKWARD_TRANSITIVE",
                    "FORWARD",
                    "FORWARD_TRANSITIVE",
                    "FULL",
                    "FULL_TRANSITIVE",
                ):
                    raise Problem(42203, "Invalid compatibility level")
                st.config[rest[0] if rest else None] = level
                return {"compatibility": level}
            case "DELETE", ["config", subject]:
                return {"compatibilityLevel": st.config.pop(subject, st.config[None])}
            case "GET", ["mode", *rest]:
                return {"mode": st.mode.get(rest[0] if rest else None, st.mode[None])}
            case "PUT", ["mode", *rest]:
                if body.get("mode") not in (
                    "READWRITE",
                    "READONLY",
                    "READONLY_OVERRIDE",
                    "IMPORT",
                ):
                    raise Problem(42204, "Invalid mode")
                st.mode[rest[0] if rest else None] = body["mode"]
                return {"mode": body["mode"]}
            case "DELETE", ["mode", subject]:
                return {"mode": st.mode.pop(subject, st.mode[None])}
        raise Problem(404, "HTTP 404 Not Found")

    def schema_json(self, schema_id: int) -> dict[str, Any]:
        st = self.state
        if not 1 <= schema_id <= len(st.schemas):
            raise Problem(40403, "Schema not found")
        return {"id": schema_id, **st.schemas[schema_id - 1]}

    def entries(self, subject: str) -> list[Entry]:
        if subject not in self.state.subjects:
            raise Problem(40401, f"Subject '{subject}' not found.")
        return self.state.subjects[subject]

    def version(self, subject: str, v: str, deleted: bool) -> Entry:
        es = [e for e in self.entries(subject) if deleted or not e.deleted]
        if v == "latest":
            if not es:
                raise Problem(40402, "Version not found.")
            return es[-1]
        if not v.lstrip("-").isdigit() or int(v) <= 0:
            raise Problem(42202, "The specified version is not a valid version id.")
        for e in es:
            if e.version == int(v):
                return e
        raise Problem(40402, "Version not found.")

    def register(self, subject: str, body: dict[str, Any]) -> int:
        st = self.state
        if st.mode.get(subject, st.mode[None]) == "READONLY":
            raise Problem(42205, "Subject is in read-only mode")
        if not isinstance(body, dict) or not isinstance(body.get("schema"), str):
            raise Problem(42201, "Invalid schema: no 'schema' string")
        if subject in st.incompatible:
            raise Problem(
                40901, "Schema being registered is incompatible with an earlier schema"
            )
        stored = {
            k: body[k] for k in ("schema", "schemaType", "references") if k in body
        }
        key = _schema_key(stored)
        ids = [i + 1 for i, s in enumerate(st.schemas) if _schema_key(s) == key]
        if ids:
            schema_id = ids[0]
        else:
            guid = str(uuid.uuid4())
            st.schemas.append({**stored, "guid": guid})
            st.guids[guid] = schema_id = len(st.schemas)
        es = st.subjects.setdefault(subject, [])
        for e in es:
            if e.schema_id == schema_id and not e.deleted:
                return schema_id
        es.append(Entry(schema_id, (es[-1].version if es else 0) + 1))
        return schema_id


@contextmanager
def serve_registry(
    auth: tuple[str, str] | None = None, ssl_context: ssl.SSLContext | None = None
) -> Iterator[tuple[str, State]]:
    """Serve a fresh registry double (HTTPS with ``ssl_context``); yields
    ``(url, state)``."""
    state = State(auth=auth)
    handler = type(
        "BoundHandler", (Handler,), {"state": state, "lock": threading.Lock()}
    )
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    scheme = "http"
    if ssl_context is not None:
        server.socket = ssl_context.wrap_socket(server.socket, server_side=True)
        scheme = "https"
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    try:
        yield f"{scheme}://127.0.0.1:{server.server_address[1]}", state
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
