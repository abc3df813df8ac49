"""Confluent Schema Registry for kproto: a server on the broker's loop, a client, and
the schema formats (Avro, JSON Schema, Protobuf) with their compatibility rules.

The REST API is Confluent Schema Registry's v1; error bodies and codes are Confluent's
(:mod:`kproto.registry.errors`).
"""
