"""The one registry implementation (core.foundations.registry) and the five registries built on it."""
from __future__ import annotations

import sys
import types

import pytest

from core.foundations.errors import ConfigError
from core.foundations.registry import Registry


def test_register_get_and_list_in_order():
    reg: Registry[int] = Registry("widget")
    assert reg.register("b", 2) == 2 and reg.register("a", 1) == 1
    assert reg.names() == ("b", "a") and list(reg) == ["b", "a"] and len(reg) == 2
    assert reg.get("a") == 1 and reg["b"] == 2 and reg.values() == [2, 1] and reg.items() == [("b", 2), ("a", 1)]
    assert "a" in reg and "c" not in reg and 3 not in reg
    assert reg.find("a") == 1 and reg.find("c") is None and reg.find(None) is None  # type: ignore[arg-type]


def test_a_taken_name_is_refused_unless_the_same_item_or_replace():
    reg: Registry[object] = Registry("widget")
    first = object()
    reg.register("w", first)
    assert reg.register("w", first) is first  # the same item again: a no-op (a module imported twice)
    with pytest.raises(ConfigError, match=r"^widget 'w' is already registered$"):
        reg.register("w", object())
    assert reg.get("w") is first  # the refused one did not replace it
    second = object()
    assert reg.register("w", second, replace=True) is second and reg.get("w") is second
    for bad in ("", None, 3):
        with pytest.raises(ConfigError, match="needs a non-empty name"):
            reg.register(bad, object())  # type: ignore[arg-type]


def test_an_unknown_name_is_one_line_listing_the_known_ones():
    reg: Registry[int] = Registry("gadget")
    reg.register("x", 1)
    reg.register("y", 2)
    with pytest.raises(ConfigError) as err:
        reg.get("z")
    assert str(err.value) == "unknown gadget 'z'; known: x, y"
    with pytest.raises(ConfigError, match=r"unknown gadget \['x'\]"):
        reg.get(["x"])  # type: ignore[arg-type]  (never a TypeError from hashing it)
    with pytest.raises(KeyError):
        reg["z"]


def test_sealed_names_are_built_in_and_stay():
    reg: Registry[int] = Registry("gizmo")
    reg.register("core", 1)
    reg.seal()
    reg.register("toy", 2)
    with pytest.raises(ValueError, match="'core' is a built-in gizmo"):
        reg.unregister("core")
    assert reg.unregister("toy") == 2 and reg.unregister("toy") is None
    assert reg.names() == ("core",)


def test_a_lazy_name_is_listed_before_its_module_loads(tmp_path, monkeypatch):
    reg: Registry[str] = Registry("mechanism", lazy={"lazy": "lazy_registry_toy", "broken": "lazy_registry_none"})
    holder = types.ModuleType("registry_holder")
    holder.REG = reg  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "registry_holder", holder)
    (tmp_path / "lazy_registry_toy.py").write_text("import registry_holder\nregistry_holder.REG.register('lazy', 'loaded')\n")
    (tmp_path / "lazy_registry_none.py").write_text("# registers nothing\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    for module in ("lazy_registry_toy", "lazy_registry_none"):
        monkeypatch.delitem(sys.modules, module, raising=False)
    reg.register("eager", "here")
    assert reg.names() == ("lazy", "broken", "eager") and "lazy" in reg
    assert "lazy_registry_toy" not in sys.modules and reg.find("lazy") is None  # listing imported nothing
    assert reg.get("lazy") == "loaded" and "lazy_registry_toy" in sys.modules
    assert reg.names() == ("lazy", "broken", "eager")  # loading does not move it
    with pytest.raises(RuntimeError, match="lazy_registry_none did not register a mechanism 'broken'"):
        reg.get("broken")
    for module in ("lazy_registry_toy", "lazy_registry_none"):
        sys.modules.pop(module, None)


def test_the_five_registries_share_it():
    from core.analyses import registry as analyses
    from core.attacks import registry as attacks
    from core.defenses import registry as defenses
    from core.foundations import task_registry
    from core.jobs import manager as jobs
    from core.jobs import worker

    assert isinstance(task_registry.REGISTRY, Registry) and isinstance(worker.JOB_KINDS, Registry)
    assert jobs.KINDS is worker.JOB_KINDS
    cases = [("task", task_registry.get_task), ("mechanism", defenses.get),
             ("training defense", defenses.get_training), ("attack", attacks.get),
             ("analysis", analyses.get_analysis), ("job kind", worker.JOB_KINDS.get)]
    for kind, get in cases:
        with pytest.raises(ConfigError, match=rf"^unknown {kind} 'nope'; known: \w"):
            get("nope")
    # the built-in ones stay: a test removes its toy, never one of them
    with pytest.raises(ValueError, match="built-in task"):
        task_registry.unregister_task("image")
    with pytest.raises(ValueError, match="built-in mechanism"):
        defenses.unregister("dirichlet")
    with pytest.raises(ValueError, match="built-in training defense"):
        defenses.unregister_training("dpsgd")
    # a name another registration holds is refused, in each registry
    with pytest.raises(ConfigError, match="attack name 'shadow' is taken"):
        attacks.register(attacks.AttackEntry("shadow", "S", "S", "shadows", "responses", lambda t: None))
    with pytest.raises(ConfigError, match="analysis 'scatter' is already registered"):
        analyses.register_analysis(analyses.Analysis("scatter", "another", run=lambda run: None))
    with pytest.raises(ConfigError, match="job kind 'experiment' is already registered"):
        worker.register_job_kind(worker.JobKind("experiment", test_the_five_registries_share_it))
