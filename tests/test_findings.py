"""The findings table from a tiny cached set of runs — measured cells carry N, the 95 %
interval and the verdict, the rest say "not run" with exactly the runs they need; the CLI writes
JSON + Markdown + HTML without training; the Findings page renders with its queue button."""
import json
import shutil

import pytest

from core.analyses import findings_base as findings_mod
from core.analyses.findings import findings_table, missing_jobs
from core.analyses.findings_base import FINDINGS, TARGET_REPEATS
from core.analyses.repeats import comparison_configs, repeat_config, run_comparison
from core.cli.main import main
from core.experiment import roles
from core.views.findings_report import findings_markdown, row_cells

TINY = dict(n_train=40, n_eval=20, epochs=2, n_shadows=2, attack_epochs=(1,), attack_train_epochs=3)


@pytest.fixture
def two_repeats(built_once, isolated_cache):
    """Repeats 0 and 1 of the tiny image comparison, trained and cached (2 shadows: LiRA and RMIA run):
    trained once per test run (``built_once``) and copied into this test's cache, which it may change;
    the comparison returned is read from that cache."""
    def make(folder):
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("MIA_CACHE_DIR", str(folder))
            run_comparison(comparison_configs("image", "quick", 2, TINY))

    shutil.copytree(built_once("findings-two-repeats", make), isolated_cache, dirs_exist_ok=True)
    return run_comparison(comparison_configs("image", "quick", 2, TINY))


def _row(table, finding, task="image"):
    return next(r for r in table.rows if r.finding == finding and r.task == task)


def test_table_shows_measured_cells_with_n_and_interval_and_the_rest_not_run(two_repeats, monkeypatch):
    trained = []
    monkeypatch.setattr(roles, "train_role", lambda *a, **k: trained.append(a) or pytest.fail("the table trained"))
    table = findings_table(["image"], "quick", sets=TINY)
    assert trained == []
    assert [r.finding for r in table.rows] == ["F1", "F1a", "F2", "F4", "F5"]  # F3: no image row in the study
    f1 = _row(table, "F1")
    assert f1.status == "measured" and f1.n == 2
    comp = two_repeats["metrics"]["attack_accuracy"]
    m = f1.measured
    assert m.difference.mean == pytest.approx(comp["difference"]["diff"]["mean"])
    assert m.difference.ci_low == pytest.approx(comp["difference"]["diff"]["ci_low"])
    assert m.ffnn.n == m.rnn.n == 2
    # two repeats cannot reach a verdict (the sign-flip test needs 6)
    assert m.verdict.value == "inconclusive" and m.verdict.n == 2
    assert f1.resolution.n_members == TINY["n_eval"]
    assert f1.utility_gap.gap.n == 2 and isinstance(f1.utility_gap.matched, bool)
    assert f1.command.startswith("python -m core compare --task image --preset quick --set n_train=40")
    # the runs missing for N = 6: repeats 2..5 of both architectures, timed from the measured runs
    # the runs missing for the row's own target N (≥ its decidable N), or none where it cannot decide even when run
    # (not comparable with the matching settled as unmatched, or uninformative)
    assert f1.target_repeats >= f1.decidable_at >= TARGET_REPEATS
    if f1.verdict == "uninformative" or (f1.verdict == "not comparable" and not f1.matched["unsettled"]):
        assert f1.missing == () and "cannot decide even when run" in f1.design_note
    else:
        assert sorted((d.config.arch, d.config.seed) for d in f1.missing) == sorted(
            (a, repeat_config(c, r).seed) for a, c in comparison_configs("image", "quick", 1, TINY).items()
            for r in range(2, f1.target_repeats))
        assert all(d.kind == "experiment" and d.seconds > 0 for d in f1.missing)
        assert "on this machine" in f1.missing_time
    f1a = _row(table, "F1a")
    assert f1a.status == "measured" and set(f1a.measured) == {"lira_auc", "rmia_auc"}
    assert f1a.measured["lira_auc"].difference.n == 2
    for name in ("F2", "F4", "F5"):
        row = _row(table, name)
        assert row.status == "not run" and row.n == 0 and row.missing
        assert row_cells(row)["verdict"] == "— (not run)"
    # F2 needs memorization jobs only; F4 / F5 the undefended and defended runs of each repeat
    assert {d.kind for d in _row(table, "F2").missing} == {"analysis"}
    f4 = _row(table, "F4").missing
    # the DP-SGD points (three σ at clip 10) of every repeat and arch; the undefended runs (DP off = the cached
    # runs) of repeats 2..5
    assert len(f4) == 3 * 2 * TARGET_REPEATS + 2 * (TARGET_REPEATS - 2)
    assert {d.config.dp_noise_multiplier for d in f4 if d.config.dp == "sigma"} == {0.5, 1.0, 2.0}
    assert all(d.config.dp_max_grad_norm == 10.0 for d in f4 if d.config.dp == "sigma")
    # the jobs of one row, each once; the whole table's, deduplicated
    assert len(missing_jobs(table, 0)) == len(f1.missing)
    hashes = [(m.config.config_hash, m.kind) for m in missing_jobs(table)]
    assert len(hashes) == len(set(hashes))
    data = table.to_dict()
    json.dumps(data, allow_nan=False)
    assert data["rows"][0]["missing"] == [d.to_dict() for d in f1.missing]  # the JSON: the jobs as dicts
    md = findings_markdown(table)
    assert "| F1 | image |" in md and "not run" in md and "N = 2" in md


def test_more_repeats_narrow_the_row_without_retraining(two_repeats, monkeypatch):
    configs = comparison_configs("image", "quick", 3, TINY)
    trained = []
    real = roles.train_role

    def counting(task, cfg, *a, **k):
        trained.append(cfg.seed)
        return real(task, cfg, *a, **k)

    monkeypatch.setattr(roles, "train_role", counting)
    run_comparison(configs)  # what the page's button queues: the missing repeat only
    assert set(trained) == {repeat_config(configs["ffnn"], 2).seed}
    row = _row(findings_table(["image"], "quick", sets=TINY), "F1")
    assert row.n == 3 and row.measured.difference.n == 3


def test_cli_writes_json_markdown_and_html_without_training(two_repeats, tmp_path, monkeypatch):
    monkeypatch.setattr(roles, "train_role", lambda *a, **k: pytest.fail("findings trained"))
    out, md, page = tmp_path / "f.json", tmp_path / "f.md", tmp_path / "f.html"
    sets = [x for k, v in TINY.items() for x in ("--set", f"{k}={','.join(map(str, v)) if isinstance(v, tuple) else v}")]
    assert main(["findings", "--task", "image", *sets, "--out", str(out), "--markdown", str(md),
                 "--html", str(page)]) == 0
    data = json.loads(out.read_text())
    assert data == json.loads(json.dumps(data))
    f1 = next(r for r in data["rows"] if r["finding"] == "F1")
    assert f1["n"] == 2 and f1["measured"]["verdict"]["value"] == "inconclusive"
    assert "| F1 | image |" in md.read_text() and "F1a" in md.read_text()
    assert "<table" in page.read_text() and "not run" in page.read_text()


def test_cli_refuses_bad_arguments_before_work(tmp_path, capsys):
    assert main(["findings", "--preset", "nope"]) == 2
    assert "unknown preset" in capsys.readouterr().err
    same = str(tmp_path / "x")
    assert main(["findings", "--out", same, "--markdown", same]) == 2
    with pytest.raises(SystemExit) as stop:
        main(["findings", "--task", "nosuch"])
    assert stop.value.code == 2


def test_every_finding_applies_to_a_task_with_a_source():
    assert set(FINDINGS) == {"F1", "F1a", "F2", "F3", "F4", "F5"}
    for f in FINDINGS.values():
        assert f.tasks and set(f.tasks) <= set(findings_mod.TASKS) and f.source.where


class _Recorder:
    """A stand-in job manager that records what the page queues (no worker process starts)."""

    def __init__(self):
        self.submitted = []

    def submit(self, configs, kind="experiment", params=None):
        self.submitted.append((kind, params, [c.config_hash for c in configs]))

    def active(self):
        return []

    def recent(self, seconds):
        return []


def test_page_renders_the_table_and_its_button_queues_exactly_the_missing_runs(two_repeats, monkeypatch):
    from pathlib import Path

    from streamlit.testing.v1 import AppTest

    import ui.shared
    from core.tasks import get_task
    from core.views.plain import shown_text

    task = get_task("image")  # the page reads the quick preset: make it the tiny one the runs used
    monkeypatch.setattr(type(task), "presets", {**task.presets, "quick": {**task.presets["quick"], **TINY}})
    recorder = _Recorder()
    monkeypatch.setattr(ui.shared, "job_manager", lambda: recorder)
    root = Path(__file__).resolve().parent.parent
    at = AppTest.from_file(str(root / "app_pages/5_Findings.py"))
    at.session_state["findings:tasks"] = ["image"]
    at.run(timeout=120)
    assert not at.exception, at.exception
    # first the short table (verdict first, the value: readable at 1280 px), then the whole row in the expander
    short, frame = at.dataframe[0].value, at.dataframe[1].value
    assert list(short.columns)[:2] == ["verdict", "finding"] and len(short.columns) == 5
    f1 = frame[frame["finding"] == "F1"].iloc[0]
    assert "N = 2" in f1["measured here (95 % CI, N)"] and "[" in f1["measured here (95 % CI, N)"]
    # two repeats never hold or reverse (F1's floor is N = 8 in its Holm family)
    assert f1["verdict"].split(" (")[0] in ("inconclusive", "not comparable", "uninformative")
    assert "decidable from N = " in f1["decidable at · target N"]
    assert (frame[frame["finding"] == "F4"]["verdict"] == "— (not run)").all()
    s1 = short[short["finding"] == "F1"].iloc[0]
    assert s1["verdict"] == f1["verdict"].split(" (")[0]
    assert s1["measured here (95 % CI, N)"].startswith("FFNN − RNN ") and s1["measured here (95 % CI, N)"].endswith(", N = 2")
    assert (short[short["finding"] == "F4"]["verdict"] == "— (not run)").all()
    # the row under the table: the first measured one until a row is selected, its verdict's reason in full
    details = " ".join(m.value for m in at.markdown)
    assert "F1 · image · quick" in shown_text(details) and f1["verdict"] in shown_text(details)
    # the quick preset's note is in sight (not folded into an expander)
    assert any(c.value.startswith("Preset quick — **image**:") for c in at.caption), [c.value for c in at.caption]
    buttons = [b for b in at.button if b.label.startswith("Queue these")]
    assert buttons and any(b.label.startswith("Queue every missing run") for b in at.button)
    buttons[0].click().run(timeout=120)  # the first row with runs missing: exactly those are queued
    assert not at.exception, at.exception
    table = findings_table(["image"], "quick", sets=TINY)
    first = next(r for r in table.rows if r.missing)
    kinds = {m.kind for m in first.missing}
    assert {k for k, _, _ in recorder.submitted} == kinds
    assert sorted(h for _, _, c in recorder.submitted for h in c) == sorted(m.config.config_hash for m in first.missing)


# ---------------------------------------------------------- repeats to decide, every preset's rows, past the target
def test_repeats_to_decide_is_the_fewest_n_with_eighty_percent_power_never_below_the_decidable_n():
    from core.analyses.findings import repeats_to_decide
    from core.measurement.stats import decidable_at, power_paired

    assert decidable_at(1) == 6 and decidable_at(5) == 8  # 2/2^N × Holm's factor ≤ 0.05
    for family in (1, 5):
        for sd, diff in ((0.02, 0.01), (0.05, 0.07), (1.0, 1.0)):
            n = repeats_to_decide(sd, diff, family)
            assert n >= decidable_at(family) and power_paired(diff, sd, n, family) >= 0.8
            assert n == decidable_at(family) or power_paired(diff, sd, n - 1, family) < 0.8
    assert repeats_to_decide(0.001, 0.5, 5) == 8  # never below the floor of its family
    assert repeats_to_decide(0.0, 0.1) == TARGET_REPEATS
    assert repeats_to_decide(1.0, 0.0) is None and repeats_to_decide(10.0, 1e-6) is None  # beyond the cap


def test_a_measured_row_says_how_many_repeats_decide_it_and_how_long_they_take(two_repeats):
    from core.analyses.findings import STUDY_DIFFERENCES, repeats_to_decide
    from core.views.findings_report import DECIDE

    table = findings_table(["image"], "quick", sets=TINY)
    f1 = _row(table, "F1")
    (entry,) = f1.decide
    d = f1.measured.difference
    assert entry.n == 2 and entry.sd == pytest.approx(d.sd)
    assert ("F1", "image") not in STUDY_DIFFERENCES and entry.study is None
    assert entry.study_note == "the study gives no number"
    need = entry.at_measured
    assert need.repeats == repeats_to_decide(d.sd, d.mean, len(f1.family))
    if need.repeats is not None:
        assert need.more == need.repeats - 2
        # one more repeat = one FFNN run + one RNN run, timed from the cached runs of this machine
        per = sum(m.seconds for m in f1.missing if m.config.seed == f1.missing[0].config.seed)
        assert entry.per_repeat_s == pytest.approx(per) and need.expected_s == pytest.approx(need.more * per)
    f1a = _row(table, "F1a")
    assert {e.metric for e in f1a.decide} == {"lira_auc", "rmia_auc"}
    assert all(r.decide is None for r in table.rows if r.status != "measured")
    cells = row_cells(f1)
    assert "the study gives no number" in cells[DECIDE] and "sd " in cells[DECIDE]
    md = findings_markdown(table)
    assert "≥ 80 % power at the paper's effect" in md and "Decidable at" in md
    # where the study prints a difference (navigation, 001 §1) the row is measured against it
    assert STUDY_DIFFERENCES[("F1", "navigation")][0] == pytest.approx(0.91 - 0.98)


def test_rows_for_every_preset_asked_and_not_run_where_nothing_is_cached(tmp_path):
    from core.analyses.findings import parse_presets
    from core.experiment.cache import ArtifactCache
    from core.foundations.errors import ConfigError
    from core.tasks import get_task

    empty = ArtifactCache(tmp_path / "cache")
    table = findings_table(None, "quick,cifar_cpu,multi30k_cpu", cache=empty)
    assert table.presets == ("quick", "cifar_cpu", "multi30k_cpu")
    keys = {(r.finding, r.task, r.preset) for r in table.rows}
    assert ("F1", "image", "cifar_cpu") in keys and ("F1", "translation", "multi30k_cpu") in keys
    assert ("F3", "translation", "multi30k_cpu") in keys and ("F1", "navigation", "quick") in keys
    assert not any(t == "image" and p == "multi30k_cpu" for _, t, p in keys)  # a task's rows: its own presets
    assert all(r.status == "not run" and r.missing for r in table.rows)
    assert all(r.command.count(f"--preset {r.preset}") >= 1 for r in table.rows)
    # the translation F1 rows say what deciding needs (validation BLEU ≥ 20; a GPU) and where the runs are told
    for r in table.rows:
        if r.finding == "F1" and r.task == "translation":
            assert "multi30k_small" in r.to_decide_note and "docs/results.md" in r.to_decide_note
            assert "multi30k_small" in row_cells(r)[DECIDE_COLUMN]
    assert "validation BLEU" in get_task("translation").preset_notes["paper"]
    # a task without any of the presets: rows saying so
    none = findings_table(["image", "navigation"], "cifar_cpu", cache=empty)
    assert {r.status for r in none.rows if r.task == "navigation"} == {"no preset"}
    assert parse_presets("all", ("image",)) == list(get_task("image").presets)
    with pytest.raises(ConfigError, match="unknown preset"):
        parse_presets("quick,nope", ("image",))


from core.views.findings_report import DECIDE as DECIDE_COLUMN  # noqa: E402


def test_every_rows_command_is_one_the_cli_takes(tmp_path, monkeypatch):
    """Each row's command (each ``;``-separated part) parses with the CLI's own parser, and its ``--out`` is a
    file the CLI writes: ``--out /dev/null`` was refused (`error: cannot write '/dev/null': it is a device`), so
    the F4/F5 rows told the user to run commands that fail."""
    import shlex
    from pathlib import Path

    from core.cli.main import build_parser
    from core.experiment.cache import ArtifactCache
    from core.foundations.fileio import refuse_non_regular

    monkeypatch.chdir(tmp_path)
    table = findings_table(None, "quick", cache=ArtifactCache(tmp_path / "empty"))
    parts = [part for r in table.rows for part in r.command.split(" ; ")]
    assert any(" run " in part and "--repeats" in part for part in parts)  # the F4/F5 runs are among them
    for part in parts:
        argv = shlex.split(part)
        assert argv[:3] == ["python", "-m", "core"], part
        args = build_parser().parse_args(argv[3:])
        out = getattr(args, "out", None)
        if out not in (None, "-"):
            refuse_non_regular(Path(out))  # raises for a device, a folder, a link



def test_results_md_summary_has_the_rows_the_generator_writes(tmp_path):
    """docs/results.md's generated block has the rows and columns `python -m core findings` would write now
    (from an empty cache: structure, not numbers): a finding added without regenerating fails here."""
    import re
    import shlex
    from pathlib import Path

    from core.experiment.cache import ArtifactCache
    from core.views.findings_report import BEGIN, END, markdown_rows

    text = (Path(__file__).resolve().parent.parent / "docs/results.md").read_text()
    block = text.split(BEGIN, 1)[1].split(END, 1)[0] if BEGIN in text and END in text else ""
    m = re.search(r"Written by `([^`]*)`", block)
    command, lines = (m.group(1) if m else None), [line for line in block.splitlines() if line.startswith("|")]
    assert command and lines, "docs/results.md has no generated findings block"
    argv = shlex.split(command)
    assert argv[:4] == ["python", "-m", "core", "findings"] and "--markdown" in argv
    preset = argv[argv.index("--preset") + 1] if "--preset" in argv else "quick"
    tasks = [argv[i + 1] for i, a in enumerate(argv) if a == "--task"] or None
    table = findings_table(tasks, preset, cache=ArtifactCache(tmp_path / "empty"))
    expected = markdown_rows(table)

    def shape(rows):  # per row: finding, task, claim and the preset (the resolution varies), found by column name
        head = [c.strip() for c in rows[0].strip("|").split(" | ")]
        at = head.index("preset · resolution")
        cells = [[c.strip() for c in r.strip("|").split(" | ")] for r in rows[2:]]
        return [(c[0], c[1], c[2], c[at].split(" · ")[0]) for c in cells]

    assert shape(lines) == shape(expected), f"regenerate: {command}"


def test_markdown_into_a_file_replaces_only_its_block(tmp_path, monkeypatch):
    from core.views.findings_report import BEGIN, END

    monkeypatch.setenv("MIA_CACHE_DIR", str(tmp_path / "cache"))
    doc = tmp_path / "results.md"
    doc.write_text(f"# Title\n\nkept above\n\n{BEGIN}\nold summary\n{END}\n\nkept below\n")
    assert main(["findings", "--task", "navigation", "--preset", "quick", "--markdown", str(doc),
                 "--out", str(tmp_path / "f.json")]) == 0
    text = doc.read_text()
    assert text.startswith("# Title\n\nkept above\n\n" + BEGIN) and text.endswith(END + "\n\nkept below\n")
    assert "old summary" not in text and "| F1 | navigation |" in text
    assert f"python -m core findings --task navigation --preset quick --markdown {doc}" in text
    plain = tmp_path / "plain.md"  # no markers: the whole table
    assert main(["findings", "--task", "navigation", "--markdown", str(plain), "--out", str(tmp_path / "g.json")]) == 0
    assert plain.read_text().startswith("# The studies' findings")


def test_home_links_to_findings(tmp_path, monkeypatch):
    from pathlib import Path

    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("MIA_CACHE_DIR", str(tmp_path / "cache"))
    at = AppTest.from_file(str(Path(__file__).resolve().parent.parent / "app.py")).run(timeout=60)
    assert not at.exception, at.exception
    links = [e.proto for e in at.get("page_link")]
    assert any(l.label.startswith("Findings: each claim") and l.page.endswith("Findings") for l in links), \
        [(l.label, l.page) for l in links]


def test_a_set_scoped_to_one_preset_changes_only_that_presets_rows(tmp_path):
    """``--set cifar_cpu:data_dir=DIR``: the CIFAR runs were made with a data_dir, the built-in digits runs
    without one, and data_dir is part of the config hash — so one unscoped --set could not read both."""
    from core.analyses.findings import preset_sets
    from core.experiment.cache import ArtifactCache
    from core.foundations.errors import ConfigError

    sets = {"cifar_cpu:data_dir": "/data/cifar", "n_shadows": "2"}
    assert preset_sets(sets, "cifar_cpu", ["quick", "cifar_cpu"]) == {"n_shadows": "2", "data_dir": "/data/cifar"}
    assert preset_sets(sets, "quick", ["quick", "cifar_cpu"]) == {"n_shadows": "2"}
    with pytest.raises(ConfigError, match="not one of the presets"):
        preset_sets({"paper:data_dir": "x"}, "quick", ["quick", "cifar_cpu"])
    with pytest.raises(ConfigError, match="given both"):
        preset_sets({"cifar_cpu:epochs": "3", "epochs": "4"}, "cifar_cpu", ["quick", "cifar_cpu"])
    table = findings_table(["image"], "quick,cifar_cpu", cache=ArtifactCache(tmp_path / "empty"),
                           sets={"cifar_cpu:data_dir": "/data/cifar"})
    f1 = {r.preset: r.command for r in table.rows if r.finding == "F1"}
    assert "--set data_dir=/data/cifar" in f1["cifar_cpu"] and "data_dir" not in f1["quick"]


def test_f3_reads_the_points_its_own_command_writes(tmp_path):
    """F3's row looked for Dir_k points of one draw while its command (`defend`, the mechanism's default draws:
    8) wrote points of eight, so the runs it asked for never filled it (found on this machine's quick runs)."""
    import shlex

    from core.cli.main import build_parser
    from core.defenses import registry as defense_registry
    from core.experiment.cache import ArtifactCache

    table = findings_table(["translation"], "quick", cache=ArtifactCache(tmp_path / "empty"))
    row = next(r for r in table.rows if r.finding == "F3")
    args = build_parser().parse_args(shlex.split(row.command)[3:])
    draws = args.draws if args.draws is not None else defense_registry.get(args.mechanism).default_draws
    wanted = {m.params["spec"]["draws"] for m in row.missing if m.kind == "adaptive"}
    assert wanted == {draws} == {defense_registry.get("dirichlet").default_draws}


def test_repeats_cached_past_the_target_are_read(monkeypatch):
    """Adding repeats narrows an interval without retraining — a row whose N = 6 was measured and whose
    "repeats to decide" asked for 8 reads all 8 once they are cached (it stopped at the target before), and stops
    at the first repeat not cached for every architecture."""
    import core.analyses.findings as findings
    from core.analyses.findings_base import Costs
    from core.analyses.repeats import comparison_configs, repeat_config

    configs = comparison_configs("image", "quick", 1, None)
    cached = {repeat_config(c, r).config_hash: (a, r) for a, c in configs.items() for r in range(8)}
    cached.pop(repeat_config(configs["rnn"], 9).config_hash, None)
    monkeypatch.setattr(findings, "cached_run", lambda cfg, cache, costs, recipe="plain": cached.get(cfg.config_hash))
    pairs, missing = findings._paired_pairs(configs, None, Costs(), 6)
    assert [r for _, r in pairs["ffnn"]] == list(range(8)) and [r for _, r in pairs["rnn"]] == list(range(8))
    assert missing == []
    del cached[repeat_config(configs["ffnn"], 3).config_hash]  # a hole before the target: N = 3, repeat 3 missing
    pairs, missing = findings._paired_pairs(configs, None, Costs(), 6)
    assert len(pairs["ffnn"]) == 3 and [m.config.seed for m in missing] == [repeat_config(configs["ffnn"], 3).seed]


def test_f3_reads_the_dirichlet_points_cached_past_the_target(monkeypatch):
    """F3's "repeats to decide" asked for N = 9 on navigation, but its row read only the first 6 repeats, so running
    the repeats it asked for changed nothing (found on this machine's quick runs). It reads on past the target
    while the points are cached, and stops at the first one missing."""
    import core.analyses.findings_defenses as fd
    from core.analyses.findings_base import Costs
    from core.analyses.repeats import repeat_config
    from core.tasks import get_task

    cfg = get_task("navigation").make_config("rnn", "quick", {})
    have = {repeat_config(cfg, r).config_hash: r for r in range(9)}
    accuracy = {r: 0.5 + 0.01 * (r % 3) for r in range(9)}
    monkeypatch.setattr(fd, "cached_run", lambda c, cache, costs, recipe="plain": object()
                        if c.config_hash in have else None)

    class Point:  # the two fields the row reads off a cached DefendedPoint
        def __init__(self, r: int):
            self.attack = type("A", (), {"accuracy": accuracy[r]})()
            self.utility_loss = 0.0

    monkeypatch.setattr(fd, "_defended_point", lambda c, spec, cache: Point(have[c.config_hash])
                        if c.config_hash in have else None)
    row = fd.dirichlet_row("navigation", "quick", None, cache=None, costs=Costs(), target=6)
    assert row.n == 9 and row.missing == ()
    del have[repeat_config(cfg, 7).config_hash]  # repeat 7 not cached: the row stops at N = 7
    assert fd.dirichlet_row("navigation", "quick", None, cache=None, costs=Costs(), target=6).n == 7


def test_f2_reads_the_memorization_results_cached_past_the_target(monkeypatch):
    """F2's row read only the first ``target`` repeats, so the
    repeats its "repeats to decide" asks for changed nothing; it reads on past the target while both architectures'
    memorization results are cached, and stops at the first repeat missing for either."""
    import core.analyses.findings_defenses as fd
    from core.analyses.findings_base import Costs
    from core.analyses.repeats import repeat_config
    from core.tasks import get_task

    configs = {a: get_task("image").make_config(a, "quick", {}) for a in ("ffnn", "rnn")}
    have = {repeat_config(c, r).config_hash: (a, r) for a, c in configs.items() for r in range(9)}

    class Result:  # the field the row reads off a cached Memorization: the first block's attack accuracy
        def __init__(self, arch: str, r: int):
            block = type("B", (), {"attack_accuracy": (0.6 if arch == "ffnn" else 0.55) + 0.01 * (r % 3)})()
            self.blocks = [block]

    monkeypatch.setattr(fd, "_cached_memorization", lambda c, cache: Result(*have[c.config_hash])
                        if c.config_hash in have else None)
    row = fd.memorization_row("image", "quick", None, cache=None, costs=Costs(), target=6)
    assert row.n == 9 and row.missing == ()
    del have[repeat_config(configs["rnn"], 7).config_hash]  # the RNN's repeat 7 not cached: the row stops at N = 7
    assert fd.memorization_row("image", "quick", None, cache=None, costs=Costs(), target=6).n == 7
