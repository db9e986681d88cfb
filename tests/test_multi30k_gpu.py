"""The translation preset that translates, for one GPU: ``multi30k_gpu``'s config, matched sizes
at Multi30K's vocabularies, its training recipe (warm-up schedule, label smoothing, scaled Transformer
embeddings) wired through the task, a tiny run of it; and the device call's CPU runs (bench/device_findings.py)
landing exactly on the cache entries ``compare`` reads."""
from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

from core.analyses.repeats import comparison_configs, repeat_config, repeat_seed
from core.cli.common import parse_sets
from core.experiment.cache import ArtifactCache
from core.experiment.pipeline import run_experiment
from core.foundations.errors import ConfigError
from core.models import count_params
from core.models.translation import PAD, LuongSeq2Seq, TransformerSeq2Seq, match_transformer
from core.tasks import get_task
from core.training.loop import build_optimizer, seeded_generator, train_epochs, warmup_inverse_sqrt
from tests.test_real_presets import preset_times_rows, write_multi30k_fixture

ROOT = Path(__file__).resolve().parent.parent
#: Multi30K's train vocabularies at min_freq 2 (core/tasks/translation.py: en 5,871, de 7,833)
EN_VOCAB, DE_VOCAB = 5871, 7833
TINY = dict(n_train=40, n_eval=20, epochs=2, n_shadows=1, emb=8, hidden=8, bleu_sentences=4, batch_size=8,
            warmup_steps=3, attack_train_epochs=2, n_examples=1)


def test_multi30k_gpu_is_en_de_multi30k_sized_for_its_half_and_says_it_needs_a_gpu():
    task = get_task("translation")
    note = task.preset_notes["multi30k_gpu"]
    assert "GPU" in note and "data_dir" in note and "to be measured" not in note
    for arch in ("ffnn", "rnn"):
        cfg = task.make_config(arch, "multi30k_gpu")
        o = cfg.options
        assert (cfg.dataset, o.src_lang, o.tgt_lang) == ("multi30k", "en", "de")
        # the victim's members + non-members and each shadow's come from one half of Multi30K's 29,000 pairs
        assert cfg.n_train + cfg.n_eval <= 29_000 // 2 - 500
        assert cfg.n_train > task.presets["paper"]["n_train"]  # more pairs than the study's: less memorisation
        assert o.warmup_steps > 0 and 0 < o.label_smoothing < 1 and o.tf_scaled_embeddings
    # one recipe for both architectures: only the architecture differs
    f, r = (task.make_config(a, "multi30k_gpu") for a in ("ffnn", "rnn"))
    assert f.seed == r.seed and f.options == r.options and (f.lr, f.epochs, f.batch_size) == (r.lr, r.epochs, r.batch_size)


def test_multi30k_gpu_figures_in_the_docs_are_the_device_runs_and_its_note_points_to_them():
    """docs/results.md (its section and its "Preset times" row) quotes the one H100 run of 2026-11-27
    (docs/device_runs/2026-11-27/gpu_check.json): every figure it gives is that file's, rounded. The preset's note
    and the findings' translation note (page text) give no figure of it and point to the docs."""
    import json

    from core.analyses.findings import DECIDING_NEEDS
    from core.tasks.base import PRESET_TIMES

    raw = json.loads((ROOT / "docs/device_runs/2026-11-27/gpu_check.json").read_text())["steps"]
    runs = {a: raw[f"translation multi30k_gpu en→de {a}"] for a in ("ffnn", "rnn")}
    figures = []
    for a in ("ffnn", "rnn"):
        r = runs[a]
        figures += [f"{r['train_s']:.1f} s", f"{r['attack_s']:.1f} s", f"{r['utility']['val']:.1f}",
                    f"{r['utility']['train']:.1f}", f"{r['auc']['lira']:.3f}", f"{r['auc']['rmia']:.3f}"]
    texts = {"docs/results.md": (ROOT / "docs/results.md").read_text(),
             "its Preset times row": preset_times_rows()[("translation", "multi30k_gpu")]}
    finding_note = DECIDING_NEEDS["translation"]
    assert "docs/results.md" in finding_note and "2026" not in finding_note
    note = get_task("translation").preset_notes["multi30k_gpu"]
    assert PRESET_TIMES in note and "2026" not in note and "5953d02" not in note
    for where, text in {"the findings' note": finding_note, "the preset note": note}.items():
        assert not any(f in text for f in figures), (where, text)
    for where, text in texts.items():
        for f in figures[2:4] + figures[8:10]:  # validation / train BLEU of both
            assert f in text, (where, f)
        for f in (figures[4], figures[5], figures[10], figures[11]):  # LiRA and RMIA AUC of both
            assert f in text, (where, f)
        for f in (figures[0], figures[1], figures[6], figures[7]):  # training and attack-stage seconds
            assert f in text, (where, f)
        assert "5953d02" in text and "2026-11-27" in text, where
    # the bar: both translate (validation BLEU ≥ 20); LiRA below 0.95 for both, RMIA above for both
    assert all(r["utility"]["val"] >= 20 for r in runs.values())
    assert all(r["auc"]["lira"] <= 0.95 < r["auc"]["rmia"] for r in runs.values())
    # the estimate for N = 6: six times one repeat of both, each the check's whole step (gpu_check.log's seconds)
    import re

    log = (ROOT / "docs/device_runs/2026-11-27/gpu_check.log").read_text()
    step = {a: float(re.search(rf"^\[translation multi30k_gpu en→de {a}\] ([0-9.]+) s", log, re.M).group(1))
            for a in ("ffnn", "rnn")}
    for where, text in texts.items():
        assert f"6 × ({step['ffnn']:.0f} + {step['rnn']:.0f}) s" in text, where
        assert f"≈ {6 * (step['ffnn'] + step['rnn']) / 60:.0f} min" in text, where


def test_multi30k_gpu_models_at_multi30ks_vocabularies_are_matched_within_5_percent():
    o = get_task("translation").make_config("rnn", "multi30k_gpu").options
    lstm = LuongSeq2Seq.param_count(EN_VOCAB, DE_VOCAB, o.emb, o.hidden)
    d, ff = match_transformer(lstm, EN_VOCAB, DE_VOCAB, o.tf_heads, o.tf_layers, prefer_d=o.emb)
    tf = TransformerSeq2Seq(EN_VOCAB, DE_VOCAB, d, o.tf_heads, o.tf_layers, ff, o.dropout,
                            scaled_embeddings=o.tf_scaled_embeddings)
    assert count_params(tf) == TransformerSeq2Seq.param_count(EN_VOCAB, DE_VOCAB, d, o.tf_layers, ff)
    assert abs(count_params(tf) - lstm) / lstm <= 0.05


def test_multi30k_gpu_trains_and_attacks_at_tiny_sizes_on_a_fixture(tmp_path):
    """Both architectures through the whole pipeline with the preset's recipe (tiny sizes, a fixture of
    Multi30K's layout): utility and attacks come out, and the two models are matched in size."""
    task = get_task("translation")
    folder = write_multi30k_fixture(tmp_path / "m30k")
    cache = ArtifactCache(tmp_path / "cache")
    params = {}
    for arch in ("ffnn", "rnn"):
        cfg = task.make_config(arch, "multi30k_gpu", {**TINY, "data_dir": str(folder)})
        summary = run_experiment(cfg, cache=cache).summary
        assert summary["preset"] == "multi30k_gpu" and summary["config"]["options"]["warmup_steps"] == 3
        assert 0.0 <= summary["utility"]["val"] <= 100.0
        assert summary["attacks"] and all(0.0 <= a["auc"] <= 1.0 for a in summary["attacks"].values())
        params[arch] = summary["params"]
    assert abs(params["ffnn"] - params["rnn"]) / max(params.values()) <= 0.05


def test_the_recipe_enters_the_training_hash_only_when_set():
    task = get_task("translation")
    plain = task.make_config("ffnn", "paper")
    for key, value in (("warmup_steps", 100), ("label_smoothing", 0.1), ("tf_scaled_embeddings", True)):
        assert task.make_config("ffnn", "paper", {key: value}).training_hash != plain.training_hash, key
    zero = {"warmup_steps": 0, "label_smoothing": 0.0, "tf_scaled_embeddings": False}
    assert task.make_config("ffnn", "paper", zero).training_hash == plain.training_hash


@pytest.mark.parametrize("bad", [{"warmup_steps": -1}, {"label_smoothing": 1.0}, {"label_smoothing": -0.1},
                                 {"tf_scaled_embeddings": "sometimes"}])
def test_bad_recipe_values_are_one_line_config_errors(bad):
    with pytest.raises(ConfigError) as err:
        get_task("translation").make_config("ffnn", "multi30k_gpu", bad)
    assert "\n" not in str(err.value) and next(iter(bad)) in str(err.value)


def test_warmup_inverse_sqrt_rises_linearly_then_decays_as_the_inverse_root():
    assert warmup_inverse_sqrt(0) is None
    f = warmup_inverse_sqrt(100)
    assert f(0) == pytest.approx(0.01) and f(49) == pytest.approx(0.5) and f(99) == pytest.approx(1.0)
    assert f(399) == pytest.approx(0.5) and f(9999) == pytest.approx(0.1)
    with pytest.raises(ValueError):
        warmup_inverse_sqrt(-1)


def test_train_epochs_sets_each_steps_rate_from_the_schedule_and_restores_the_optimizers():
    torch.manual_seed(0)
    model = nn.Linear(3, 1)
    x, y = torch.randn(20, 3), torch.randn(20, 1)
    optimizer = build_optimizer(model, 0.1)
    seen = []

    def loss(index: torch.Tensor) -> torch.Tensor:
        seen.append(optimizer.param_groups[0]["lr"])
        return ((model(x[index]) - y[index]) ** 2).mean()

    f = warmup_inverse_sqrt(4)
    record = train_epochs(model, 20, loss, epochs=3, batch_size=5, optimizer=optimizer, generator=seeded_generator(),
                          lr_factor=f)
    assert record.steps == 12 and seen == pytest.approx([0.1 * f(s) for s in range(12)])
    assert all(g["lr"] == 0.1 for g in optimizer.param_groups)


def test_label_smoothing_changes_the_training_loss_the_task_takes():
    """The task's loss with smoothing ε is (1 − ε)·NLL + ε·(mean −log p over the vocabulary): with the same
    model and batch the two runs' first losses differ, by the amount that formula gives."""
    task = get_task("translation")
    losses = {}
    for eps in (0.0, 0.2):
        cfg = task.make_config("rnn", "quick", {"n_pairs_source": 200, "n_train": 16, "n_eval": 8, "epochs": 1,
                                                "batch_size": 16, "emb": 8, "hidden": 8, "attack_epochs": (),
                                                "label_smoothing": eps})
        data = task.load(cfg)
        torch.manual_seed(0)
        model = task.build_model(cfg, data)
        got = []
        task.train(cfg, model, data, np.asarray(data.victim_pool[:16]), lambda e, m: None, lambda f: None,
                   on_batch=lambda b: got.append(b.loss))
        losses[eps] = got[0]
    # a barely trained model over a vocabulary of V: −log p ≈ log V for every token, so both losses ≈ log V,
    # but smoothing adds ε·(mean −log p − NLL), a nonzero amount for any model that is not exactly uniform
    assert losses[0.0] != losses[0.2]
    assert abs(losses[0.0] - losses[0.2]) < 0.2 * losses[0.0]


def test_scaled_embeddings_have_unit_scale_after_the_input_scaling_and_a_zero_pad_row():
    torch.manual_seed(0)
    d = 64
    model = TransformerSeq2Seq(500, 600, d, 4, 1, 128, 0.0, scaled_embeddings=True)
    for emb in (model.src_emb, model.tgt_emb):
        w = emb.weight.detach()
        assert torch.all(w[PAD] == 0)
        assert float(w[PAD + 1:].std() * math.sqrt(d)) == pytest.approx(1.0, rel=0.05)
    plain = TransformerSeq2Seq(500, 600, d, 4, 1, 128, 0.0)
    assert float(plain.src_emb.weight.detach()[1:].std()) == pytest.approx(1.0, rel=0.05)  # PyTorch's N(0, 1)
    assert count_params(plain) == count_params(model)


def _device_findings():
    spec = importlib.util.spec_from_file_location("device_findings", ROOT / "bench" / "device_findings.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("task_name", ["image", "translation", "navigation"])
@pytest.mark.parametrize("tiny", [False, True])
def test_the_device_calls_runs_are_the_repeats_compare_and_findings_read(task_name, tiny):
    """``python -m core run --preset quick --set seed=repeat_seed(0, r) [tiny sets]`` (one process per run)
    has the config hash of compare's repeat r, so compare after those runs reads them and trains nothing."""
    df = _device_findings()
    sets = parse_sets(df.TINY_SETS[task_name]) if tiny else {}
    task = get_task(task_name)
    configs = comparison_configs(task_name, "quick", 6, dict(sets))
    for arch in ("ffnn", "rnn"):
        for r in range(6):
            run = task.make_config(arch, "quick", {**sets, "seed": str(repeat_seed(0, r))})
            assert run.config_hash == repeat_config(configs[arch], r).config_hash, (arch, r)


def test_the_device_call_tiny_runs_each_repeat_in_its_own_process_then_compare_reads_them(tmp_path):
    """bench/device_findings.py --tiny on the CPU, image only, one repeat: both runs succeed, compare and
    findings read the shared cache (compare adds no cache entry: it trained nothing), at most 8 files out.
    Its ``main`` runs in this process (the library is loaded already); each run, compare and findings is
    still its own process, as on the device. The GPU part (bench/gpu_check.py's steps) is left out here:
    tests/test_real_presets.py runs every one of them."""
    spec = importlib.util.spec_from_file_location("device_findings_under_test", ROOT / "bench" / "device_findings.py")
    device_findings = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(device_findings)
    folder = write_multi30k_fixture(tmp_path / "m30k")
    out = tmp_path / "out"
    rc = device_findings.main(["--multi30k", str(folder), "--out", str(out), "--tiny", "--no-gpu", "--tasks", "image",
                               "--repeats", "1", "--budget-s", "400"])
    assert rc == 0
    log = (out / "session.log").read_text()
    assert "image 2/2 ok" in log and "(compare trained nothing)" in log, log
    compared = __import__("json").loads((out / "compare.json").read_text())
    assert compared["image"]["repeats"] == 1
    findings = __import__("json").loads((out / "findings.json").read_text())
    f1 = [r for r in findings["image"]["rows"] if r["finding"] == "F1"]
    assert f1 and f1[0]["n"] == 1
    rows = (out / "times.tsv").read_text().splitlines()[1:]
    assert len(rows) == 2 and all(r.split("\t")[3] == "0" for r in rows)
    assert len(list(out.iterdir())) <= 8


def test_the_device_call_refuses_a_folder_without_multi30k_in_one_line(tmp_path):
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, str(ROOT / "bench" / "device_findings.py"), "--multi30k", str(tmp_path),
                           "--out", str(tmp_path / "out"), "--tiny"], capture_output=True, text=True, cwd=ROOT,
                          timeout=120)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "train.en.gz" in proc.stderr
