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


@pytest.fixture(autouse=True)
def restore_main_module():
    """Streamlit's AppTest makes the script it runs ``sys.modules["__main__"]`` and leaves it there;
    a process pool started later (spawn) re-runs that script in every worker — a deleted
    ``AppTest.from_function`` script kills them. Each test gets back the ``__main__`` it started with."""
    main = sys.modules.get("__main__")
    yield
    if main is not None:
        sys.modules["__main__"] = main

