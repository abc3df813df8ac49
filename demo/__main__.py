"""``python -m demo`` (what ``make demo`` runs)."""

from demo import main

raise SystemExit(main())
