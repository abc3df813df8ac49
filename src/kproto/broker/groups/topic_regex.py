"""Subscription regular expressions of KIP-848 consumer groups, matched in linear
time (no backtracking), close to the RE2/J semantics Kafka uses.

A pattern is parsed with Python's own regular expression parser (so the syntax is
Python's, which for what RE2 supports is the same) and then matched against a topic
name by a position-set simulation instead of Python's backtracking engine: the cost
is bounded by pattern size x name length squared, so a client cannot stall the broker
with a pattern such as ``(a|a)*b`` (Python's ``re`` takes exponential time on it; RE2
takes linear time). Constructs RE2 does not have are refused, as Kafka refuses them:
backreferences, lookahead and lookbehind, conditionals, atomic groups and possessive
quantifiers. Matching is a full match (Kafka's ``Pattern.matcher(topic).matches()``).

Differences that remain: Python's escapes and classes (``\\d`` is Unicode digits,
``\\w`` Unicode word characters; RE2 is ASCII unless asked), RE2's ``\\pN``/``\\C``
and POSIX classes ``[[:alpha:]]`` are not understood, and patterns are limited to
:data:`MAX_PATTERN_CHARS` characters.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable
from typing import Any

# The standard library's own regular expression parser (``re._parser`` since Python
# 3.11; ``sre_parse`` before): untyped, private, and stable in its output shape.
P: Any = importlib.import_module("re._parser")
C: Any = importlib.import_module("re._constants")

__all__ = ["MAX_PATTERN_CHARS", "TopicRegex"]

#: Longest pattern accepted (RE2 bounds its programs by memory; this bounds work).
MAX_PATTERN_CHARS = 255

_REFUSED = {
    C.GROUPREF: "backreferences",
    C.GROUPREF_EXISTS: "conditionals",
    C.ASSERT: "lookahead or lookbehind",
    C.ASSERT_NOT: "lookahead or lookbehind",
    C.ATOMIC_GROUP: "atomic groups",
    C.POSSESSIVE_REPEAT: "possessive quantifiers",
}
_REPEATS = {C.MAX_REPEAT, C.MIN_REPEAT}


def _word(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


_CATEGORIES: dict[Any, Callable[[str], bool]] = {
    C.CATEGORY_DIGIT: str.isdigit,
    C.CATEGORY_NOT_DIGIT: lambda ch: not ch.isdigit(),
    C.CATEGORY_SPACE: str.isspace,
    C.CATEGORY_NOT_SPACE: lambda ch: not ch.isspace(),
    C.CATEGORY_WORD: _word,
    C.CATEGORY_NOT_WORD: lambda ch: not _word(ch),
}


class TopicRegex:
    """A compiled subscription pattern.

    Raises:
        ValueError: the pattern does not parse, is longer than
            :data:`MAX_PATTERN_CHARS`, or uses a construct RE2 lacks (the message
            says which).
    """

    def __init__(self, pattern: str) -> None:
        if len(pattern) > MAX_PATTERN_CHARS:
            raise ValueError(
                f"longer than {MAX_PATTERN_CHARS} characters ({len(pattern)})"
            )
        try:
            parsed = P.parse(pattern)
        except re.error as exc:
            raise ValueError(str(exc)) from None
        self.pattern = pattern
        self._tree = parsed
        self._ignore_case = bool(parsed.state.flags & re.IGNORECASE)
        _check(parsed)

    def fullmatch(self, text: str) -> bool:
        """Whether the whole of ``text`` matches."""
        return len(text) in _Matcher(text).seq(self._tree, 0, self._ignore_case)


def _check(seq: Any) -> None:
    for op, av in seq:
        if op in _REFUSED:
            raise ValueError(f"{_REFUSED[op]} are not supported (RE2 syntax)")
        if op is C.BRANCH:
            for branch in av[1]:
                _check(branch)
        elif op is C.SUBPATTERN:
            _check(av[3])
        elif op in _REPEATS:
            _check(av[2])


class _Matcher:
    """Positions reachable in ``text`` after each node, memoised per start."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.memo: dict[tuple[Any, int, int, bool], frozenset[int]] = {}

    def seq(self, items: Any, pos: int, ci: bool) -> frozenset[int]:
        current = frozenset({pos})
        for op, av in items:
            if not current:
                break
            out: set[int] = set()
            for p in current:
                out |= self.node(op, av, p, ci)
            current = frozenset(out)
        return current

    def node(self, op: Any, av: Any, pos: int, ci: bool) -> frozenset[int]:
        key = (op, id(av), pos, ci)
        found = self.memo.get(key)
        if found is None:
            found = self.memo[key] = self._node(op, av, pos, ci)
        return found

    def _node(self, op: Any, av: Any, pos: int, ci: bool) -> frozenset[int]:
        text, n = self.text, len(self.text)
        if op is C.AT:
            return frozenset({pos}) if self._at(av, pos) else frozenset()
        if op is C.BRANCH:
            out: set[int] = set()
            for branch in av[1]:
                out |= self.seq(branch, pos, ci)
            return frozenset(out)
        if op is C.SUBPATTERN:
            add, delete = av[1], av[2]
            inner = (ci or bool(add & re.IGNORECASE)) and not delete & re.IGNORECASE
            return self.seq(av[3], pos, bool(inner))
        if op in _REPEATS:
            return self._repeat(av[0], av[1], av[2], pos, ci)
        if pos >= n:
            return frozenset()
        ch = text[pos]
        if op is C.LITERAL:
            ok = _same(ch, chr(av), ci)
        elif op is C.NOT_LITERAL:
            ok = not _same(ch, chr(av), ci)
        elif op is C.ANY:
            ok = ch != "\n"
        elif op is C.IN:
            ok = _in(av, ch, ci)
        else:  # pragma: no cover - _check and the parser leave no other node
            raise ValueError(f"unsupported regular expression node {op}")
        return frozenset({pos + 1}) if ok else frozenset()

    def _repeat(self, lo: int, hi: int, sub: Any, pos: int, ci: bool) -> frozenset[int]:
        """Positions after ``lo``..``hi`` repetitions of ``sub``. The frontier
        (positions after exactly k repetitions) empties, or reaches a fixed point
        that every larger count shares, within about ``len(text)`` steps; the loop
        stops there whatever the counts (a cap of twice that guards the rest)."""
        frontier = frozenset({pos})
        out: set[int] = set(frontier) if lo == 0 else set()
        cap = 2 * (len(self.text) - pos + 2)
        k = 0
        while k < hi and frontier and k <= cap:
            step: set[int] = set()
            for p in frontier:
                step |= self.seq(sub, p, ci)
            new = frozenset(step)
            k += 1
            if new == frontier:
                out |= new  # the same for every count from here, lo included
                break
            if k >= lo:
                out |= new
            frontier = new
        return frozenset(out)

    def _at(self, where: Any, pos: int) -> bool:
        n = len(self.text)
        if where in (C.AT_BEGINNING, C.AT_BEGINNING_STRING, C.AT_BEGINNING_LINE):
            return pos == 0
        if where in (C.AT_END, C.AT_END_STRING, C.AT_END_LINE):
            return pos == n
        before = pos > 0 and _word(self.text[pos - 1])
        after = pos < n and _word(self.text[pos])
        if where in (C.AT_BOUNDARY, C.AT_UNI_BOUNDARY, C.AT_LOC_BOUNDARY):
            return before != after
        return before == after  # AT_NON_BOUNDARY and its variants


def _same(a: str, b: str, ci: bool) -> bool:
    return a == b or (ci and a.casefold() == b.casefold())


def _in(items: Any, ch: str, ci: bool) -> bool:
    negate = bool(items) and items[0][0] is C.NEGATE
    hit = False
    for op, av in items[1:] if negate else items:
        if op is C.LITERAL:
            hit = _same(ch, chr(av), ci)
        elif op is C.RANGE:
            hit = any(
                av[0] <= ord(c) <= av[1]
                for c in ({ch, ch.lower(), ch.upper()} if ci else {ch})
            )
        elif op is C.CATEGORY:
            test = _CATEGORIES.get(av)
            hit = test is not None and test(ch)
        if hit:
            break
    return hit != negate
