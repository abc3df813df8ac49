"""Kept for imports of ``kproto.serial.exceptions``: the classes live in
:mod:`kproto.exceptions` (the bottom layer), and these are the same objects."""

from __future__ import annotations

from kproto.exceptions import DecodeError, EncodeError

__all__ = ["DecodeError", "EncodeError"]
