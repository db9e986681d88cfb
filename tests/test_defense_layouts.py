"""The defenses typed from birth write and read the JSON written before they were typed.

``tests/data/defense_layouts/`` holds what the code of af87210 (before: points, sweeps and defend results as
dicts) wrote for a tiny image config: the CLI's ``defend`` JSON (Dir_k with both attackers, an L2 sweep, a
DP-SGD sweep) and two cache entries (a full defended point, a slider's fast point), made by
``tests/data/defense_layouts/make_layouts.py``. Read typed, each is written back byte for byte; the typed code
run on the same config writes the same layout (every key, in the same order, at every level) and the same
values of everything that is not measured (the measured numbers depend on the machine's float arithmetic)."""
import json
from pathlib import Path

import pytest

from core.defenses.defense_results import DefenseRun
from core.experiment.results import DefendedPoint
from core.foundations.version import unstamped

LAYOUTS = Path(__file__).resolve().parent / "data" / "defense_layouts"
CLI_FILES = ("defend_dirichlet.json", "defend_l2.json", "defend_dpsgd.json")
CACHE_FILES = ("cache_defended_both_k10.json", "cache_defended_fast_noquantile_k3.json")


@pytest.mark.parametrize("name", CLI_FILES)
def test_the_cli_json_of_before_reads_typed_and_writes_back_byte_for_byte(name):
    text = (LAYOUTS / name).read_text()
    run = DefenseRun.from_dict(json.loads(text))
    assert json.dumps(run.to_dict(), indent=2) + "\n" == text  # core.foundations.fileio.write_json_atomically's bytes
    assert run.points and all(isinstance(p, DefendedPoint) for p in run.points)
    assert run.baseline.attack.name == run.points[0].attack.name


def test_the_typed_reads_of_before_say_what_the_dicts_said():
    dirichlet = DefenseRun.from_dict(json.loads((LAYOUTS / "defend_dirichlet.json").read_text()))
    raw = json.loads((LAYOUTS / "defend_dirichlet.json").read_text())
    for point, d in zip(dirichlet.points, raw["points"]):
        assert point.value == d["value"] and point.attack.accuracy == d["attack"]["accuracy"]
        assert point.adaptive_attack.auc == d["adaptive_attack"]["auc"] and point.utility_loss == d["utility_loss"]
        assert point.guarantee == d["guarantee"] and point.epsilon_hat == d["epsilon_lower_bound"]
    dp = DefenseRun.from_dict(json.loads((LAYOUTS / "defend_dpsgd.json").read_text()))
    block = json.loads((LAYOUTS / "defend_dpsgd.json").read_text())["points"][0]["dpsgd"]
    assert dp.points[0].dpsgd.noise_multiplier == block["noise_multiplier"] == 2.0
    assert dp.points[0].dpsgd.epsilon_by("prv") == block["epsilons"]["prv"]
    assert dp.utility_cost_comparison.values == () and "no RNN point" in dp.utility_cost_comparison.summary


@pytest.mark.parametrize("name", CACHE_FILES)
def test_the_cache_entries_of_before_read_typed_and_write_back_byte_for_byte(name):
    raw = (LAYOUTS / name).read_bytes()
    point = DefendedPoint.from_dict(json.loads(raw))
    # core.experiment.cache.ArtifactCache.put_json's bytes
    assert json.dumps(point.to_dict(), sort_keys=True).encode() == raw


def _layout(x):
    """Every key in order at every level, and the JSON type of every leaf."""
    if isinstance(x, dict):
        return [(k, _layout(v)) for k, v in x.items()]
    if isinstance(x, list):
        return [_layout(v) for v in x]
    return "number" if isinstance(x, (int, float)) and not isinstance(x, bool) else type(x).__name__


def _layouts_equal(new, old, where=""):
    """Assert the same layout, naming the first place it differs; a measured leaf may be null in one (a
    non-finite number, or an accountant that gives no ε) and a number in the other."""
    if isinstance(old, dict):
        assert isinstance(new, dict) and list(new) == list(old), (where, list(new), list(old))
        for k in old:
            _layouts_equal(new[k], old[k], f"{where}.{k}")
    elif isinstance(old, list) and not all(isinstance(v, (int, float)) or v is None for v in old):
        assert isinstance(new, list) and len(new) == len(old), where
        for i, (a, b) in enumerate(zip(new, old)):
            _layouts_equal(a, b, f"{where}[{i}]")
    else:
        assert _layout(new) == _layout(old) or None in (new, old) or isinstance(old, list), (where, new, old)


@pytest.fixture(scope="module")
def layouts_now(tmp_path_factory):
    """What this version writes for the same config (the script the files of before were made with)."""
    import runpy
    import sys

    out = tmp_path_factory.mktemp("now")
    mp = pytest.MonkeyPatch()
    mp.setenv("MIA_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
    mp.setattr(sys, "argv", ["make_layouts.py", str(out)])
    try:
        runpy.run_path(str(LAYOUTS / "make_layouts.py"), run_name="__main__")
    finally:
        mp.undo()
    return out


@pytest.mark.parametrize("name", CLI_FILES + CACHE_FILES)
def test_what_the_typed_code_writes_has_the_layout_of_before(layouts_now, name):
    # the envelope (schema, package version) is new in front; the layout under it is the layout of before
    old, new = (dict(unstamped(json.loads((d / name).read_text()))) for d in (LAYOUTS, layouts_now))
    _layouts_equal(new, old)
    if name in CLI_FILES:  # what is not measured: the same values
        for key in ("task", "arch", "preset", "mechanism", "attacker", "config_hash", "training_hash", "spec"):
            assert new[key] == old[key], key
        assert [p["value"] for p in new["points"]] == [p["value"] for p in old["points"]]
        assert [p.get("config_hash") for p in new["points"]] == [p.get("config_hash") for p in old["points"]]
    else:
        assert (new["value"], new["mechanism"], new["draws"]) == (old["value"], old["mechanism"], old["draws"])
