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

The ranges are what this broker supports (:data:`SUPPORTED_FEATURES`); the
finalized levels start at :data:`DEFAULT_FINALIZED_FEATURES` and are stored by
:class:`kproto.broker.dynamic_config.DynamicConfigs`. Finalizing a level records it
and reports it to clients; ``transaction.version`` 2 also switches on KIP-890
part 2's transaction rules (:mod:`kproto.broker.txn`), the other levels switch
no behaviour of this broker on or off.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kproto.broker.handlers.context import RequestContext, respond
from kproto.broker.state import ClusterState
from kproto.errors import ErrorCode

__all__ = [
    "SUPPORTED_FEATURES",
    "DEFAULT_FINALIZED_FEATURES",
    "finalized_features",
    "api_versions_feature_fields",
    "update_features",
]

#: ``feature -> (min level, max level)`` this broker supports (``metadata.version``
#: 7 is 3.3-IV3, the lowest KRaft level Kafka 4 accepts; 25 is 4.0-IV3).
SUPPORTED_FEATURES: Mapping[str, tuple[int, int]] = {
    "metadata.version": (7, 25),
    "kraft.version": (0, 0),
    "transaction.version": (0, 2),
    "group.version": (0, 1),
    "share.version": (0, 1),
    "streams.version": (0, 0),
    "eligible.leader.replicas.version": (0, 0),
}

#: The finalized levels of a new cluster (``group.version`` 1 and ``share.version``
#: 1: the KIP-848 consumer group protocol and share groups are served).
DEFAULT_FINALIZED_FEATURES: Mapping[str, int] = {
    "metadata.version": 25,
    "group.version": 1,
    "share.version": 1,
}

# FeatureUpdate.UpgradeType: UPGRADE 1, SAFE_DOWNGRADE 2, UNSAFE_DOWNGRADE 3.
_UPGRADE, _SAFE_DOWNGRADE, _UNSAFE_DOWNGRADE = 1, 2, 3


def finalized_features(state: ClusterState) -> dict[str, int]:
    """The finalized level of each enabled feature (level 0: not listed)."""
    levels = {**DEFAULT_FINALIZED_FEATURES, **state.dynamic.features}
    return {name: level for name, level in sorted(levels.items()) if level > 0}


def api_versions_feature_fields(state: ClusterState) -> dict[str, Any]:
    """ApiVersions v3+'s tagged feature fields (ignored by older versions)."""
    return {
        "supported_features": [
            {"name": name, "min_version": low, "max_version": high}
            for name, (low, high) in sorted(SUPPORTED_FEATURES.items())
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
    supported = SUPPORTED_FEATURES.get(name)
    if supported is None:
        return "The controller does not support the given feature."
    low, high = supported
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
