"""Confluent Schema Registry for kproto: a server on the broker's loop, a client, and
the schema formats (Avro, JSON Schema, Protobuf) with their compatibility rules.

The REST API is Confluent Schema Registry's v1; error bodies and codes are Confluent's
(:mod:`kproto.registry.errors`).

The server, from the top (``Cluster(schema_registry=True)`` starts it; importing this
package imports none of it, nor aiohttp):

* :mod:`~kproto.registry.server`: the aiohttp runner on 127.0.0.1, TLS and Basic
  authentication as the cluster's listeners;
* :mod:`~kproto.registry.app`: the application, its middleware and route table;
* :mod:`~kproto.registry.routes`: Confluent's resources, one handler per route;
* :mod:`~kproto.registry.rest`: content types, JSON bodies, query parameters;
* :mod:`~kproto.registry.registry`: the operations (register, look up, delete,
  configs, modes, compatibility), each stored before it is acknowledged;
* :mod:`~kproto.registry.store`: the state, rebuilt from the records;
* :mod:`~kproto.registry.records`: the ``_schemas`` keys and values, Confluent's shapes;
* :mod:`~kproto.registry.schemas_topic`: the one seam to the Kafka log, a tenant of
  the broker's internal-topic writer (:mod:`kproto.broker.coordinator_runtime`).
"""
