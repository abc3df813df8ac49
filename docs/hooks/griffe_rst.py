"""Griffe extension: kproto's docstrings use reStructuredText's inline markup
(``:class:`X```, ``text::`` before a literal block, ``>>>`` examples); mkdocstrings
renders Markdown. This rewrites those few constructs at load time so the reference
shows code, not role syntax. The docstrings themselves stay as they are.
"""

from __future__ import annotations

import re
from typing import Any

from griffe import Extension, Object

_ROLE = re.compile(r":(?:py:)?(\w+):`([^`]+)`")
_DOCTEST = re.compile(r"^\s*(>>>|\.\.\.)( |$)")


def _role(match: re.Match[str]) -> str:
    role, target = match.groups()
    if role == "rfc":
        return f"RFC {target}"
    if role == "pep":
        return f"PEP {target}"
    target = target.strip()
    if "<" in target and target.endswith(">"):  # :class:`title <target>`
        target = target[: target.index("<")].strip()
    if target.startswith("~"):
        target = target[1:].rsplit(".", 1)[-1]
    return f"`{target.lstrip('.')}`"


def _inline(line: str) -> str:
    """Roles to code spans; ``[`` escaped outside code (no Markdown links in prose)."""
    line = _ROLE.sub(_role, line)
    parts = re.split(r"(`+[^`]*`+)", line)
    return "".join(p if p.startswith("`") else p.replace("[", "\\[") for p in parts)


def markdown(text: str) -> str:
    out: list[str] = []
    lines = text.splitlines()
    i = 0
    literal_next = False
    while i < len(lines):
        line = lines[i]
        if _DOCTEST.match(line) and line.lstrip().startswith(">>>"):
            block = []
            while i < len(lines) and lines[i].strip():
                block.append(lines[i])
                i += 1
            out += ["```pycon", *block, "```"]
            continue
        if literal_next and line.startswith((" ", "\t")) and line.strip():
            block = []
            while i < len(lines) and (not lines[i].strip() or lines[i][:1] in " \t"):
                block.append(lines[i])
                i += 1
            while block and not block[-1].strip():
                block.pop()
            indent = min(len(b) - len(b.lstrip()) for b in block if b.strip())
            out += ["```text", *(b[indent:] for b in block), "```", ""]
            literal_next = False
            continue
        if line.rstrip().endswith("::"):
            stripped = line.rstrip()[:-2].rstrip()
            out.append(_inline(stripped + ":") if stripped else "")
            literal_next = True
            i += 1
            continue
        if line.strip():
            literal_next = False if not literal_next else literal_next
        out.append(_inline(line))
        i += 1
    return "\n".join(out)


class RstInline(Extension):
    """Rewrite each docstring from reStructuredText markup to Markdown."""

    def on_instance(self, *, obj: Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = markdown(obj.docstring.value)
