"""Dump the JSON a tiny run writes, to diff it across commits (issue 29: typing a writer must not move a byte).

    python bench/run_layouts.py OUT.json            # run here (a fresh cache folder per task)
    python bench/run_layouts.py --compare A.json B.json

For a tiny image FFNN and navigation RNN run: the summary as written (``result.summary``), as ``cached_summary``
reads it back, as a second ``run_experiment`` serves it, and every model meta entry the cache holds. Seconds
(keys ending in ``_s``) are masked; everything else — keys, their order, values — is kept, so ``--compare`` says
whether two trees write the same JSON. Run the other commit's tree with ``git archive COMMIT | tar -x -C DIR`` and
``PYTHONPATH=DIR``.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
from typing import Any

TINY = dict(n_train=40, n_eval=20, epochs=3, n_shadows=2, attack_epochs=(2,), attack_train_epochs=3)
RUNS = (("image", "ffnn", {}), ("navigation", "rnn", {"epochs": 2, "attack_epochs": (1,)}))


def mask(x: Any, key: str = "") -> Any:
    """``x`` with every float under a ``*_s`` key (a duration) replaced by ``"T"``."""
    if isinstance(x, dict):
        return {k: mask(v, k) for k, v in x.items()}
    if isinstance(x, list):
        return [mask(v, key) for v in x]
    return "T" if isinstance(x, float) and key.endswith("_s") else x


def dump() -> dict[str, Any]:
    from core.experiment.cache import ArtifactCache
    from core.experiment.pipeline import cached_summary, run_experiment
    from core.tasks import get_task

    out: dict[str, Any] = {}
    for task, arch, extra in RUNS:
        cache = ArtifactCache(tempfile.mkdtemp())
        cfg = get_task(task).make_config(arch, "quick", {**TINY, **extra})
        out[f"{task}/summary"] = mask(run_experiment(cfg, cache=cache).summary)
        out[f"{task}/cached"] = mask(cached_summary(cfg, cache))
        out[f"{task}/again"] = mask(run_experiment(cfg, cache=cache).summary)
        for key in cache.keys(cache.key("model", "")):
            if key.endswith("/meta"):
                out[f"{task}/{key}"] = mask(cache.get_json(key))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", nargs="?", help="write the dump here")
    parser.add_argument("--compare", nargs=2, metavar=("A", "B"), help="compare two dumps (order included)")
    args = parser.parse_args(argv)
    if args.compare:
        a, b = (json.load(open(p, encoding="utf-8")) for p in args.compare)
        differ = [k for k in sorted(set(a) | set(b)) if json.dumps(a.get(k)) != json.dumps(b.get(k))]
        print("identical" if not differ else "differ: " + ", ".join(differ))
        return 1 if differ else 0
    if not args.out:
        parser.error("give OUT.json, or --compare A B")
    with open(args.out, "w", encoding="utf-8") as fh:
        json.dump(dump(), fh, indent=1)  # key order kept: the layout is what is compared
    return 0


if __name__ == "__main__":
    sys.exit(main())
