"""Typed results (core.experiment.results): real summaries, defended points and their intervals read and written
back exactly (the JSON the CLI writes and the cache stores does not change); malformed dicts refused
with one line that names the field; a bad cached summary discarded as it leaves the cache."""
from __future__ import annotations

import copy
import dataclasses
import json

import pytest

from core.analyses.repeats import defense_intervals, repeat_config, repeats_block
from core.defenses.defender import Defender
from core.defenses.spec import DefenseSpec
from core.defenses.sweeps import baseline_of, point_of
from core.experiment.cache import ArtifactCache
from core.experiment.pipeline import cached_summary, run_experiment, trained_models
from core.experiment.results import AttackResult, DefendedPoint, DefenseBaseline, RunSummary
from core.foundations.errors import MIAError, ResultFormatError
from core.measurement.metrics import EpsilonBound
from core.tasks import get_task

#: the smallest runs of each task (tests/test_app.py's sizes); translation with two shadows for LiRA and RMIA
TINY = {
    "image": {"n_train": 40, "n_eval": 20, "epochs": 2, "n_shadows": 1, "attack_epochs": (1,), "attack_train_epochs": 3},
    "translation": {"n_train": 24, "n_eval": 8, "epochs": 1, "n_shadows": 2, "attack_epochs": (),
                    "attack_train_epochs": 2},
    "navigation": {"n_train": 2, "n_eval": 2, "epochs": 1, "n_shadows": 1, "attack_epochs": (), "attack_train_epochs": 2,
                   "frames": 2048},
    "tabular": {"n_train": 40, "n_eval": 20, "epochs": 2, "n_shadows": 1, "attack_epochs": (), "attack_train_epochs": 3},
}


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("results-cache")


@pytest.fixture(scope="module")
def configs():
    return {t: get_task(t).make_config("rnn", "quick", v) for t, v in TINY.items()}


@pytest.fixture(scope="module")
def summaries(cache_dir, configs):
    """One tiny run of every task, as run_experiment returns it (the CLI's JSON)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MIA_CACHE_DIR", str(cache_dir))
        return {t: run_experiment(c).summary for t, c in configs.items()}


def exact(d):
    """The JSON text, key order included: what the CLI writes."""
    return json.dumps(d, allow_nan=False)


@pytest.mark.parametrize("task", list(TINY))
def test_a_real_summary_round_trips_exactly(task, summaries, configs, cache_dir, monkeypatch):
    monkeypatch.setenv("MIA_CACHE_DIR", str(cache_dir))
    d = summaries[task]
    run = RunSummary.from_dict(d)
    assert exact(run.to_dict()) == exact(d)
    # attributes, not keys
    assert run.task == task and run.arch == "rnn" and run.config_hash == configs[task].config_hash
    assert run.attack.name == run.primary and run.attack.accuracy == d["attack"]["accuracy"]
    assert run.attacks[run.primary].auc == d["attacks"][run.primary]["auc"]
    assert run.attacks[run.primary].tpr_at_1pct_fpr == d["attacks"][run.primary]["tpr_at_fpr"]["0.01"]
    assert run.attacks[run.primary].roc_fpr and run.attacks[run.primary].roc_tpr and not run.attack.roc_fpr  # the headline block has no ROC
    assert run.utility.val == d["utility"]["val"] and run.utility.metric == d["utility"]["metric"]
    assert [r.epoch for r in run.per_epoch] == [r["epoch"] for r in d["per_epoch"]]
    assert set(run.attacks_at(configs[task].epochs)) == set(d["attacks_by_epoch"][str(configs[task].epochs)])
    # the data block and the config's fields readers use, typed: attributes of what was written
    assert run.data.description == d["data"]["description"] and run.data.to_dict() == d["data"]
    assert run.data.n_classes == d["data"].get("n_classes")  # image's and tabular's; None where a task has none
    assert run.settings.preset == d["config"]["preset"] == "quick"
    assert run.settings.attack_epochs == tuple(d["config"]["attack_epochs"]) == configs[task].attack_epochs
    assert run.settings.n_eval == d["config"]["n_eval"]
    # the cache's copy (keys sorted, cache_hit set on the way out) round-trips as well
    stored = cached_summary(configs[task])
    assert exact(RunSummary.from_dict(stored).to_dict()) == exact(stored)
    # and, but for what this load set (cache_hit, models_from_cache), holds the same typed values
    back = dataclasses.replace(RunSummary.from_dict(stored), cache_hit=run.cache_hit, models_from_cache=run.models_from_cache)
    assert back == run


def test_task_specific_columns_and_blocks_are_kept(summaries):
    nav = RunSummary.from_dict(summaries["navigation"])
    assert nav.per_epoch[0].get("steps_val") == summaries["navigation"]["per_epoch"][0]["steps_val"]
    assert nav.example_kind == "navigation" and RunSummary.from_dict(summaries["image"]).example_kind is None
    tr = RunSummary.from_dict(summaries["translation"])
    assert {"lira", "rmia"} <= set(tr.attacks)
    # a key this version does not know is refused in one line, at any depth of the typed layout
    with pytest.raises(ResultFormatError, match=r"^summary has unknown key 'future_block' \(written by another version\?\)$"):
        RunSummary.from_dict(dict(summaries["image"], future_block={"x": 1}))
    with pytest.raises(ResultFormatError, match=r"^summary.attacks\['shadow'\] has unknown key 'x'"):
        RunSummary.from_dict(mangled(summaries["image"], ("attacks", "shadow", "x"), 1))
    with pytest.raises(ResultFormatError, match=r"^summary.records has unknown key 'x'"):
        RunSummary.from_dict(mangled(summaries["image"], ("records", "x"), []))
    # a task's own learning-curve column is open (navigation's steps; a plugin's), but must be a number
    with pytest.raises(ResultFormatError, match=r"^summary.per_epoch\[0\].steps_val must be a number, got 'x'$"):
        RunSummary.from_dict(mangled(summaries["navigation"], ("per_epoch", 0, "steps_val"), "x"))


@pytest.mark.parametrize("task", list(TINY))
def test_every_key_of_a_real_summary_is_typed(task, summaries):
    """Nothing of what the pipeline writes is carried along unread: every block is a typed field (or a
    declared JSON blob), the per-record signals included."""
    run = RunSummary.from_dict(summaries[task])
    assert run.extra == {} and run.utility.extra == {} and run.per_record.extra == {}
    assert all(r.extra == {} for r in run.attacks.values()) and run.attack.extra == {}
    assert all(r.extra == {} for by in (run.attacks_by_epoch or {}).values() for r in by.values())
    assert set(run.per_record.scores) == set(run.attacks)  # every attack's per-record scores
    assert run.per_record.membership == tuple(summaries[task]["records"]["membership"])
    assert run.per_record.to_dict() == summaries[task]["records"]  # the block round-trips as well


def test_a_repeats_block_round_trips_with_typed_intervals(summaries, configs, cache_dir, monkeypatch):
    monkeypatch.setenv("MIA_CACHE_DIR", str(cache_dir))
    second = run_experiment(repeat_config(configs["translation"], 1)).summary
    d = dict(summaries["translation"], repeats=repeats_block(
        [RunSummary.from_dict(summaries["translation"]), RunSummary.from_dict(second)], n_boot=50))
    run = RunSummary.from_dict(d)
    assert exact(run.to_dict()) == exact(d)
    acc = run.repeats.metrics["attack_accuracy"]
    assert acc.n == 2 and acc.mean == d["repeats"]["metrics"]["attack_accuracy"]["mean"]
    assert run.repeats.within_run["attack_auc"].ci_low == d["repeats"]["within_run"]["attack_auc"]["ci_low"]


def test_defended_points_round_trip(summaries, configs, cache_dir, monkeypatch):
    monkeypatch.setenv("MIA_CACHE_DIR", str(cache_dir))
    defender = Defender(trained_models(configs["translation"]))
    point = defender.point(DefenseSpec("dirichlet", 1.0, draws=2), "naive", utility=True)
    assert isinstance(point, DefendedPoint)  # typed from birth
    p = point.to_dict()
    assert DefendedPoint.from_dict(p) == point and exact(DefendedPoint.from_dict(p).to_dict()) == exact(p)
    assert point.mechanism == "dirichlet" and point.value == 1.0 and point.utility is not None
    assert point.attack.accuracy == p["attack"]["accuracy"] and point.attack.accuracy_std == p["attack"]["accuracy_std"]
    assert point.attacks["lira"].name == "lira" and "name" not in point.to_dict()["attacks"]["lira"]  # its key names it
    assert point.utility_loss == p["utility_loss"] and point.epsilon == p["epsilon"]
    base = defender.baseline
    assert isinstance(base, DefenseBaseline) and base.attack.name == point.attack.name
    # ε̂ is one typed class from birth (core.measurement.metrics.EpsilonBound), written as the dict it always was
    assert isinstance(base.epsilon_lower_bound, EpsilonBound) and isinstance(point.epsilon_lower_bound_detail, EpsilonBound)
    assert point.epsilon_lower_bound_detail.to_dict() == p["epsilon_lower_bound_detail"]
    assert list(p["epsilon_lower_bound_detail"]) == ["lower_bound", "estimate", "tpr", "fpr", "threshold", "direction",
                                                     "n_bound", "method"]
    assert base.to_dict()["epsilon_lower_bound"]["lower_bound"] == base.epsilon_lower_bound.lower_bound
    assert exact(DefenseBaseline.from_dict(base.to_dict()).to_dict()) == exact(base.to_dict())
    # defend --repeats N: intervals per metric
    with_intervals = dict(p, intervals=defense_intervals([point, point], 2))
    typed = DefendedPoint.from_dict(with_intervals)
    assert exact(typed.to_dict()) == exact(with_intervals)
    assert typed.interval("attack_accuracy").n == 2 and typed.interval("nothing") is None
    # a training-time point (core.defenses.sweeps) and its baseline, from real summaries
    image = RunSummary.from_dict(summaries["image"])
    baseline = baseline_of(image)
    sweep_point = point_of(image, baseline, "l2", 0.01)
    assert isinstance(baseline, DefenseBaseline) and isinstance(sweep_point, DefendedPoint)
    assert exact(DefendedPoint.from_dict(sweep_point.to_dict()).to_dict()) == exact(sweep_point.to_dict())
    assert sweep_point.value_name and sweep_point.config_hash and baseline.utility_chance is not None
    assert isinstance(sweep_point.epsilon_lower_bound, EpsilonBound) and sweep_point.epsilon_hat is not None
    assert exact(DefenseBaseline.from_dict(baseline.to_dict()).to_dict()) == exact(baseline.to_dict())


def mangled(d, path, value=KeyError):
    """``d`` with the field at ``path`` set to ``value`` (KeyError: removed)."""
    d = copy.deepcopy(d)
    target = d
    for k in path[:-1]:
        target = target[k]
    if value is KeyError:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return d


@pytest.mark.parametrize("path, value, message", [
    (("config_hash",), KeyError, "summary lacks 'config_hash'"),
    (("params",), "many", "summary.params must be an integer, got 'many'"),
    (("params",), True, "summary.params must be an integer, got True"),
    (("utility", "metric"), KeyError, "summary.utility lacks 'metric'"),
    (("utility", "val"), "0.9", "summary.utility.val must be a number, got '0.9'"),
    (("attacks", "shadow", "auc"), "x", "summary.attacks['shadow'].auc must be a number, got 'x'"),
    (("attacks", "shadow", "roc_fpr"), [0.0, None], "summary.attacks['shadow'].roc_fpr[1] must be a number, got None"),
    (("attack", "tpr_at_fpr"), [0.1], "summary.attack.tpr_at_fpr must be a JSON object, got [0.1]"),
    (("per_epoch", 0, "epoch"), 1.5, "summary.per_epoch[0].epoch must be an integer, got 1.5"),
    (("attack", "name"), "nobody", "summary.attack names 'nobody', which is not in summary.attacks"),
    (("attack",), None, "summary.attack must be given (not null), got None"),
])
def test_a_malformed_summary_is_refused_in_one_line(summaries, path, value, message):
    bad = mangled(summaries["image"], path, value)
    with pytest.raises(ResultFormatError) as err:
        RunSummary.from_dict(bad)
    assert str(err.value) == message and "\n" not in str(err.value)
    assert isinstance(err.value, MIAError)  # the CLI and the pages print it as one line


def test_a_malformed_attack_or_point_is_refused():
    with pytest.raises(ResultFormatError, match=r"^attack lacks 'auc'$"):
        AttackResult.from_dict({"name": "x", "accuracy": 0.5, "advantage": 0.0, "tpr_at_fpr": {}})
    with pytest.raises(ResultFormatError, match=r"^point lacks 'attack'$"):
        DefendedPoint.from_dict({"value": 1.0, "attacks": {}})
    with pytest.raises(ResultFormatError, match=r"^point must be a JSON object, got \[1\]$"):
        DefendedPoint.from_dict([1])
    with pytest.raises(ResultFormatError, match=r"^point.intervals\['utility'\] lacks 'n'$"):
        DefendedPoint.from_dict({"value": 1, "attack": {"name": "s", "accuracy": 1, "advantage": 0, "auc": 1,
                                                        "tpr_at_fpr": {}}, "attacks": {}, "intervals": {"utility": {"mean": 1}}})


def test_numbers_are_never_converted():
    d = {"name": "s", "accuracy": 1, "advantage": 0, "auc": 1.0, "tpr_at_fpr": {"0.01": 0}, "threshold": None}
    r = AttackResult.from_dict(d)
    assert exact(r.to_dict()) == exact(d) and isinstance(r.accuracy, int)


def test_a_malformed_cached_summary_is_discarded_as_it_leaves_the_cache(summaries, configs, tmp_path, monkeypatch,
                                                                         caplog):
    monkeypatch.setenv("MIA_CACHE_DIR", str(tmp_path / "c"))
    cfg = configs["image"]
    cache = ArtifactCache()
    good = summaries["image"]
    cache.put_json(cache.key("result", cfg.config_hash), good)
    assert cached_summary(cfg, cache) is not None
    cache.put_json(cache.key("result", cfg.config_hash), mangled(good, ("attacks", "shadow", "auc"), "x"))
    assert cached_summary(cfg, cache) is None  # then recomputed by run_experiment, never drawn
    assert cache.corrupted == [cache.key("result", cfg.config_hash)]
    assert "summary.attacks['shadow'].auc must be a number" in caplog.text  # the reason, logged in one line


def test_views_and_analyses_take_typed_runs_only():
    """Summaries are typed once, where their JSON is read; a view or analysis that still took ``RunSummary | dict``
    would let dicts flow in again (core.analyses.findings reads the cached JSON typed, as every other caller)."""
    import importlib
    import inspect
    import pkgutil
    import re

    import core.views

    modules = [importlib.import_module(f"core.views.{m.name}") for m in pkgutil.iter_modules(core.views.__path__)]
    modules += [importlib.import_module(f"core.analyses.{m}") for m in
                ("analysis", "analyses_view", "matching", "record_views", "repeats", "verdicts", "answer")]
    modules.append(importlib.import_module("core.experiment.fidelity"))
    mixed = []
    for module in modules:
        for name, fn in inspect.getmembers(module, inspect.isfunction):
            if fn.__module__ != module.__name__:
                continue
            for p in inspect.signature(fn).parameters.values():
                hint = str(p.annotation)
                if re.search(r"RunSummary \| (dict|Mapping)|(dict|Mapping)\[str, Any\] \| RunSummary", hint):
                    mixed.append(f"{module.__name__}.{name}({p.name})")
    assert sorted(mixed) == []


def test_defenses_and_privacy_take_typed_objects_only():
    """The defenses' curves, the bands, the answer, the side-by-side lanes and DP-SGD's record take the typed object
    only (JSON is typed once, where it is read): no parameter or field admits a typed class or its dict."""
    import importlib
    import inspect
    import re

    names = ("core.defenses.sweeps", "core.defenses.utility_cost", "core.defenses.defense_results",
             "core.defenses.side_by_side", "core.analyses.repeats", "core.analyses.answer", "core.training.dpsgd",
             "core.training.loop", "core.experiment.pipeline", "core.experiment.results", "core.experiment.roles",
             "core.experiment.model_meta")
    typed = r"(RunSummary|DefendedPoint|DefenseBaseline|Estimate|PrivacyRecord|AttackMetrics)"
    mixed_hint = re.compile(rf"{typed} \| (dict|Mapping)|(dict|Mapping)\[str, Any\] \| {typed}")
    mixed = []
    for name in names:
        module = importlib.import_module(name)
        fns = [(n, f) for n, f in inspect.getmembers(module, inspect.isfunction) if f.__module__ == name]
        for cname, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ == name:
                fns += [(f"{cname}.{n}", f) for n, f in vars(cls).items() if inspect.isfunction(f)]
                fns += [(f"{cname}.{n}", f.__func__) for n, f in vars(cls).items() if isinstance(f, classmethod)]
                mixed += [f"{name}.{cname}.{k}" for k, hint in getattr(cls, "__annotations__", {}).items()
                          if mixed_hint.search(str(hint))]
        for fname, fn in fns:
            for p in inspect.signature(fn).parameters.values():
                if mixed_hint.search(str(p.annotation)):
                    mixed.append(f"{name}.{fname}({p.name})")
    assert sorted(mixed) == []
    # the fields that held the JSON of a typed class hold the class
    from core.experiment.model_meta import ModelMeta
    from core.experiment.roles import TrainedModel
    from core.training.loop import TrainingRecord

    for cls in (ModelMeta, TrainedModel, TrainingRecord):
        assert str(cls.__annotations__["privacy"]) == "PrivacyRecord | None", cls
    from core.defenses.side_by_side import PointLanes
    for method in (PointLanes.submit, PointLanes.step):
        assert str(inspect.signature(method).parameters["defenders"].annotation) == "Mapping[K, PointSource]"
