"""Subscription regexes: Python's syntax, RE2's constructs, linear-time matching."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kproto.broker.groups.topic_regex import MAX_PATTERN_CHARS, TopicRegex

PATTERNS = [
    r"^topic-.*",
    r"topic-.*",
    r"t(a|bc)*d",
    r"(?i)ToPic-[a-c]+",
    r"a{2,3}",
    r"a*?b",
    r"(a|ab)(c|bcd)(d*)",
    r"[^abc]+",
    r"\d+-\w+",
    r"x(?i:y)z",
    r"(ab)+|c",
    r"\bfoo\b",
    r"[a-z]{1,}\.[0-9]?",
    r"(a*)*",
    r"(|a)+",
    r"(a?){3}",
    r"orders\.(eu|us)-[0-9]+",
]


@settings(max_examples=300, deadline=None)
@given(
    pattern=st.sampled_from(PATTERNS),
    text=st.text(alphabet="abcdxyzTOPIC-.019_", max_size=10),
)
def test_agrees_with_python_re(pattern: str, text: str) -> None:
    assert TopicRegex(pattern).fullmatch(text) == (
        re.fullmatch(pattern, text) is not None
    )


@pytest.mark.parametrize(
    ("pattern", "why"),
    [
        (r"(a)\1", "backreferences"),
        (r"(?=a)a", "lookahead"),
        (r"(?<!a)b", "lookbehind"),
        (r"(?>a)", "atomic groups"),
        (r"a++", "possessive"),
        (r"(", "missing )"),
        ("a" * (MAX_PATTERN_CHARS + 1), "longer than"),
    ],
)
def test_refuses_what_re2_lacks(pattern: str, why: str) -> None:
    with pytest.raises(ValueError, match=re.escape(why)):
        TopicRegex(pattern)


@pytest.mark.timeout(20)
def test_patterns_that_backtrack_exponentially_in_re_finish() -> None:
    # Python's re needs about 2**249 steps for each of these; RE2 and this, not
    name = "a" * 249
    assert not TopicRegex(r"(a|a)*b").fullmatch(name)
    assert not TopicRegex(r"(a*)*b").fullmatch(name)
    assert TopicRegex(r"(a|a)*").fullmatch(name)
    assert not TopicRegex(r"a{1000000}").fullmatch(name)
