"""MkDocs hook: the site's navigation, built at each build.

Guides are every ``docs/guide/*.md``: the ones named in :data:`GUIDE_ORDER` first, in
that order, then any other guide by file name, so a new guide page appears in the nav
without editing ``mkdocs.yml``. The API reference pages are listed by
``docs/hooks/generated.py`` (:data:`generated.REFERENCE_PAGES`).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import generated  # noqa: E402  (the sibling hook module: its page list)

#: Guides in reading order; files not listed follow, sorted by name.
GUIDE_ORDER = (
    "entities.md",
    "records.md",
    "client.md",
    "serializers.md",
    "schema-registry.md",
    "schema-formats.md",
    "avro-arrow.md",
    "framing-and-proxy.md",
    "broker.md",
    "broker-configuration.md",
    "broker-groups.md",
    "broker-transactions.md",
    "internal-topics.md",
    "broker-refusals.md",
    "broker-faults.md",
    "client-metrics.md",
    "security.md",
    "cli.md",
    "spark.md",
    "speedups.md",
    "regeneration.md",
)


def guide_pages(docs_dir: Path) -> list[str]:
    """``guide/<name>.md`` for every guide, in reading order."""
    present = {p.name for p in (docs_dir / "guide").glob("*.md")}
    ordered = [name for name in GUIDE_ORDER if name in present]
    ordered += sorted(present - set(ordered))
    return [f"guide/{name}" for name in ordered]


def on_config(config: Any) -> Any:
    docs_dir = Path(config["docs_dir"])
    config["nav"] = [
        {"Home": "index.md"},
        {"Getting started": "getting-started.md"},
        {"Guides": guide_pages(docs_dir)},
        {
            "Reference": [
                "reference/index.md",
                "reference/schema.md",
                "reference/broker-apis.md",
                "reference/cli.md",
                {
                    "API": [
                        f"reference/api/{m}.md" for m in generated.reference_modules()
                    ]
                },
            ]
        },
        {"Performance": "performance.md"},
        {"Architecture": "architecture.md"},
        {"Contributing": "contributing.md"},
    ]
    return config
