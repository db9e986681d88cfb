"""Pages only draw: :func:`core.experiment.pipeline.load_models` reads the cache or says "not cached" (never
trains), and the Defenses grid is measured by a worker job kind (``defense_grid``), not in the server."""
import pytest

from core.experiment.cache import ArtifactCache
from core.experiment.pipeline import load_models, trained_models
from core.foundations.errors import MIAError, NotCachedError
from core.tasks import get_task

TINY = dict(n_train=30, n_eval=10, epochs=2, n_shadows=1, attack_epochs=())


def no_training(monkeypatch, tasks=("image",)):
    def refuse(*args, **kwargs):
        raise AssertionError("load_models trained a model")

    for name in tasks:
        monkeypatch.setattr(type(get_task(name)), "train", refuse)


def test_load_models_says_not_cached_and_never_trains(monkeypatch):
    cfg = get_task("image").make_config("ffnn", "quick", TINY)
    trained = trained_models(cfg)  # the real training, before it is forbidden
    no_training(monkeypatch)
    loaded = load_models(cfg)
    assert loaded.victim.cache_hit and [s.cache_hit for s in loaded.shadows] == [True]
    assert list(loaded.splits.eval_index) == list(trained.splits.eval_index)
    assert all((loaded.victim.weights[k] == v).all() for k, v in trained.victim.weights.items())

    other = get_task("image").make_config("rnn", "quick", TINY)  # never trained
    with pytest.raises(NotCachedError) as err:
        load_models(other)
    assert isinstance(err.value, MIAError) and "not cached" in str(err.value) and "\n" not in str(err.value)

    # a model whose weights are gone (its meta kept) is not cached either: named, not retrained
    cache = ArtifactCache()
    cache.discard(cache.key("model", cfg.training_hash, "shadow_0", "weights"), "removed by the test")
    with pytest.raises(NotCachedError, match="shadow 0"):
        load_models(cfg)


def test_defense_grid_job_kind_caches_every_point_with_progress(monkeypatch):
    from core.defenses.defender import Defender
    from core.defenses.spec import DefenseSpec
    from core.foundations.errors import ConfigError
    from core.jobs.worker import JOB_KINDS, run_job

    assert "defense_grid" in JOB_KINDS
    cfg = get_task("image").make_config("ffnn", "quick", TINY)
    trained_models(cfg)
    no_training(monkeypatch)
    spec = DefenseSpec("dirichlet", 1.0)
    params = {"spec": {"mechanism": "dirichlet", "value": 1.0}, "values": [0.1, 10.0]}
    events = []
    assert run_job("defense_grid", cfg, events.append, params) == 2
    assert events and events[-1].stage_fraction == 1.0 and events[-1].stage.startswith("defense grid")
    fresh = Defender(load_models(cfg))  # what the page reads: the points on disk, utility included
    for v in (0.1, 10.0):
        point = fresh.cached_point(spec.at(v))
        assert point is not None and point.utility is not None
    assert fresh.cached_point(spec.at(1.0)) is None  # only the values asked for
    with pytest.raises(ConfigError):
        run_job("defense_grid", cfg, events.append, {"spec": params["spec"], "values": []})
    with pytest.raises(NotCachedError):  # the worker never trains a grid's models either
        run_job("defense_grid", get_task("image").make_config("rnn", "quick", TINY), events.append, params)


def test_adaptive_and_mapview_jobs_say_not_cached_and_never_train(monkeypatch):
    """The app's other jobs on cached runs read them with load_models too: a run that is not cached is one
    "not cached" line, never a training started from a Defenses toggle or an example-maps request."""
    from core.jobs.worker import run_job

    no_training(monkeypatch, ("image", "navigation"))
    events = []
    image = get_task("image").make_config("rnn", "quick", TINY)  # never trained
    with pytest.raises(NotCachedError, match=r"victim model of image rnn .* is not cached"):
        run_job("adaptive", image, events.append, {"spec": {"mechanism": "dirichlet", "value": 1.0}})
    maps = get_task("navigation").make_config("rnn", "quick", TINY)
    with pytest.raises(NotCachedError, match=r"victim model of navigation rnn .* is not cached"):
        run_job("mapview", maps, events.append, {})
    assert not ArtifactCache().exists  # nothing was trained, nor stored


def test_job_params_are_read_once_typed_and_the_labels_read_them():
    """A defense-grid and an analysis job's parameters are read into typed params (the same ConfigErrors as the job
    raises); the job list's label and the modules a worker imports read those, and a job that cannot run gets the
    kind's plain label."""
    from core.analyses import registry as analysis_registry
    from core.foundations.errors import ConfigError
    from core.jobs.worker import JOB_KINDS, AnalysisParams, DefenseGridParams, modules_of

    spec = {"mechanism": "dirichlet", "value": 1.0}
    grid = DefenseGridParams.from_dict({"spec": spec, "values": [0.1, 10]})
    assert grid.spec == spec and grid.values == (0.1, 10.0)
    assert JOB_KINDS.get("defense_grid").describe({"spec": spec, "values": [0.1, 10]}) == " · defense grid (dirichlet, 2 values)"
    for bad, message in (({"spec": spec, "values": []}, "non-empty list of values, got \\[\\]"),
                         ({"spec": {"nope": 1}, "values": [1.0]}, "needs a DefenseSpec as a dict"),
                         ({"values": [1.0]}, "needs a DefenseSpec as a dict, got None")):
        with pytest.raises(ConfigError, match=message):
            DefenseGridParams.from_dict(bad)
        assert JOB_KINDS.get("defense_grid").describe(bad) == " · defense grid"
    name = analysis_registry.long_names()[0]
    assert AnalysisParams.from_dict({"name": name, "factor": 3}).name == name
    assert JOB_KINDS.get("analysis").describe({"name": name}) == f" · {name} analysis"
    assert modules_of("analysis", {"name": name})[-1] == analysis_registry.get_analysis(name).job.__module__
    with pytest.raises(ConfigError, match="^unknown analysis job 'nope'; one of "):
        AnalysisParams.from_dict({"name": "nope"})
    assert JOB_KINDS.get("analysis").describe({"name": "nope"}) == " · analysis"
    assert modules_of("analysis", {"name": "nope"}) == ("core.jobs.worker",)
