"""bench/results_table.py: the FFNN and RNN bootstraps are independent, as its text says."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent


def _results_table():
    spec = importlib.util.spec_from_file_location("results_table", ROOT / "bench" / "results_table.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["results_table"] = module
    spec.loader.exec_module(module)
    return module


def test_ffnn_and_rnn_bootstraps_draw_independent_resamples():
    table = _results_table()
    rng = np.random.default_rng(0)
    member = np.r_[np.ones(30, bool), np.zeros(30, bool)]
    scores = (member + rng.normal(0, 1, 60)).tolist()

    def summary(arch):  # the same scores for both: any difference of their bootstraps is the resampling's
        return {"task": "image", "preset": "quick", "arch": arch, "config": {"seed": 0},
                "records": {"membership": member.tolist(), "scores": {"shadow": scores}},
                "attacks": {"shadow": {"auc": 0.7, "tpr_at_fpr": {"0.01": 0.1}, "accuracy": 0.6}}}

    (_, ffnn), (_, rnn) = table.run_rows(summary("ffnn"), 400), table.run_rows(summary("rnn"), 400)
    d = ffnn["shadow"] - rnn["shadow"]
    # shared resamples made every difference 0 (a zero-width interval); independent ones spread like
    # √2 × one bootstrap's sd
    assert np.std(d) > 1.2 * np.std(ffnn["shadow"])
    again = table.run_rows(summary("ffnn"), 400)[1]["shadow"]
    assert np.array_equal(again, ffnn["shadow"])  # still reproducible run to run
