"""How far the quantile attack's batched refits (``QuantileRegressor.refit_many``) lie from one refit per score
vector, beside how far one refit per vector moves when its scores move by 1e-6 (issue 32.16): the data of
``tests/test_quantile_refits.py`` (planted scores, 700 records, 6 features, α = 0.1, four score vectors).

    OMP_NUM_THREADS=1 .venv/bin/python bench/quantile_refit_sensitivity.py [--steps 150]

Prints one JSON object: per vector the mean and largest |Δ prediction| (500 new records) and |Δ offset|, batched
vs per-vector and per-vector(s + 1e-6) vs per-vector, in units of the scores' sd. Float rounding decides these:
another machine or library build may give other numbers. A probe, not a test.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402
import torch  # noqa: E402

from core.attacks.quantile import QuantileRegressor  # noqa: E402


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=150)
    args = p.parse_args()
    torch.set_num_threads(1)
    rng = np.random.default_rng(3)

    def planted(n: int) -> tuple[np.ndarray, np.ndarray]:  # as tests/test_quantile_refits.py
        x = rng.uniform(-1, 1, size=(n, 6))
        mu, sigma = 1.5 * x[:, 0] - x[:, 1], 0.3 + 0.2 * (x[:, 0] + 1)
        return x, mu + sigma * rng.standard_normal(n)

    x, s = planted(700)
    reg = QuantileRegressor(0.1).fit(x, s)
    variants = [s + 0.5, 1.3 * s, s + 0.4 * rng.standard_normal(len(s)), s - 0.2]
    x_new, _ = planted(500)
    sd = float(np.std(variants[0]))
    batched = reg.refit_many(x, variants, args.steps)
    reg._refits = {}
    single = [reg.refit(x, v, args.steps) for v in variants]
    shifted = [reg.refit(x, v + 1e-6, args.steps) for v in variants]

    def gap(a: QuantileRegressor, b: QuantileRegressor) -> dict:
        d = np.abs(a.predict(x_new) - b.predict(x_new)) / sd
        return {"mean": float(d.mean()), "max": float(d.max()), "offset": abs(a.offset - b.offset) / sd}

    print(json.dumps({"steps": args.steps, "units": "the scores' sd",
                      "batched_vs_per_vector": [gap(b, r) for b, r in zip(batched, single)],
                      "per_vector_scores_plus_1e-6_vs_per_vector": [gap(p_, r) for p_, r in zip(shifted, single)]},
                     indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
