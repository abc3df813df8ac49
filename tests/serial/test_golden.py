"""Byte-exact vectors written by hand from Kafka's protocol guide.

Each vector is an annotated hex literal (one comment per field) checked both ways:
kproto must encode the entity to exactly these bytes and decode them back to the same
entity. Rules exercised (from https://kafka.apache.org/protocol, "Protocol Primitive
Types" and KIP-482 / KIP-893):

* classic: STRING = int16 length + UTF-8, NULLABLE_STRING null = int16 -1,
  ARRAY = int32 count, null array = int32 -1;
* flexible: COMPACT_STRING / COMPACT_ARRAY = unsigned varint of length + 1 (0 = null),
  then a tagged-field section: uvarint count, then per field uvarint tag, uvarint size,
  value; tagged fields holding their default are omitted;
* RequestHeader v2's ClientId keeps the classic int16 nullable string
  (``"flexibleVersions": "none"``) although the header itself is flexible;
* a nullable struct (KIP-893) is one int8 marker, -1 for null, 1 then the struct.
"""

from __future__ import annotations

import io

import pytest

from kproto.schema.api_versions import v0 as api_versions_v0
from kproto.schema.api_versions import v3 as api_versions_v3
from kproto.schema.api_versions.v0.response import ApiVersion as ApiVersionV0
from kproto.schema.api_versions.v3.response import (
    ApiVersion as ApiVersionV3,
)
from kproto.schema.api_versions.v3.response import (
    FinalizedFeatureKey,
    SupportedFeatureKey,
)
from kproto.schema.describe_topic_partitions.v0 import DescribeTopicPartitionsRequest
from kproto.schema.describe_topic_partitions.v0.request import Cursor, TopicRequest
from kproto.schema.metadata import v1 as metadata_v1
from kproto.schema.metadata import v12 as metadata_v12
from kproto.schema.metadata.v1.request import MetadataRequestTopic as MetadataTopicV1
from kproto.schema.metadata.v12.request import MetadataRequestTopic as MetadataTopicV12
from kproto.schema.request_header import v1 as header_v1
from kproto.schema.request_header import v2 as header_v2
from kproto.serial import decode, encode, entity_reader, entity_writer

_TOPIC_ID = "0123456789abcdef0123456789abcdef"


def _hex(text: str) -> bytes:
    """Hex digits with ``#`` comments and any whitespace."""
    return bytes.fromhex(" ".join(line.split("#", 1)[0] for line in text.splitlines()))


VECTORS = [
    pytest.param(
        header_v1.RequestHeader(
            request_api_key=18, request_api_version=0, correlation_id=7, client_id="cli"
        ),
        """
        0012            # request_api_key int16 = 18 (ApiVersions)
        0000            # request_api_version int16 = 0
        00000007        # correlation_id int32 = 7
        0003 636c69     # client_id NULLABLE_STRING: int16 length 3, "cli"
        """,
        id="RequestHeader-v1",
    ),
    pytest.param(
        header_v1.RequestHeader(
            request_api_key=3, request_api_version=1, correlation_id=-2, client_id=None
        ),
        """
        0003            # request_api_key int16 = 3 (Metadata)
        0001            # request_api_version int16 = 1
        fffffffe        # correlation_id int32 = -2
        ffff            # client_id null: int16 -1
        """,
        id="RequestHeader-v1-null-client",
    ),
    pytest.param(
        header_v2.RequestHeader(
            request_api_key=18,
            request_api_version=3,
            correlation_id=1,
            client_id="kproto",
        ),
        """
        0012            # request_api_key int16 = 18
        0003            # request_api_version int16 = 3
        00000001        # correlation_id int32 = 1
        0006 6b70726f746f  # client_id stays classic in v2: int16 length 6, "kproto"
        00              # tagged fields: none
        """,
        id="RequestHeader-v2",
    ),
    pytest.param(
        api_versions_v3.ApiVersionsRequest(
            client_software_name="kproto", client_software_version="0.1"
        ),
        """
        07 6b70726f746f  # client_software_name COMPACT_STRING: uvarint 6+1, "kproto"
        04 302e31        # client_software_version COMPACT_STRING: uvarint 3+1, "0.1"
        00               # tagged fields: none
        """,
        id="ApiVersionsRequest-v3",
    ),
    pytest.param(
        api_versions_v0.ApiVersionsResponse(
            error_code=0,
            api_keys=(
                ApiVersionV0(api_key=0, min_version=0, max_version=9),
                ApiVersionV0(api_key=18, min_version=0, max_version=3),
            ),
        ),
        """
        0000            # error_code int16 = 0
        00000002        # api_keys ARRAY: int32 count 2
        0000 0000 0009  #   [0] api_key 0, min_version 0, max_version 9
        0012 0000 0003  #   [1] api_key 18, min_version 0, max_version 3
        """,
        id="ApiVersionsResponse-v0",
    ),
    pytest.param(
        api_versions_v3.ApiVersionsResponse(
            error_code=0,
            api_keys=(ApiVersionV3(api_key=18, min_version=0, max_version=4),),
            throttle_time_ms=0,
            supported_features=(
                SupportedFeatureKey(
                    name="metadata.version", min_version=1, max_version=20
                ),
            ),
            finalized_features_epoch=5,
            finalized_features=(
                FinalizedFeatureKey(
                    name="metadata.version", max_version_level=20, min_version_level=20
                ),
            ),
        ),
        """
        0000            # error_code int16 = 0
        02              # api_keys COMPACT_ARRAY: uvarint 1+1
        0012 0000 0004  #   [0] api_key 18, min_version 0, max_version 4
        00              #   [0] tagged fields: none
        00000000        # throttle_time_ms int32 = 0
        03              # tagged fields: 3 (zk_migration_ready=False is its default: omitted)
        00 17           #   tag 0 (supported_features), size 23
        02              #     COMPACT_ARRAY: uvarint 1+1
        11 6d657461646174612e76657273696f6e  # name: uvarint 16+1, "metadata.version"
        0001 0014       #     min_version 1, max_version 20
        00              #     tagged fields: none
        01 08           #   tag 1 (finalized_features_epoch), size 8
        0000000000000005  #   int64 = 5
        02 17           #   tag 2 (finalized_features), size 23
        02              #     COMPACT_ARRAY: uvarint 1+1
        11 6d657461646174612e76657273696f6e  # name: uvarint 16+1, "metadata.version"
        0014 0014       #     max_version_level 20, min_version_level 20
        00              #     tagged fields: none
        """,
        id="ApiVersionsResponse-v3-tagged",
    ),
    pytest.param(
        api_versions_v3.ApiVersionsResponse(
            error_code=35, api_keys=(), throttle_time_ms=0
        ),
        """
        0023            # error_code int16 = 35 (UNSUPPORTED_VERSION)
        01              # api_keys COMPACT_ARRAY: uvarint 0+1 (empty)
        00000000        # throttle_time_ms int32 = 0
        00              # tagged fields: all at their defaults (epoch -1 etc.), omitted
        """,
        id="ApiVersionsResponse-v3-defaults-omitted",
    ),
    pytest.param(
        metadata_v1.MetadataRequest(topics=None),
        """
        ffffffff        # topics: null ARRAY = int32 -1 (all topics)
        """,
        id="MetadataRequest-v1-null-topics",
    ),
    pytest.param(
        metadata_v1.MetadataRequest(topics=(MetadataTopicV1(name="t1"),)),
        """
        00000001        # topics ARRAY: int32 count 1
        0002 7431       #   [0] name STRING: int16 length 2, "t1"
        """,
        id="MetadataRequest-v1",
    ),
    pytest.param(
        metadata_v12.MetadataRequest(
            topics=(
                MetadataTopicV12(
                    topic_id=__import__("uuid").UUID(_TOPIC_ID), name="orders"
                ),
            ),
            allow_auto_topic_creation=True,
            include_topic_authorized_operations=False,
        ),
        f"""
        02              # topics COMPACT_ARRAY: uvarint 1+1
        {_TOPIC_ID}     #   [0] topic_id UUID (16 bytes)
        07 6f7264657273 #   [0] name COMPACT_NULLABLE_STRING: uvarint 6+1, "orders"
        00              #   [0] tagged fields: none
        01              # allow_auto_topic_creation bool = true
        00              # include_topic_authorized_operations bool = false
        00              # tagged fields: none
        """,
        id="MetadataRequest-v12",
    ),
    pytest.param(
        metadata_v12.MetadataRequest(topics=None, allow_auto_topic_creation=False),
        """
        00              # topics: null COMPACT_ARRAY = uvarint 0
        00              # allow_auto_topic_creation bool = false
        00              # include_topic_authorized_operations bool = false
        00              # tagged fields: none
        """,
        id="MetadataRequest-v12-null-topics",
    ),
    pytest.param(
        DescribeTopicPartitionsRequest(
            topics=(TopicRequest(name="a"),),
            response_partition_limit=2000,
            cursor=Cursor(topic_name="a", partition_index=3),
        ),
        """
        02              # topics COMPACT_ARRAY: uvarint 1+1
        02 61 00        #   [0] name "a", tagged fields: none
        000007d0        # response_partition_limit int32 = 2000
        01              # cursor: nullable struct present marker int8 1 (KIP-893)
        02 61           #   topic_name COMPACT_STRING "a"
        00000003        #   partition_index int32 = 3
        00              #   tagged fields: none
        00              # tagged fields: none
        """,
        id="DescribeTopicPartitionsRequest-v0-cursor",
    ),
    pytest.param(
        DescribeTopicPartitionsRequest(
            topics=(), response_partition_limit=1, cursor=None
        ),
        """
        01              # topics COMPACT_ARRAY: uvarint 0+1 (empty)
        00000001        # response_partition_limit int32 = 1
        ff              # cursor: null struct marker int8 -1 (KIP-893)
        00              # tagged fields: none
        """,
        id="DescribeTopicPartitionsRequest-v0-null-cursor",
    ),
    pytest.param(
        api_versions_v3.ApiVersionsRequest(
            client_software_name="k",
            client_software_version="1",
            unknown_tagged_fields=((5, b"\x01\x02"), (200, b"")),
        ),
        """
        02 6b           # client_software_name "k"
        02 31           # client_software_version "1"
        02              # tagged fields: 2, both unknown to this version
        05 02 0102      #   tag 5, size 2, raw bytes 01 02 (kept as they are)
        c801 00         #   tag 200 (uvarint c8 01), size 0
        """,
        id="ApiVersionsRequest-v3-unknown-tags",
    ),
    pytest.param(
        api_versions_v3.ApiVersionsResponse(
            error_code=0,
            api_keys=(),
            throttle_time_ms=1,
            zk_migration_ready=True,
            unknown_tagged_fields=((1000, b"\xaa"),),
        ),
        """
        0000            # error_code int16 = 0
        01              # api_keys COMPACT_ARRAY: empty
        00000001        # throttle_time_ms int32 = 1
        02              # tagged fields: 2
        03 01 01        #   tag 3 (zk_migration_ready), size 1, true
        e807 01 aa      #   tag 1000 (uvarint e8 07) unknown, size 1, raw byte aa
        """,
        id="ApiVersionsResponse-v3-known-and-unknown-tags",
    ),
]


@pytest.mark.parametrize(("entity", "wire"), VECTORS)
def test_encode(entity: object, wire: str) -> None:
    assert encode(entity).hex() == _hex(wire).hex()


@pytest.mark.parametrize(("entity", "wire"), VECTORS)
def test_decode(entity: object, wire: str) -> None:
    assert decode(type(entity), _hex(wire)) == entity


@pytest.mark.parametrize(("entity", "wire"), VECTORS)
def test_stream_roundtrip(entity: object, wire: str) -> None:
    """Through ``IO[bytes]``: exact consumption, followed by a second copy."""
    cls = type(entity)
    out = io.BytesIO()
    entity_writer(cls)(out, entity)
    entity_writer(cls)(out, entity)
    data = _hex(wire)
    assert out.getvalue() == data + data
    stream = io.BytesIO(out.getvalue())
    read = entity_reader(cls)
    assert read(stream) == entity
    assert stream.tell() == len(data)
    assert read(stream) == entity
    assert stream.tell() == 2 * len(data)
