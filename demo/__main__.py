"""``python -m demo`` (what ``make demo`` runs)."""

import sys

from demo import main

sys.exit(main())
