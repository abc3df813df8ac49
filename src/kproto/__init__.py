"""kproto: the Apache Kafka wire protocol for Python.

- :mod:`kproto.schema`: generated, versioned, frozen attrs entities for every Kafka
  message (``kproto.schema.metadata.v12.MetadataResponse``).
- :mod:`kproto.index`: look classes up by ``api_key``/version or name; :class:`ApiKey`.
- :mod:`kproto.serial`: ``entity_reader(cls)`` / ``entity_writer(cls)`` over ``IO[bytes]``.
- :mod:`kproto.records`: record batches (magic 0, 1, 2; every codec).
- :mod:`kproto.framing`: the sans-IO frame codec (both directions; ``kproto.frame_reader`` cuts streams into frames).
- :mod:`kproto.negotiation`: the ApiVersions state machine under the connections.
- :mod:`kproto.connection` / :mod:`kproto.aio`: thin blocking and asyncio broker
  connections.
- :mod:`kproto.client`: a small client over them (``Client``, ``AsyncClient``): leader
  routing, produce, fetch, ``iter_records``, offsets, topic admin.
- :mod:`kproto.proxy`: an asyncio proxy building block (hooks, address rewriting).
- :mod:`kproto.meta`: the run-time field metadata everything above derives from.
- :mod:`kproto.spark`: the PySpark pipeline (extra ``kproto[spark]``).
"""

from kproto.errors import ErrorCode
from kproto.index import ApiKey
from kproto.meta import EntityInfo, Wire, entity_info

__all__ = ["ApiKey", "ErrorCode", "EntityInfo", "Wire", "entity_info", "__version__"]

__version__ = "0.1.0"
