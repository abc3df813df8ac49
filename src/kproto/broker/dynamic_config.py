"""What Kafka keeps in its metadata log besides topics: group configs
(``ConfigRecord`` of GROUP resources), dynamic broker configs (``ConfigRecord`` of
BROKER resources), client metrics subscriptions (``ConfigRecord`` of CLIENT_METRICS
resources, KIP-714), client quotas (``ClientQuotaRecord``) and finalized feature
levels (``FeatureLevelRecord``).

This broker has no metadata log: :class:`DynamicConfigs` holds them and saves them
to ``<data_dir>/kproto-dynamic-configs.json`` (atomically, through a rename) on each
change, and reads them back on start. Validation lives with each kind:
:mod:`kproto.broker.group_config`, :mod:`kproto.broker.client_quotas`,
:mod:`kproto.broker.features`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from kproto.broker.checkpoint import write_atomic

__all__ = ["DynamicConfigs", "QuotaEntity", "DYNAMIC_CONFIGS_FILE"]

DYNAMIC_CONFIGS_FILE = "kproto-dynamic-configs.json"

#: A client quota entity: sorted ``(entity_type, entity_name)`` pairs, the name
#: ``None`` for a default entity (e.g. ``(("client-id", None), ("user", "alice"))``).
QuotaEntity = tuple[tuple[str, str | None], ...]


class DynamicConfigs:
    """Group configs, client quotas and finalized features of one cluster.

    Attributes:
        group_configs: group id -> explicitly set configs.
        client_metrics: subscription name -> its configs
            (:mod:`kproto.broker.client_metrics`).
        broker_configs: ``""`` (the cluster-wide default) or a node id (as a
            string) -> dynamic broker configs set by AlterConfigs
            (:mod:`kproto.broker.broker_config`).
        quotas: entity -> ``{quota key: value}``.
        features: finalized feature name -> level (absent: level 0, off).
        features_epoch: bumped on every feature change (ApiVersions'
            ``finalized_features_epoch``).
    """

    def __init__(
        self, data_dir: Path, default_features: Mapping[str, int] | None = None
    ) -> None:
        self.path = data_dir / DYNAMIC_CONFIGS_FILE
        self.group_configs: dict[str, dict[str, str]] = {}
        self.client_metrics: dict[str, dict[str, str]] = {}
        self.broker_configs: dict[str, dict[str, str]] = {}
        self.quotas: dict[QuotaEntity, dict[str, float]] = {}
        self.features: dict[str, int] = dict(default_features or {})
        self.features_epoch = 0

    def load(self) -> None:
        """Read the saved file, if any.

        Raises:
            ValueError: the file is not what :meth:`save` writes (its path named).
            OSError: it cannot be read.
        """
        if not self.path.exists():
            return
        try:
            saved = json.loads(self.path.read_text())
            self.group_configs = {
                str(g): {str(k): str(v) for k, v in c.items()}
                for g, c in saved["group_configs"].items()
            }
            self.client_metrics = {
                str(name): {str(k): str(v) for k, v in c.items()}
                for name, c in saved.get("client_metrics", {}).items()
            }
            self.broker_configs = {
                str(b): {str(k): str(v) for k, v in c.items()}
                for b, c in saved.get("broker_configs", {}).items()
            }
            self.quotas = {
                tuple((str(t), n) for t, n in entry["entity"]): {
                    str(k): float(v) for k, v in entry["values"].items()
                }
                for entry in saved["quotas"]
            }
            self.features = {str(k): int(v) for k, v in saved["features"].items()}
            self.features_epoch = int(saved["features_epoch"])
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise ValueError(f"{self.path}: not a kproto dynamic configs file") from exc

    def save(self) -> None:
        """Write the file atomically (a crash leaves the old or the new one)."""
        body = {
            "group_configs": self.group_configs,
            "client_metrics": self.client_metrics,
            "broker_configs": self.broker_configs,
            "quotas": [
                {"entity": [list(pair) for pair in entity], "values": values}
                for entity, values in self.quotas.items()
            ],
            "features": self.features,
            "features_epoch": self.features_epoch,
        }
        write_atomic(self.path, json.dumps(body, indent=1))
