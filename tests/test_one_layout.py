"""One name per concept: the ``resolution`` block is one class wherever it is written (the producer's,
:class:`core.measurement.metrics.Resolution`), and ``analyses.json`` is one class whoever writes or reads it
(:class:`core.analyses.analyses_json.AnalysesResults`); each writes back exactly the JSON read."""
from __future__ import annotations

import json

import pytest

from core.analyses.analyses_json import AnalysesResults
from core.analyses.comparison_results import ComparisonResult
from core.analyses.findings_base import FindingRow
from core.analyses.verdicts import RepeatedVerdicts, RunVerdict
from core.foundations.errors import ResultFormatError
from core.measurement.metrics import Resolution, resolution
from tests.typed_runs import typed_run


def test_resolution_is_born_typed_and_written_as_before():
    r = resolution(20, 10)
    assert isinstance(r, Resolution)
    # the block the summaries carry, keys in this order (the layout of before)
    assert json.dumps(r.to_dict()) == json.dumps({"n_members": 20, "n_nonmembers": 10, "tpr_step": 0.05,
                                                  "fpr_step": 0.1, "accuracy_step": 1 / 30})
    assert resolution(0, 0).tpr_step == resolution(0, 0).accuracy_step == 1.0  # an empty side: one whole step


def test_a_counts_only_block_reads_its_steps_and_writes_back_what_it_read():
    block = {"n_nonmembers": 16, "n_members": 8, "note": "kept"}  # hand-made: no steps, an unknown key, another order
    r = Resolution.from_dict(block)
    assert (r.tpr_step, r.fpr_step, r.accuracy_step) == (0.125, 0.0625, 1 / 24)
    assert json.dumps(r.to_dict()) == json.dumps(block)


def test_every_reader_holds_the_one_resolution():
    block = resolution(16, 16).to_dict()
    run = typed_run({"resolution": block})
    assert isinstance(run.resolution, Resolution) and run.resolution == resolution(16, 16)
    assert run.to_dict()["resolution"] == block
    comp = ComparisonResult.from_dict({"metrics": {}, "resolution": {"ffnn": block, "rnn": {"n_members": 4,
                                                                                           "n_nonmembers": 5}}})
    assert all(isinstance(r, Resolution) for r in comp.resolution.values()) and comp.n_nonmembers() == {"ffnn": 16,
                                                                                                       "rnn": 5}
    repeats = typed_run({"repeats": {"n": 1, "seeds": [0], "config_hashes": ["a"], "metrics": {},
                                     "resolution": block}}).repeats
    assert isinstance(repeats.resolution, Resolution) and repeats.n_nonmembers == 16
    row = FindingRow.from_dict({"finding": "F1", "claim": "c", "task": "image", "preset": "quick",
                                "source": {"paper": "000", "where": "Fig. 4"}, "status": "not run", "n": 0,
                                "target_repeats": 6, "missing": [], "missing_time": "", "command": "",
                                "resolution": block})
    assert isinstance(row.resolution, Resolution) and row.to_dict()["resolution"] == block
    with pytest.raises(ResultFormatError, match=r"^summary\.resolution\.n_members must be an integer, got '8'$"):
        typed_run({"resolution": {"n_members": "8", "n_nonmembers": 8}})


def _verdict(value: str) -> dict:
    return RunVerdict(value, f"{value}: FFNN − RNN -0.1", -0.1).to_dict()


REPEATS = {"n": 2, "seeds": [0, 7], "verdicts": {}, "missing": {"memorization": "1 of 2 repeats have no blocks"}}


@pytest.mark.parametrize("layout", [
    # analyze's order: verdicts before the analyses, repeats last
    {"task": "image", "archs": ["ffnn", "rnn"], "verdicts": {"v": _verdict("inconclusive")},
     "scatter": {"ffnn": {"x": [1, 2]}}, "most_exposed": {"ffnn": []}, "repeats": REPEATS},
    # analyze --cached's (AnalysesView.as_results): the analyses, then verdicts and repeats
    {"task": "image", "archs": ["ffnn", "rnn"], "scatter": {"ffnn": {"x": [1, 2]}}, "vulnerability": {},
     "verdicts": {"v": _verdict("holds")}, "repeats": REPEATS},
])
def test_analyses_json_is_one_class_in_either_order(layout):
    typed = AnalysesResults.from_dict(layout)
    assert json.dumps(typed.to_dict()) == json.dumps(layout)  # keys, their order and values as read
    assert isinstance(typed.verdicts["v"], RunVerdict) and isinstance(typed.repeats, RepeatedVerdicts)
    assert typed.task == "image" and typed.archs == ("ffnn", "rnn")
    assert list(typed.analyses) == [k for k in layout if k not in ("task", "archs", "verdicts", "repeats")]
    assert typed.printed() == {"verdicts": layout["verdicts"], "repeats": REPEATS}  # analyze's stdout
    one_run = AnalysesResults.from_dict({k: v for k, v in layout.items() if k != "repeats"})
    assert one_run.repeats is None and one_run.printed() == layout["verdicts"]


def test_a_malformed_analyses_json_is_refused_naming_the_field():
    with pytest.raises(ResultFormatError, match=r"^analyses\.verdicts\['v'\] must be a JSON object, got 3$"):
        AnalysesResults.from_dict({"verdicts": {"v": 3}})
    assert AnalysesResults.from_dict({}).verdicts is None  # a hand-made dict without verdicts: none to print
