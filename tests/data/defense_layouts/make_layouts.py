"""Write the defenses' JSON layouts of a tiny image config into the folder given: the CLI's ``defend`` JSON
(Dir_k with both attackers, an L2 sweep, a DP-SGD sweep) and two cache entries of the defended points (a full
point, a slider's fast point), in the cache of ``$MIA_CACHE_DIR``.

The files beside it were written by this script on af87210 (the defenses' results still plain dicts), with
``OMP_NUM_THREADS=1 MIA_CACHE_DIR=$(mktemp -d) PYTHONPATH=<a checkout of af87210> python make_layouts.py OUT``;
``tests/test_defense_layouts.py`` runs it on this version and compares."""
import sys
from pathlib import Path

out = Path(sys.argv[1]); out.mkdir(parents=True, exist_ok=True)
from core.cli.main import main

TINY = ["--set", "n_train=40", "--set", "n_eval=20", "--set", "epochs=2", "--set", "n_shadows=2",
        "--set", "attack_epochs=1", "--set", "attack_train_epochs=3"]
base = ["defend", "--task", "image", "--arch", "ffnn", *TINY, "--quiet"]
assert main([*base, "--mechanism", "dirichlet", "--values", "10,0.1", "--draws", "2", "--attacker", "both",
             "--out", str(out / "defend_dirichlet.json")]) == 0
assert main([*base, "--mechanism", "l2", "--values", "0.01", "--out", str(out / "defend_l2.json")]) == 0
assert main([*base, "--mechanism", "dpsgd", "--values", "2", "--out", str(out / "defend_dpsgd.json")]) == 0
# the cache's entries of the after-training points: the full point (both attackers) and a slider's fast point
from core.defenses.defender import Defender
from core.defenses.spec import DefenseSpec
from core.experiment.cache import ArtifactCache
from core.experiment.pipeline import trained_models
from core.tasks import get_task

cfg = get_task("image").make_config("ffnn", "quick", {"n_train": 40, "n_eval": 20, "epochs": 2, "n_shadows": 2,
                                                      "attack_epochs": (1,), "attack_train_epochs": 3})
cache = ArtifactCache()
d = Defender(trained_models(cfg, cache=cache), cache)
spec = DefenseSpec("dirichlet", 10.0, draws=2)
d.point(spec.at(3.0), "naive", utility=False)
entries = {"defended_both_k10": cache.key("defended", cfg.config_hash, spec.key, "both"),
           "defended_fast_noquantile_k3": cache.key("defended_fast_noquantile", cfg.config_hash, spec.at(3.0).key)}
for name, key in entries.items():
    raw = cache.get_bytes(key)
    assert raw is not None, name
    (out / f"cache_{name}.json").write_bytes(raw)
print("ok", sorted(p.name for p in out.iterdir()))
