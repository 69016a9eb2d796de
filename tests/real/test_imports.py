"""real.store, real.fit, real.compare, real.nccl_tests and real.cli load without torch (the webapp reads stores anywhere)."""

from __future__ import annotations

import subprocess
import sys


def test_reading_results_does_not_import_torch():
    code = (
        "import sys, real.store, real.fit, real.compare, real.nccl_tests, real.cli\n"
        "real.store.open_store(None).collectives()\n"
        "assert 'torch' not in sys.modules, 'torch was imported'\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
