"""MkDocs hook: the pages built from the code at each build, so they cannot go stale.

- ``reference/api/<module>.md``: one mkdocstrings page per public top-level module or
  package of ``kproto`` (not the generated ``kproto.schema`` tree, which
  ``reference/schema.md`` explains), with a section per public submodule for the
  names the package itself does not export.
- ``reference/broker-apis.md``: the APIs the broker serves and their versions, from
  ``kproto.broker.handlers.HANDLERS`` and what ApiVersions advertises
  (``kproto.broker.dispatch.SERVED_APIS``); the notes column comes from
  ``docs/reference/broker-api-notes.yml``, keyed by API name (a name that is no
  ``ApiKey`` fails the build; a note for an API not served is not shown).
- ``reference/cli.md``: ``kproto --help`` and every subcommand's help, from
  ``kproto.cli.build_parser()``.
- ``<!-- kproto:rooms -->`` in a page: one line per module of ``src/kproto`` (its
  docstring's first sentence), read with ``ast``, so the list follows the code.
- ``<!-- kproto:make-targets -->``: the Makefile's targets with their ``##`` comments.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import importlib
import logging
import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml  # type: ignore[import-untyped]
from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src"
if str(SRC) not in sys.path:
    sys.path.insert(0, str(SRC))

log = logging.getLogger("mkdocs.hooks.kproto")

#: Top-level modules with no reference page: the generated entity tree (explained in
#: reference/schema.md) and the ``python -m kproto`` entry point.
EXCLUDED = {"schema", "__main__"}


# ------------------------------------------------------------------ API reference


def _children(package_dir: Path) -> list[tuple[str, bool]]:
    """``(name, is_package)`` of a package's public modules, by name."""
    found = []
    for path in sorted(package_dir.iterdir()):
        name = path.stem if path.suffix == ".py" else path.name
        if name.startswith("_"):
            continue
        if path.suffix == ".py":
            found.append((name, False))
        elif (path / "__init__.py").exists():
            found.append((name, True))
    return found


def reference_modules() -> list[str]:
    """The pages of the API reference, as dotted names below ``kproto``: every public
    top-level module and every public package at any depth (its plain submodules
    are sections of its page)."""
    pages = []

    def walk(directory: Path, prefix: str) -> None:
        for name, is_package in _children(directory):
            if not prefix and name in EXCLUDED:
                continue
            if is_package:
                pages.append(prefix + name)
                walk(directory / name, f"{prefix}{name}.")
            elif not prefix:
                pages.append(name)

    walk(SRC / "kproto", "")
    return sorted(pages)


def _public_submodules(package: str) -> list[str]:
    """The package's public plain submodules (not subpackages), in name order."""
    directory = SRC / Path(*package.split("."))
    return [
        f"{package}.{n}" for n, is_package in _children(directory) if not is_package
    ]


def _exported(module: Any) -> list[str]:
    names = getattr(module, "__all__", None)
    if names is None:
        names = [n for n in vars(module) if not n.startswith("_")]
        names = [
            n
            for n in names
            if getattr(vars(module)[n], "__module__", None) == module.__name__
        ]
    return list(names)


def _key(module: Any, name: str) -> tuple[str, str] | None:
    """What identifies ``module.name`` across re-exports: a class's or function's
    home and qualified name; a constant is only itself. None: it cannot be loaded
    here (a lazily imported name whose optional dependency is missing)."""
    try:
        value = getattr(module, name)
    except (AttributeError, ImportError):
        return None
    home, qualname = getattr(value, "__module__", None), getattr(
        value, "__qualname__", None
    )
    if isinstance(home, str) and isinstance(qualname, str):
        return home, qualname
    return module.__name__, name


def api_page(name: str) -> str:
    """The Markdown of ``reference/api/<name>.md``: the module (its ``__all__``), and
    for a package each public plain submodule with the names the package does not
    already show."""
    dotted = f"kproto.{name}"
    module = importlib.import_module(dotted)
    lines = [f"# `{dotted}`", "", f"::: {dotted}", ""]
    if not hasattr(module, "__path__"):
        return "\n".join(lines)
    seen = {_key(module, n) for n in _exported(module)} - {None}
    for sub in _public_submodules(dotted):
        submodule = importlib.import_module(sub)
        keys = {n: _key(submodule, n) for n in _exported(submodule)}
        members = [n for n, key in keys.items() if key is not None and key not in seen]
        seen |= {keys[n] for n in members}
        lines += [f"::: {sub}", "    options:", "      heading_level: 2"]
        if members:
            lines += ["      members:"] + [f"        - {n}" for n in members]
        else:
            lines += ["      members: false"]
        lines.append("")
    return "\n".join(lines)


# ------------------------------------------------------------- broker APIs table


def broker_apis_page(notes_file: Path) -> str:
    from kproto.broker.dispatch import SERVED_APIS
    from kproto.broker.handlers import HANDLERS
    from kproto.broker.handlers.cluster_info import MIN_VERSIONS
    from kproto.index import ApiKey

    notes: dict[str, str] = yaml.safe_load(notes_file.read_text()) or {}
    names = {api_key: _camel(ApiKey(api_key).name) for api_key in HANDLERS}
    every_api = {_camel(api_key.name) for api_key in ApiKey}
    unknown = sorted(set(notes) - every_api - {"_intro"})
    if unknown:
        log.warning(f"{notes_file.name}: notes for names that are no API: {unknown}")
    unserved = sorted(set(notes) & every_api - set(names.values()))
    if unserved:
        log.info(f"{notes_file.name}: not served, so not shown: {unserved}")
    rows = []
    for api_key in sorted(HANDLERS):
        low, high = SERVED_APIS[api_key]  # what ApiVersions advertises
        served_low = MIN_VERSIONS.get(api_key, low)
        versions = f"{served_low}-{high}" if served_low != high else f"{high}"
        if low != served_low:
            versions += f" ({low}-{served_low - 1} advertised, refused)"
        note = " ".join(str(notes.get(names[api_key], "")).split())
        rows.append(f"| {names[api_key]} | {int(api_key)} | {versions} | {note} |")
    return "\n".join(
        [
            "# APIs the broker serves",
            "",
            str(notes.get("_intro", "")).strip(),
            "",
            f"{len(rows)} APIs. This table is generated at each build from "
            "`kproto.broker.handlers.HANDLERS` (the one table of handlers) and the "
            "version ranges ApiVersions advertises (`kproto.broker.dispatch.SERVED_APIS`, "
            "lowered to the first version served by "
            "`kproto.broker.handlers.cluster_info.MIN_VERSIONS`); the notes are "
            "`docs/reference/broker-api-notes.yml`.",
            "",
            "| API | key | versions served | notes |",
            "| --- | ---: | --- | --- |",
            *rows,
            "",
        ]
    )


def _camel(upper_snake: str) -> str:
    special = {"API_VERSIONS": "ApiVersions"}
    if upper_snake in special:
        return special[upper_snake]
    return "".join(part.capitalize() for part in upper_snake.split("_"))


# ------------------------------------------------------------------ CLI reference


def _walk(
    parser: argparse.ArgumentParser, path: tuple[str, ...]
) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                yield from _walk(child, (*path, name))


@contextlib.contextmanager
def _columns(width: int) -> Iterator[None]:
    saved = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = str(width)
    try:
        yield
    finally:
        if saved is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = saved


def cli_page() -> str:
    from kproto.cli import build_parser

    out = [
        "# CLI reference",
        "",
        "Every `kproto` command's `--help`, generated at each build from "
        "`kproto.cli.build_parser()`. The [operator CLI guide](../guide/cli.md) "
        "shows them at work.",
        "",
    ]
    with _columns(88):
        for path, parser in _walk(build_parser(), ("kproto",)):
            title = " ".join(path)
            out += [
                f"## `{title}`",
                "",
                "```text",
                parser.format_help().rstrip(),
                "```",
                "",
            ]
    return "\n".join(out)


# ------------------------------------------------------------------------- rooms


def _first_sentence(doc: str) -> str:
    paragraph = doc.strip().split("\n\n")[0]
    text = " ".join(paragraph.split())
    text = re.sub(r":\w+:`~?\.?([^`]+)`", r"`\1`", text)  # :mod:`x` -> `x`
    text = text.replace("``", "`")
    text = re.sub(r"^`?kproto[\w.]*`?:\s*", "", text)  # "kproto.broker: an ..."
    match = re.match(r"(.+?[^.]{3}\.)(\s|$)", text)
    return (match.group(1) if match else text).rstrip(".:")


def rooms() -> str:
    """A nested list: every module of src/kproto but the generated schema tree."""
    lines = []
    base = SRC / "kproto"
    for path in sorted(base.rglob("*.py")):
        rel = path.relative_to(base)
        if rel.parts[0] == "schema":
            continue
        parts = ["kproto", *rel.with_suffix("").parts]
        if parts[-1] == "__init__":
            parts = parts[:-1]
        doc = ast.get_docstring(ast.parse(path.read_text()))
        depth = len(parts) - 2
        summary = _first_sentence(doc) if doc else "(no docstring)"
        shown = ".".join(parts)
        lines.append(f"{'    ' * max(depth, 0)}- `{shown}`: {summary}")
    return "\n".join(lines)


# ------------------------------------------------------------------ make targets


def make_targets(makefile: Path) -> str:
    """A table of the Makefile's targets and the ``##`` comment above each; targets
    without one are listed after it."""
    rows, bare, comment = [], [], []
    for line in makefile.read_text().splitlines():
        if line.startswith("## "):
            comment.append(line[3:].strip())
            continue
        rule = re.match(r"^([a-z][\w-]*):(?!=)", line)
        if rule:
            if comment:
                text = " ".join(comment).replace("|", "\\|")
                rows.append(f"| `make {rule.group(1)}` | {text} |")
            else:
                bare.append(f"`make {rule.group(1)}`")
            comment = []
        elif not line.strip() or line.startswith((".PHONY", "\t")):
            comment = []
    table = ["| target | what it does |", "| --- | --- |", *rows]
    if bare:
        table += ["", "Also: " + ", ".join(bare) + "."]
    return "\n".join(table)


# ------------------------------------------------------------------------ hooks


def on_files(files: Files, config: Any) -> Files:
    docs_dir = Path(config["docs_dir"])
    for name in reference_modules():
        files.append(
            File.generated(config, f"reference/api/{name}.md", content=api_page(name))
        )
    notes = docs_dir / "reference" / "broker-api-notes.yml"
    files.append(
        File.generated(
            config, "reference/broker-apis.md", content=broker_apis_page(notes)
        )
    )
    files.append(File.generated(config, "reference/cli.md", content=cli_page()))
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Files) -> str:
    if "<!-- kproto:rooms -->" in markdown:
        markdown = markdown.replace("<!-- kproto:rooms -->", rooms())
    if "<!-- kproto:make-targets -->" in markdown:
        markdown = markdown.replace(
            "<!-- kproto:make-targets -->", make_targets(ROOT / "Makefile")
        )
    return markdown
