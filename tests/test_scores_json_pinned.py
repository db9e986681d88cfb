"""``python -m core score`` writes the JSON it wrote before its results were read typed.

The report and the Your model page now read :class:`core.analyses.scores.ScoresResult` by attribute; the JSON
is still ``result.to_dict()``. ``data/scores_cli_golden.json`` is that command's output on the file
:func:`write_fixture` makes, written by the code at bcc7f5c (before the change): every key in its order, every
string, count and flag equal, every number equal to 1e-9 (the same numpy and scipy give the same bytes; the
tolerance keeps the test about layout and values, not the last bit of another machine's arithmetic). The
fixture has logits (the entropy attack), labels and a slice column (both slicings), and reference losses with
IN/OUT masks (offline and online LiRA, RMIA, the AUC comparisons), so every part of the result is written.
"""
from __future__ import annotations

import csv
import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from core.cli.main import main
from core.foundations.version import unstamped

GOLDEN = Path(__file__).resolve().parent / "data" / "scores_cli_golden.json"


def write_fixture(path: Path, n: int = 80, k: int = 4, seed: int = 29) -> Path:
    """A scores file with every kind of column: members' logits favour their label, references' losses
    share each record's difficulty and drop where the reference trained on the record."""
    rng = np.random.default_rng(seed)
    member = np.r_[np.ones(n // 2, int), np.zeros(n - n // 2, int)]
    label = rng.integers(0, 3, n)
    logits = rng.normal(0, 1, (n, 3))
    logits[np.arange(n), label] += 0.5 + member
    difficulty = rng.normal(0, 1, n)
    ref_in = rng.random((n, k)) < 0.5
    ref_loss = np.log1p(np.exp(difficulty[:, None] - ref_in + rng.normal(0, 0.3, (n, k))))
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["member", "logit_0", "logit_1", "logit_2", "label"] + [f"ref_loss_{j}" for j in range(k)]
                   + [f"ref_in_{j}" for j in range(k)] + ["slice"])
        for i in range(n):
            w.writerow([member[i], *(f"{v:.6f}" for v in logits[i]), label[i], *(f"{v:.6f}" for v in ref_loss[i]),
                        *ref_in[i].astype(int), "rare" if i % 4 == 0 else "common"])
    return path


def _same(got: Any, want: Any, where: str = "$") -> int:
    """Asserts ``got`` equals ``want`` (dict keys in order, numbers to 1e-9); the number of leaves compared."""
    if isinstance(want, float) and isinstance(got, (int, float)) and not isinstance(got, bool):
        assert math.isclose(got, want, rel_tol=1e-9, abs_tol=1e-12), (where, got, want)
        return 1
    assert type(got) is type(want), (where, type(got).__name__, type(want).__name__)
    if isinstance(want, dict):
        assert list(got) == list(want), (where, list(got), list(want))
        return sum(_same(got[key], want[key], f"{where}.{key}") for key in want)
    if isinstance(want, list):
        assert len(got) == len(want), (where, len(got), len(want))
        return sum(_same(g, w, f"{where}[{i}]") for i, (g, w) in enumerate(zip(got, want)))
    assert got == want, (where, got, want)
    return 1


def test_the_score_command_writes_the_json_it_wrote_before_the_results_were_typed(tmp_path):
    src = write_fixture(tmp_path / "scores.csv")
    out = tmp_path / "result.json"
    main(["score", "--in", str(src), "--out", str(out), "--bootstrap", "100"])
    got, want = dict(unstamped(json.loads(out.read_text(encoding="utf-8")))), json.loads(GOLDEN.read_text(encoding="utf-8"))
    assert list(want["attacks"]) == ["loss", "entropy", "lira_offline", "rmia", "lira_online"]  # the fixture's reach
    assert {s["slicing"] for s in want["slices"]} == {"slice", "label"} and len(want["comparisons"]) == 3
    assert _same(got, want) > 1000
