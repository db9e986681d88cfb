import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("MIA_DEVICE", "cpu")


@pytest.fixture(autouse=True)
def isolated_cache(tmp_path, monkeypatch):
    """Every test gets its own empty cache folder."""
    monkeypatch.setenv("MIA_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"
