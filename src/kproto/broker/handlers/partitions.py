"""Helpers shared by the partition APIs: a request's topic entry by name or id, and
every topic's name by its id."""

from __future__ import annotations

import uuid
from typing import Any

from kproto.broker.handlers.context import RequestContext
from kproto.broker.replica_manager import resolve_topic
from kproto.errors import ErrorCode

__all__ = ["topic_ids", "topic_name"]


def topic_name(
    ctx: RequestContext, entry: Any, name_field: str = "name"
) -> tuple[str, ErrorCode]:
    """``(topic name, error code)`` of a request's topic entry, which names the
    topic by ``name_field`` or (Fetch v13+, Produce v13) by ``topic_id``: an
    unknown id gives UNKNOWN_TOPIC_ID
    (:func:`kproto.broker.replica_manager.resolve_topic`)."""
    return resolve_topic(
        ctx.state, getattr(entry, name_field, None), getattr(entry, "topic_id", None)
    )


def topic_ids(ctx: RequestContext) -> dict[uuid.UUID, str]:
    """Every topic's name by its id."""
    return {info.topic_id: name for name, info in ctx.state.topics.items()}
