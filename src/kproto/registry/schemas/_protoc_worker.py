"""A long-lived protoc: runs grpcio-tools' protoc in this process for each request read
from stdin, so that a compile costs milliseconds rather than an interpreter start.

Run by path (``python _protoc_worker.py INCLUDE_DIR``) from
:mod:`kproto.registry.schemas.protobuf`, which bounds each request's time and kills and
replaces this process when it runs over. Frames on stdin and stdout: a 4-byte big-endian
length, then JSON. Request: ``{"name": path, "files": {path: text}}``. Reply:
``{"ok": true, "descriptor_set": base64}`` or ``{"ok": false, "error": text}``.
Imports only the standard library and grpc_tools.
"""

from __future__ import annotations

import base64
import json
import os
import struct
import sys
import tempfile
from typing import Any


def _read_exact(stream: Any, size: int) -> bytes | None:
    data = b""
    while len(data) < size:
        chunk = stream.read(size - len(data))
        if not chunk:
            return None
        data += chunk
    return data


def _compile(protoc: Any, include: str, request: dict[str, Any]) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="kproto-protoc-") as tmp:
        for path, text in request["files"].items():
            target = os.path.join(tmp, path)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with open(target, "w", encoding="utf-8") as f:
                f.write(text)
        out = os.path.join(tmp, "__kproto_out__.pb")
        err_path = os.path.join(tmp, "__kproto_err__.txt")
        saved = os.dup(2)
        with open(err_path, "wb") as err:
            os.dup2(err.fileno(), 2)
            try:
                code = protoc.main(
                    [
                        "protoc",
                        f"-I{tmp}",
                        f"-I{include}",
                        "--include_imports",
                        f"--descriptor_set_out={out}",
                        os.path.join(tmp, request["name"]),
                    ]
                )
            finally:
                os.dup2(saved, 2)
                os.close(saved)
        with open(err_path, encoding="utf-8", errors="replace") as f:
            message = f.read().replace(tmp + os.sep, "").strip()
        if code != 0:
            return {"ok": False, "error": message or "protoc failed"}
        with open(out, "rb") as f:
            return {
                "ok": True,
                "descriptor_set": base64.b64encode(f.read()).decode("ascii"),
            }


def main() -> None:
    from grpc_tools import protoc  # type: ignore[import-untyped]

    include = sys.argv[1]
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    while True:
        header = _read_exact(stdin, 4)
        if header is None:
            return
        body = _read_exact(stdin, struct.unpack(">I", header)[0])
        if body is None:
            return
        try:
            reply = _compile(protoc, include, json.loads(body))
        except Exception as exc:  # one bad request must not end the worker
            reply = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
        data = json.dumps(reply).encode("utf-8")
        stdout.write(struct.pack(">I", len(data)) + data)
        stdout.flush()


if __name__ == "__main__":
    main()
