"""Feature versions (KIP-584): the supported and finalized features that
ApiVersions v3+ reports in its tagged fields, and UpdateFeatures.

Sources: ``ApiVersionsResponse.json`` (tags 0-2: ``supported_features``,
``finalized_features_epoch``, ``finalized_features``), ``UpdateFeaturesRequest/
Response.json`` v0-v2 (``upgrade_type`` and ``validate_only`` since v1, no
per-feature results since v2); Kafka's ``FeatureControlManager.updateFeatures``:
each update is checked (a known feature, a level in the supported range, no
downgrade unless the upgrade type allows it, ``metadata.version`` never
downgraded) and the request is applied all or nothing; a refusal is
INVALID_UPDATE_VERSION for the whole request.

The ranges are what this broker supports (:data:`FEATURES`); the finalized
levels start at each feature's ``default_level`` and are stored by
:class:`kproto.broker.dynamic_config.DynamicConfigs`. Finalizing a level records it
and reports it to clients; ``transaction.version`` 2 also switches on KIP-890
part 2's transaction rules (:mod:`kproto.broker.txn`), the other levels switch
no behaviour of this broker on or off.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from kproto.broker.handlers.context import RequestContext, respond
from kproto.broker.state import ClusterState
from kproto.errors import ErrorCode

__all__ = [
    "FEATURES",
    "Feature",
    "finalized_features",
    "api_versions_feature_fields",
    "update_features",
]


@attrs.frozen
class Feature:
    """A feature this broker supports: the levels ``min_version`` to
    ``max_version``, and the level a new cluster finalizes (0: not enabled)."""

    min_version: int
    max_version: int
    default_level: int = 0


#: Every feature this broker supports (``metadata.version`` 7 is 3.3-IV3, the
#: lowest KRaft level Kafka 4 accepts; 25 is 4.0-IV3). A new cluster finalizes
#: ``metadata.version`` 25, and ``group.version`` 1 and ``share.version`` 1: the
#: KIP-848 consumer group protocol and share groups are served.
FEATURES: Mapping[str, Feature] = {
    "metadata.version": Feature(7, 25, default_level=25),
    "kraft.version": Feature(0, 0),
    "transaction.version": Feature(0, 2),
    "group.version": Feature(0, 1, default_level=1),
    "share.version": Feature(0, 1, default_level=1),
    "streams.version": Feature(0, 0),
    "eligible.leader.replicas.version": Feature(0, 0),
}

# FeatureUpdate.UpgradeType: UPGRADE 1, SAFE_DOWNGRADE 2, UNSAFE_DOWNGRADE 3.
_UPGRADE, _SAFE_DOWNGRADE, _UNSAFE_DOWNGRADE = 1, 2, 3


def finalized_features(state: ClusterState) -> dict[str, int]:
    """The finalized level of each enabled feature (level 0: not listed)."""
    defaults = {name: f.default_level for name, f in FEATURES.items()}
    levels = {**defaults, **state.dynamic.features}
    return {name: level for name, level in sorted(levels.items()) if level > 0}


def api_versions_feature_fields(state: ClusterState) -> dict[str, Any]:
    """ApiVersions v3+'s tagged feature fields (ignored by older versions)."""
    return {
        "supported_features": [
            {"name": name, "min_version": f.min_version, "max_version": f.max_version}
            for name, f in sorted(FEATURES.items())
        ],
        "finalized_features_epoch": state.dynamic.features_epoch,
        "finalized_features": [
            {"name": name, "max_version_level": level, "min_version_level": level}
            for name, level in finalized_features(state).items()
        ],
    }


def _check(name: str, level: int, upgrade_type: int, current: int) -> str | None:
    """Why ``name`` may not go to ``level`` (None: it may)."""
    if upgrade_type not in (_UPGRADE, _SAFE_DOWNGRADE, _UNSAFE_DOWNGRADE):
        return "The controller does not support the given upgrade type."
    if level < 0:
        return "A feature version cannot be less than 0."
    supported = FEATURES.get(name)
    if supported is None:
        return "The controller does not support the given feature."
    low, high = supported.min_version, supported.max_version
    if (level != 0 and not low <= level <= high) or (level == 0 and low > 0):
        return f"The controller only supports versions {low}-{high}."
    if level < current:
        if upgrade_type == _UPGRADE:
            return "Can't downgrade to a lower version."
        if name == "metadata.version":
            return (
                "Refusing to perform the requested downgrade because it might "
                "delete metadata information."
            )
    return None


async def update_features(ctx: RequestContext, request: Any) -> Any:
    """Finalize the requested levels, all or nothing (level 0 disables a feature)."""
    store = ctx.state.dynamic
    current = finalized_features(ctx.state)
    error, message = ErrorCode.NONE, None
    new: dict[str, int] = {}
    for update in request.feature_updates:
        if hasattr(update, "upgrade_type"):
            kind = update.upgrade_type
        else:
            kind = _SAFE_DOWNGRADE if update.allow_downgrade else _UPGRADE
        level = update.max_version_level
        if update.feature in new:
            reason: str | None = "The feature is given more than once."
        else:
            reason = _check(update.feature, level, kind, current.get(update.feature, 0))
        if reason is not None:
            error = ErrorCode.INVALID_UPDATE_VERSION
            message = (
                f"Invalid update version {level} for feature {update.feature}. {reason}"
            )
            break
        new[update.feature] = level
    if error == ErrorCode.NONE and new and not getattr(request, "validate_only", False):
        store.features.update(new)
        store.features_epoch += 1
        store.save()
    results = [
        {"feature": u.feature, "error_code": error, "error_message": message}
        for u in request.feature_updates
    ]
    return respond(
        ctx,
        throttle_time_ms=0,
        error_code=error,
        error_message=message,
        results=results if ctx.api_version < 2 else [],
    )
