"""The default cache folder is the repository's ``cache/`` (git-ignored, emptied by ``make clean-cache``), not
``core/cache/``, where it went after core/ moved into packages by layer (paths.py one floor deeper)."""
import subprocess
from pathlib import Path

from core.foundations.paths import DEFAULT_CACHE_DIR, cache_dir

ROOT = Path(__file__).resolve().parent.parent


def test_the_default_cache_is_the_repositorys_ignored_cache_folder(monkeypatch):
    monkeypatch.delenv("MIA_CACHE_DIR", raising=False)
    assert cache_dir() == DEFAULT_CACHE_DIR == ROOT / "cache"
    assert "clean-cache:\n\trm -rf cache/*" in (ROOT / "Makefile").read_text()
    probe = "cache/v4.2/result/x"  # what git would see of an entry written there
    ignored = subprocess.run(["git", "check-ignore", "-q", "--no-index", probe], cwd=ROOT)
    assert ignored.returncode == 0
