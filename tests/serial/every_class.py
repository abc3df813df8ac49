"""Every generated entity class, as the serial tests parametrize over them."""

from __future__ import annotations

import io
from typing import Any

import pytest
from hypothesis import strategies as st

from kproto import index
from kproto.serial import entity_writer
from tests import strategies

ALL_TYPES = list(index.all_entity_types())


def class_id(cls: type) -> str:
    """Its module below ``kproto.schema``, and its name (``produce.v9.request.X``)."""
    return f"{cls.__module__[14:]}.{cls.__name__}"


# A test of ``cls`` for each class.
every_class = pytest.mark.parametrize("cls", ALL_TYPES, ids=class_id)


def drawn_and_written(cls: type, data: st.DataObject) -> tuple[Any, bytes]:
    """An entity of ``cls`` drawn from :func:`tests.strategies.entities`, and the
    bytes ``entity_writer`` writes for it."""
    entity = data.draw(strategies.entities(cls))
    buf = io.BytesIO()
    entity_writer(cls)(buf, entity)
    return entity, buf.getvalue()
