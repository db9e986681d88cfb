"""Your trained model as the victim (``--set target_weights=… --set members=…``).

A victim the explorer trained is exported (safetensors + its member list) and audited as a user's
model: same splits, so the very same attack numbers. Every bad input is one line, exit 2, and no
model trained. Fixtures: the built-in digits, files the tests write under a data root in tmp_path.
"""
import json
import os

import numpy as np
import pytest
import torch
from safetensors.torch import save_file

from core.analyses.analysis import analyze
from core.analyses.own_models import memorization
from core.analyses.record_views import canary_audit
from core.cli import main as cli
from core.defenses.defender import Defender
from core.defenses.spec import DefenseSpec
from core.defenses.sweeps import check_sweep
from core.experiment.cache import ArtifactCache
from core.experiment.pipeline import run_experiment, trained_models
from core.experiment.roles import make_splits, user_splits
from core.foundations.errors import ConfigError
from core.tasks import get_task
from core.tasks.base import TaskData

#: tiny and overfitting: 40 members of the digits, 2 shadows, a few seconds on one core
TINY = dict(n_train=40, n_eval=40, epochs=12, n_shadows=2, attack_epochs=(), attack_train_epochs=20, cnn_width=8,
            cnn_fc=32)
#: TINY on the command line; attack_epochs left out: a user's model has none (the preset's are dropped)
TINY_SETS = [a for k, v in TINY.items() if k != "attack_epochs" for a in ("--set", f"{k}={v}")]


@pytest.fixture
def root(tmp_path, monkeypatch):
    """A data root holding the user's files."""
    folder = tmp_path / "data"
    folder.mkdir()
    monkeypatch.setenv("MIA_DATA_ROOT", str(folder))
    return folder


def trained_files() -> bool:
    """Whether any model entry (trained or loaded) is in the test's cache."""
    return any("/model/" in k for k in ArtifactCache().keys())


def untrained_weights(cfg) -> dict[str, torch.Tensor]:
    """The state dict of a freshly built model of ``cfg`` (the right names and shapes)."""
    task = get_task(cfg.task)
    torch.manual_seed(0)
    return {k: v.clone() for k, v in task.build_model(cfg, task.load(cfg)).state_dict().items()}


def test_an_exported_victim_audited_as_your_model_gives_the_same_numbers(root, tmp_path):
    task = get_task("image")
    cfg = task.make_config("ffnn", "quick", TINY)
    first = run_experiment(cfg)
    models = first.models
    save_file(models.victim.weights, str(root / "victim.safetensors"))
    (root / "members.txt").write_text("\n".join(task.record_ids(cfg, models.data, models.splits.victim_members)) + "\n")

    out = tmp_path / "result.json"
    rc = cli.main(["run", "--task", "image", "--arch", "ffnn", "--preset", "quick", *TINY_SETS,
                   "--set", "target_weights=victim.safetensors", "--set", f"members={root / 'members.txt'}",
                   "--out", str(out)])
    assert rc == 0
    mine = json.loads(out.read_text())
    assert mine["config_hash"] != first.summary["config_hash"]
    assert mine["victim_source"]["kind"] == "user weights" and mine["victim_source"]["n_members"] == 40
    assert first.summary["victim_source"] == {"kind": "trained", "n_members": 40}
    assert mine["timings"]["victim_trained_s"] == 0.0 and not mine["models_from_cache"]["victim"]
    # same splits (the rule gives an exported victim back its run's), same model: the same numbers
    assert set(mine["attacks"]) == set(first.summary["attacks"])
    for name, result in first.summary["attacks"].items():
        assert mine["attacks"][name] == result, name  # AUC, TPR at low FPR, the ROC, the boundary: all of it
    assert mine["utility"] == first.summary["utility"]
    assert mine["attack"]["auc"] > 0.6  # the overfit victim is detected

    # the run reopens from the cache without its files (Defenses page, Analyses): weights and list are cached
    bound = task.make_config("ffnn", "quick", dict(TINY, target_weights="victim.safetensors", members="members.txt"))
    os.remove(root / "victim.safetensors")
    os.remove(root / "members.txt")
    reopened = trained_models(bound)
    assert reopened.victim.cache_hit and np.array_equal(reopened.splits.victim_members, models.splits.victim_members)
    point = Defender(reopened).point(DefenseSpec("dirichlet", 1.0), "naive", utility=False)
    assert "shadow" in point.attacks and point.value == 1.0  # the sliders' point, on the loaded model
    # the analyses and defenses that retrain the victim are refused, before any work
    before = len(ArtifactCache().keys())
    for refused in (lambda: analyze({"ffnn": bound}, ("overtraining",)), lambda: memorization(bound),
                    lambda: canary_audit(bound, 4), lambda: check_sweep(bound, "l2", [1e-3]),
                    lambda: check_sweep(bound, "dpsgd", [1.0])):
        with pytest.raises(ConfigError, match="retrain"):
            refused()
    with pytest.raises(ConfigError, match="leave dp off"):
        bound.with_updates({"dp": "sigma"}).validate()
    assert len(ArtifactCache().keys()) == before


def test_the_cache_key_binds_the_files_content_not_their_path(root):
    task = get_task("image")
    base = task.make_config("ffnn", "quick", TINY)
    save_file(untrained_weights(base), str(root / "w.safetensors"))
    (root / "m.txt").write_text("0\n1\n2\n")
    sizes_left_out = {k: v for k, v in TINY.items() if k not in ("n_train", "n_eval", "attack_epochs")}
    files = dict(sizes_left_out, target_weights="w.safetensors", members="m.txt")
    a = task.make_config("ffnn", "quick", files)
    # left out, the shadows' training-set size follows the list, and the preset's checkpoints are dropped
    assert (a.n_train, a.n_eval, a.attack_epochs) == (3, 3, ()) and len(a.target_weights_sha256) == 64
    # the same bytes elsewhere: the same experiment
    (root / "sub").mkdir()
    (root / "sub" / "w2.safetensors").write_bytes((root / "w.safetensors").read_bytes())
    moved = task.make_config("ffnn", "quick", dict(files, target_weights="sub/w2.safetensors"))
    assert moved.config_hash == a.config_hash and moved.training_hash == a.training_hash
    # other bytes under the same name: another experiment
    changed = untrained_weights(base)
    next(iter(changed.values())).add_(1.0)
    save_file(changed, str(root / "w.safetensors"))
    b = task.make_config("ffnn", "quick", files)
    assert b.training_hash != a.training_hash and b.config_hash != a.config_hash
    (root / "m.txt").write_text("0\n1\n3\n")
    assert task.make_config("ffnn", "quick", files).training_hash != b.training_hash
    # and a config made before the file changed refuses to load it, naming the change
    with pytest.raises(ConfigError, match="changed since"):
        trained_models(a)
    assert not trained_files()
    # a plain config's hash is the one it had before these fields existed (pinned in test_config)
    assert base.with_updates({"target_weights": "w.safetensors"}).target_weights_sha256 == ""


def test_the_split_rule_is_seeded_disjoint_and_balanced():
    """Members listed in both halves: the attacker's pool loses them, non-members come from the
    victim's half, the evaluation is balanced; an exported victim's members give back its run's splits."""
    task = get_task("image")
    cfg = task.make_config("ffnn", "quick", dict(TINY, n_train=30, n_eval=20, n_shadows=3))
    data = TaskData(None, np.arange(0, 200), np.arange(200, 400), "fixture")
    members = np.r_[np.arange(0, 200, 7), np.arange(200, 400, 50)][:30]  # 26 in the victim's half, 4 in the attacker's
    s = user_splits(cfg, data, members)
    assert sorted(s.victim_members) == sorted(members)
    assert len(s.eval_members) == len(s.victim_nonmembers) == 20 and s.eval_membership.sum() == 20
    assert not set(s.victim_nonmembers) & set(members) and set(s.victim_nonmembers) <= set(data.victim_pool)
    for shadow_in, shadow_out in zip(s.shadow_in, s.shadow_out):
        assert len(shadow_in) == 30 and len(shadow_out) == 20
        assert not (set(shadow_in) | set(shadow_out)) & set(members)
        assert not set(shadow_in) & set(shadow_out) and set(shadow_in) <= set(data.attacker_pool)
    again = user_splits(cfg, data, members[::-1])  # the list's order does not matter
    assert np.array_equal(again.victim_members, s.victim_members) and np.array_equal(again.shadow_in[0], s.shadow_in[0])
    other = user_splits(cfg.with_updates({"seed": 1}), data, members)
    assert not np.array_equal(other.victim_nonmembers, s.victim_nonmembers)
    # the explorer's own split of a plain config, given back
    plain = task.make_config("ffnn", "quick", dict(TINY, n_train=30, n_eval=20, n_shadows=3))
    own = make_splits(plain, data)
    back = user_splits(plain, data, own.victim_members)
    for field in ("victim_members", "victim_nonmembers"):
        assert np.array_equal(getattr(back, field), getattr(own, field))
    assert all(np.array_equal(x, y) for x, y in zip(back.shadow_in + back.shadow_out, own.shadow_in + own.shadow_out))


def write_bad(root, case: str, cfg) -> list[str]:
    """The ``--set`` arguments of one bad input, its files written under ``root``."""
    good = untrained_weights(cfg)
    save_file(good, str(root / "good.safetensors"))
    (root / "members.txt").write_text("\n".join(map(str, range(40))) + "\n")
    weights, members, extra = "good.safetensors", "members.txt", []
    if case == "missing tensor":
        save_file({k: v for k, v in list(good.items())[1:]}, str(root / "bad.safetensors"))
        weights = "bad.safetensors"
    elif case == "other shape":
        bad = dict(good)
        name = next(k for k, v in bad.items() if v.ndim == 2)
        bad[name] = torch.zeros(bad[name].shape[0] + 1, bad[name].shape[1])
        save_file(bad, str(root / "bad.safetensors"))
        weights = "bad.safetensors"
    elif case == "other architecture":  # ReNet weights for the CNN
        rnn = get_task("image").make_config("rnn", "quick", TINY)
        save_file(untrained_weights(rnn), str(root / "bad.safetensors"))
        weights = "bad.safetensors"
    elif case == "NaN weights":
        bad = {k: v.clone() for k, v in good.items()}
        next(v for v in bad.values() if v.is_floating_point()).view(-1)[0] = float("nan")
        save_file(bad, str(root / "bad.safetensors"))
        weights = "bad.safetensors"
    elif case == "a pickle":
        torch.save(good, str(root / "bad.safetensors"))
        weights = "bad.safetensors"
    elif case == "too large":
        (root / "big.safetensors").write_bytes(b"\0" * 16)
        weights = "big.safetensors"
    elif case == "unknown record":
        (root / "members.txt").write_text("0\n1\n99999\n")
    elif case == "not a number":
        (root / "members.txt").write_text("0\ncat.png\n")
    elif case == "duplicate ids":
        (root / "members.txt").write_text("0\n1\n 1\n")
    elif case == "empty list":
        (root / "members.txt").write_text("\n\n")
    elif case == "not UTF-8":
        (root / "members.txt").write_bytes(b"0\n\xff\xfe\n")
    elif case == "more n_train than members":  # TINY sets n_train=40
        (root / "members.txt").write_text("\n".join(map(str, range(30))) + "\n")
    elif case == "the whole victim's half":
        data = get_task("image").load(cfg)
        (root / "members.txt").write_text("\n".join(map(str, data.victim_pool)) + "\n")
    elif case == "the whole attacker's half":
        data = get_task("image").load(cfg)
        (root / "members.txt").write_text("\n".join(map(str, data.attacker_pool[:-10])) + "\n")
    elif case == "outside the data root":
        weights = str(root.parent / "outside.safetensors")
        save_file(good, weights)
    elif case == "a link":
        os.symlink(root / "good.safetensors", root / "link.safetensors")
        weights = "link.safetensors"
    elif case == "no such file":
        weights = "nothing.safetensors"
    elif case == "a folder":
        (root / "folder").mkdir()
        members = "folder"
    elif case == "weights without members":
        return ["--set", f"target_weights={weights}"]
    elif case == "with DP-SGD":
        extra = ["--set", "dp=sigma"]
    elif case == "with checkpoints":
        extra = ["--set", "attack_epochs=2"]
    return ["--set", f"target_weights={weights}", "--set", f"members={members}", *extra]


BAD = {
    "missing tensor": "do not fit", "other shape": "has shape", "other architecture": "do not fit",
    "NaN weights": "NaN or infinite", "a pickle": "not a safetensors file", "too large": "bytes; at most",
    "unknown record": "name no record", "not a number": "name no record", "duplicate ids": "listed twice",
    "empty list": "names no record", "not UTF-8": "not UTF-8", "more n_train than members": "exceeds the 30 listed",
    "the whole victim's half": "not listed as members", "the whole attacker's half": "attacker's pool",
    "outside the data root": "outside the data root", "a link": "symbolic link", "no such file": "no such file",
    "a folder": "not a regular file", "weights without members": "go together", "with DP-SGD": "leave dp off",
    "with checkpoints": "attack_epochs must be empty",
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_input_is_one_line_exit_2_and_nothing_trained(case, root, capsys, monkeypatch):
    task = get_task("image")
    cfg = task.make_config("ffnn", "quick", TINY)
    if case == "too large":
        monkeypatch.setattr("core.foundations.user_files.MAX_WEIGHTS_BYTES", 8)
    sets = write_bad(root, case, cfg)
    trainings = []
    monkeypatch.setattr(type(task), "train", lambda *a, **k: trainings.append(a) or (_ for _ in ()).throw(
        AssertionError("a model was trained")))
    capsys.readouterr()
    rc = cli.main(["run", "--quiet", "--task", "image", "--arch", "ffnn", "--preset", "quick", *TINY_SETS, *sets])
    err = capsys.readouterr().err
    assert rc == 2, err
    assert err.startswith("error: ") and err.count("\n") == 1, err
    assert BAD[case] in err, err
    assert not trainings and not trained_files()
