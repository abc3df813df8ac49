"""The features ApiVersions reports and UpdateFeatures (handlers/features.py)."""

from __future__ import annotations

from pathlib import Path

from kproto.broker import Cluster
from kproto.connection import Connection
from kproto.errors import ErrorCode
from kproto.index import ApiKey, api_versions
from tests.broker.handlers.support import connect, send


def test_api_versions_reports_features(conn: Connection) -> None:
    answer = send(
        conn,
        ApiKey.API_VERSIONS,
        3,
        client_software_name="t",
        client_software_version="1",
    )
    supported = {
        f.name: (f.min_version, f.max_version) for f in answer.supported_features
    }
    assert supported["metadata.version"] == (7, 25)
    finalized = {f.name: f.max_version_level for f in answer.finalized_features}
    assert finalized["metadata.version"] == 25


def test_update_features(tmp_path: Path) -> None:
    with Cluster(data_dir=tmp_path) as c:
        conn = connect(c, c.state.node_ids[0])
        for version in api_versions(ApiKey.UPDATE_FEATURES):
            kind = {"upgrade_type": 1} if version >= 1 else {"allow_downgrade": False}
            bad = send(
                conn,
                ApiKey.UPDATE_FEATURES,
                version,
                timeout_ms=1000,
                feature_updates=[
                    {"feature": "group.version", "max_version_level": 0, **kind},
                    {"feature": "no.such.version", "max_version_level": 1, **kind},
                ],
            )
            assert bad.error_code == ErrorCode.INVALID_UPDATE_VERSION
            if version < 2:
                assert [r.error_code for r in bad.results] == [
                    ErrorCode.INVALID_UPDATE_VERSION
                ] * 2
            down = send(
                conn,
                ApiKey.UPDATE_FEATURES,
                version,
                timeout_ms=1000,
                feature_updates=[
                    {"feature": "metadata.version", "max_version_level": 20, **kind}
                ],
            )
            assert down.error_code == ErrorCode.INVALID_UPDATE_VERSION
        ok = conn.request(
            ApiKey.UPDATE_FEATURES,
            timeout_ms=1000,
            validate_only=False,
            feature_updates=[  # level 0 disables; a downgrade must say so
                {"feature": "share.version", "max_version_level": 0, "upgrade_type": 2}
            ],
        )
        assert ok.error_code == ErrorCode.NONE, ok.error_message
        conn.close()
        conn = connect(c, c.state.node_ids[0])
        finalized = {
            f.name: f.max_version_level
            for f in conn.api_versions_response.finalized_features
        }
        assert finalized == {"metadata.version": 25, "group.version": 1}
        assert conn.api_versions_response.finalized_features_epoch == 1
        conn.close()
    with Cluster(data_dir=tmp_path) as c:
        conn = connect(c, c.state.node_ids[0])
        finalized = {
            f.name: f.max_version_level
            for f in conn.api_versions_response.finalized_features
        }
        assert "share.version" not in finalized
        conn.close()
