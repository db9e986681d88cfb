import fcntl
import os
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("MIA_DEVICE", "cpu")
if os.environ.get("PYTEST_XDIST_WORKER"):
    # `make test` runs two pytest-xdist workers on a 2-core machine: one torch thread each (read when
    # torch loads, so set before any test module imports it; the CLI, worker and pool processes the
    # tests start inherit it, and core.foundations.device.configure_threads keeps it), else each
    # worker's thread pool spins against the other's. A value set by hand is kept.
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    os.environ.setdefault("MKL_NUM_THREADS", "1")


@pytest.fixture(autouse=True)
def isolated_cache(tmp_path, monkeypatch):
    """Every test gets its own empty cache folder."""
    monkeypatch.setenv("MIA_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.fixture(scope="session")
def built_once(tmp_path_factory):
    """``build(name, make)``: the folder ``name`` that ``make(folder)`` fills, made once per test run
    and shared by the xdist workers (the first to ask makes it under a file lock; the other waits for
    the lock, then reads it). Treat it as read-only: copy it where a test writes."""
    base = tmp_path_factory.getbasetemp()
    # under xdist each worker's base is …/pytest-N/popen-gwK: their parent is this run's, shared
    root = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "built-once"
    root.mkdir(exist_ok=True)

    def build(name, make):
        done = root / name
        with open(root / f"{name}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not done.exists():
                partial = root / f"{name}.partial"
                shutil.rmtree(partial, ignore_errors=True)
                partial.mkdir()
                make(partial)
                partial.rename(done)  # whole or not at all
        return done

    return build


@pytest.fixture
def tiny_image_runs(built_once, isolated_cache, monkeypatch):
    """``cache(repeats)``: this test's image quick preset is the tiny one (tests/shared_runs.py) and
    its cache holds ``repeats`` (1 or 2) paired FFNN/RNN repeats of it with the Defenses page's
    default curves, copied from a build made once per test run instead of trained per test."""
    import streamlit as st
    from shared_runs import build_tiny_image_runs, use_tiny_image_preset

    def cache(repeats):
        one = built_once("tiny-image-r1", lambda f: build_tiny_image_runs(f, 1))
        folder = one if repeats == 1 else built_once(
            f"tiny-image-r{repeats}", lambda f: build_tiny_image_runs(f, repeats, base=one))
        shutil.copytree(folder, isolated_cache, dirs_exist_ok=True)
        use_tiny_image_preset(monkeypatch)
        st.cache_data.clear()  # a page's in-memory answers about another test's cache (keyed by config hash)
        return isolated_cache

    return cache


@pytest.fixture(autouse=True)
def restore_torch_threads():
    """A test that sizes torch's thread pool (the CLI's ``configure_threads``, a test's
    ``set_num_threads``) leaves the next test the count it found."""
    torch = sys.modules.get("torch")
    before = torch.get_num_threads() if torch is not None else None
    yield
    torch = sys.modules.get("torch")
    if torch is not None and before is not None and torch.get_num_threads() != before:
        torch.set_num_threads(before)


@pytest.fixture(autouse=True)
def restore_main_module():
    """Streamlit's AppTest makes the script it runs ``sys.modules["__main__"]`` and leaves it there;
    a process pool started later (spawn) re-runs that script in every worker — a deleted
    ``AppTest.from_function`` script kills them. Each test gets back the ``__main__`` it started with."""
    main = sys.modules.get("__main__")
    yield
    if main is not None:
        sys.modules["__main__"] = main



def _xdist_groups(path: Path) -> tuple[str | None, dict[str, str]]:
    """Read from a test file's source: its module-wide ``xdist_group`` (``pytestmark``) and, per test
    function, its own group — an ``@pytest.mark.xdist_group`` decorator, else the module's name when
    the test takes a fixture of the file built once per module (a trained model, a job queue)."""
    import ast

    def group_of(node):
        for mark in node.elts if isinstance(node, (ast.List, ast.Tuple)) else [node]:
            if (isinstance(mark, ast.Call) and isinstance(mark.func, ast.Attribute) and mark.func.attr == "xdist_group"
                    and mark.args and isinstance(mark.args[0], ast.Constant)):
                return str(mark.args[0].value)
        return None

    tree = ast.parse(path.read_text())
    module_group, shared, groups = None, set(), {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "pytestmark" for t in node.targets):
            module_group = group_of(node.value)
        if isinstance(node, ast.FunctionDef):
            for dec in node.decorator_list:
                if isinstance(dec, ast.Call) and any(k.arg == "scope" and getattr(k.value, "value", None) in
                                                     ("module", "package", "session") for k in dec.keywords):
                    shared.add(node.name)
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test"):
            own = next((g for g in map(group_of, node.decorator_list) if g), None)
            if own is None and shared & {a.arg for a in node.args.args}:
                own = path.stem
            if own is not None:
                groups[node.name] = own
    return module_group, groups


@pytest.hookimpl(optionalhook=True)  # a hook of xdist's: without the plugin (-p no:xdist) it is not called
def pytest_xdist_make_scheduler(config, log):
    """``--dist loadgroup`` (``make test``) as xdist documents it: tests sharing an ``xdist_group`` run
    on one worker, the rest are handed out one by one. xdist 3.8's own loadgroup reads the group from
    a suffix it appends to the test id, which pytest 9 no longer lets it set (every test ran ungrouped),
    so the groups are read here from the test files' source (``_xdist_groups``); a test that takes a
    fixture built once per module is grouped with its module's other such tests, so the fixture is built
    on one worker only. Groups are sent first, largest first (xdist's ``loadscope`` order)."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    files: dict[str, tuple[str | None, dict[str, str]]] = {}

    class GroupScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path, _, rest = nodeid.partition("::")
            if path not in files:
                source = Path(config.rootpath) / path
                files[path] = _xdist_groups(source) if source.suffix == ".py" and source.is_file() else (None, {})
            module_group, groups = files[path]
            name = rest.split("::")[-1].split("[")[0]
            group = groups.get(name) or module_group
            return f"group:{group}" if group else nodeid

    return GroupScheduling(config, log)


def cpu_has_bf16_lstm() -> bool:
    """Whether this CPU's oneDNN runs an LSTM under bfloat16 autocast (AMD EPYC without AVX-512 BF16 does not:
    "could not create a primitive descriptor"); the product then refuses bf16 for such a model in one line."""
    import torch
    try:
        with torch.autocast("cpu", dtype=torch.bfloat16):
            torch.nn.LSTM(4, 4, batch_first=True)(torch.randn(2, 3, 4))
        return True
    except RuntimeError:
        return False

