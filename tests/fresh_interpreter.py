"""Running Python code in a fresh interpreter, for the tests of what an import loads
(or refuses) that this test process, with everything already imported, cannot show."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping


def run_python(
    code: str, *, env: Mapping[str, str] | None = None, timeout_s: float = 120
) -> subprocess.CompletedProcess[str]:
    """Run ``code`` as ``python -c`` with this test's interpreter (``env``: its
    environment, this process's by default), its output captured as text.

    Raises:
        AssertionError: it exited other than 0 (its stderr is the message).
        subprocess.TimeoutExpired: it ran past ``timeout_s`` seconds.
    """
    done = subprocess.run(
        [sys.executable, "-c", code],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done
