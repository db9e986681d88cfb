"""Translation task: captions generator, Multi30K loader, text processing, models, attacks."""
from __future__ import annotations

import gzip
import json

import numpy as np
import pytest
import torch

from core.attacks.shadow_attacks import fit_attacks, score_attacks
from core.data.corpus import generate_captions
from core.data.multi30k import load_multi30k
from core.data.translation_records import Vocab, build_records, detokenize, tokenize
from core.experiment.cache import ArtifactCache
from core.experiment.pipeline import build_attacks
from core.experiment.roles import make_splits, train_or_load
from core.foundations.errors import ConfigError, DatasetNotFoundError
from core.measurement.responses import Responses
from core.models import count_params
from core.models.translation import LuongSeq2Seq, TransformerSeq2Seq, match_transformer
from core.tasks import get_task
from core.tasks.base import TaskData
from core.tasks.examples import TranslationExamples
from core.tasks.translation import bleu_features

TASK = get_task("translation")


# ---------------------------------------------------------------------------- captions corpus
def test_captions_deterministic_and_seeded():
    a = generate_captions(500, seed=7)
    assert a == generate_captions(500, seed=7)
    assert a != generate_captions(500, seed=8)
    assert len(set(a)) == 500 and len({s for s, _ in a}) == 500


# the grammar, agreement, reordering and the held-out split are tested in tests/test_corpus.py


# ---------------------------------------------------------------------------- Multi30K loader
def _write(folder, name, lines, gz):
    text = "".join(line + "\n" for line in lines)
    if gz:
        with gzip.open(folder / (name + ".gz"), "wt", encoding="utf-8") as fh:
            fh.write(text)
    else:
        (folder / name).write_text(text, encoding="utf-8")


@pytest.mark.parametrize("gz", [True, False])
def test_multi30k_loader(tmp_path, gz):
    en = ["Two young, White males are outside.", "A girl climbing into a playhouse."]
    de = ["Zwei junge weiße Männer sind im Freien.", "Ein Mädchen klettert in ein Spielhaus."]
    _write(tmp_path, "train.en", en, gz)
    _write(tmp_path, "train.de", de, gz)
    assert load_multi30k(tmp_path, "en", "de") == list(zip(en, de))
    assert load_multi30k(tmp_path, "de", "en") == list(zip(de, en))


def test_multi30k_missing_files(tmp_path):
    with pytest.raises(DatasetNotFoundError, match="not found"):
        load_multi30k(tmp_path / "nope")
    _write(tmp_path, "train.en", ["a"], True)
    with pytest.raises(DatasetNotFoundError, match=r"train\.de\.gz"):
        load_multi30k(tmp_path, "en", "de")
    _write(tmp_path, "train.de", ["a", "b"], False)
    with pytest.raises(DatasetNotFoundError, match="do not align"):
        load_multi30k(tmp_path, "en", "de")
    cfg = TASK.make_config("rnn", "quick", {"dataset": "multi30k", "data_dir": str(tmp_path / "nope")})
    with pytest.raises(DatasetNotFoundError, match="train.en.gz"):
        TASK.load(cfg)
    with pytest.raises(DatasetNotFoundError, match="data_dir"):
        TASK.load(TASK.make_config("rnn", "quick", {"dataset": "multi30k"}))


# ---------------------------------------------------------------------------- text processing
def test_tokenizer_round_trip():
    texts = [s for p in generate_captions(200, seed=2) for s in p] + [
        "A man's T-shirt (red), 5.5 % off!", "Zwei junge weiße Männer sind im Freien.", "and/or: yes; no?"]
    for text in texts:
        toks = tokenize(text)
        assert toks == [t.lower() for t in toks]
        assert tokenize(detokenize(toks)) == toks
    assert detokenize(tokenize("A man's t-shirt, red.")) == "a man's t-shirt, red."


def test_vocab_min_freq_and_unk():
    v = Vocab.build([["a", "b", "a"], ["a", "c", "b"]], min_freq=2)
    assert v.itos[:4] == ["<pad>", "<sos>", "<eos>", "<unk>"] and v.itos[4:] == ["a", "b"]
    assert v.encode(["a", "c"]).tolist() == [4, 3]
    assert v.decode([4, 5, 2, 4]) == ["a", "b"]


def test_bleu_features():
    ref = "il mano korat sok la fisa ."
    assert bleu_features(ref, ref) == pytest.approx([1, 1, 1, 1, 1])
    f = bleu_features("il mano korat .", ref)
    assert f[0] == 1.0 and f[1] == pytest.approx(2 / 3) and f[3] == 0.0 and 0 < f[4] < 1
    assert bleu_features("", ref) == [0, 0, 0, 0, 0]


# ---------------------------------------------------------------------------- models
@pytest.mark.parametrize("vs,vt,emb,hidden,layers", [(1629, 5180, 64, 96, 1), (9800, 8000, 150, 200, 2), (300, 400, 32, 64, 1)])
def test_parameter_counts_match(vs, vt, emb, hidden, layers):
    rnn = LuongSeq2Seq.param_count(vs, vt, emb, hidden)
    d, ff = match_transformer(rnn, vs, vt, 4, layers, prefer_d=emb)
    tf = TransformerSeq2Seq.param_count(vs, vt, d, layers, ff)
    assert abs(tf - rnn) / rnn < 0.05
    if vs < 2000:  # the closed forms agree with the real modules
        assert count_params(LuongSeq2Seq(vs, vt, emb, hidden)) == rnn
        assert count_params(TransformerSeq2Seq(vs, vt, d, 4, layers, ff)) == tf


def _tiny_data(n: int, seed: int = 3) -> TaskData:
    rec = build_records(generate_captions(n, seed=seed), 1, 30)
    return TaskData(rec, np.arange(n), np.arange(0), f"{n} pairs", {})


@pytest.mark.parametrize("arch,lr", [("rnn", 1e-2), ("ffnn", 3e-3)])
def test_models_overfit_20_pairs(arch, lr):
    data = _tiny_data(20)
    cfg = TASK.make_config(arch, "quick", {"epochs": 50, "attack_epochs": (), "lr": lr, "batch_size": 10, "emb": 32,
                                           "hidden": 64, "dropout": 0.0})
    torch.manual_seed(0)
    model = TASK.build_model(cfg, data)
    epochs = []
    TASK.train(cfg, model, data, np.arange(20), lambda e, m: epochs.append(e), lambda f: None)
    assert epochs == list(range(1, 51))
    assert TASK.utility(cfg, model, data, np.arange(20)) > 90


@pytest.mark.parametrize("dp", [False, True])
def test_incremental_greedy_decoding_equals_teacher_forcing_its_own_output(dp):
    """Each token greedy() emits is the argmax of the full (teacher-forced) decoder on the prefix
    it decoded: the incremental cache computes what re-decoding the whole prefix computes."""
    from core.models.translation import EOS, PAD, SOS

    torch.manual_seed(0)
    model = TransformerSeq2Seq(40, 50, d_model=16, heads=2, layers=2, ff=32, dropout=0.3, dp=dp).eval()
    with torch.no_grad():  # a peaked output layer, so the argmax is never a near-tie
        model.out.weight.mul_(20)
    src = torch.randint(4, 40, (6, 7))
    src[3, 5:] = PAD
    ys = model.greedy(src, torch.tensor([7, 7, 7, 5, 7, 7]), 12)
    assert ys.shape[0] == 6 and 1 <= ys.shape[1] <= 12
    prefix = torch.cat([torch.full((6, 1), SOS), ys], 1)
    with torch.no_grad():
        logits = model(src, None, prefix[:, :-1])  # (B, T, V) on each row's own prefix
    for row in range(6):
        for t in range(ys.shape[1]):
            assert int(logits[row, t].argmax()) == int(ys[row, t])
            if int(ys[row, t]) == EOS:
                assert (ys[row, t + 1:] == PAD).all()  # finished rows pad
                break


def test_respond_layout_and_examples():
    data = _tiny_data(30)
    cfg = TASK.make_config("rnn", "quick", {"epochs": 2, "attack_epochs": (), "emb": 16, "hidden": 16})
    torch.manual_seed(0)
    model = TASK.build_model(cfg, data)
    index = np.array([5, 1, 7])
    r = TASK.respond(cfg, model, data, index)
    rec = data.records
    assert r.lengths.tolist() == [len(rec.tgt_ids[i]) + 1 for i in index]  # + <eos>
    assert r.n_classes == len(rec.tgt_vocab) and r.probs is None  # vocab > 64: top-K only
    assert r.ref_index[: r.lengths[0]].tolist() == rec.tgt_ids[5].tolist() + [2]
    assert r.record_features["bleu_features"].shape == (3, 5)
    ex = TASK.examples(cfg, model, data, np.array([0, 1]), np.array([2, 3]))
    json.dumps(ex)
    assert [s["member"] for s in ex["sentences"]] == [True, True, False, False]
    assert len(ex["sentences"][0]["tokens"]) == len(rec.tgt_ids[0]) + 1
    typed = TranslationExamples.from_dict(ex)  # what the views read: every field, and it writes the same JSON back
    assert json.dumps(typed.to_dict()) == json.dumps(ex) and typed.sentences[2].source == rec.src_text[2] and not typed.sentences[2].member


def test_options_validation():
    with pytest.raises(ConfigError):
        TASK.make_config("rnn", "quick", {"tgt_lang": "en", "src_lang": "en"})
    with pytest.raises(ConfigError):
        TASK.make_config("ffnn", "quick", {"tf_d_model": 30})


# ---------------------------------------------------------------------------- attacks
def test_pvmia_above_chance_on_victim_and_at_chance_on_unseen_members():
    """PVMIA (the shadow attack) against a victim that trained on the members, and against a
    'null victim' of the same specification trained on other records of the victim's half: for
    it the evaluation set's members are non-members too, so the same attack must be at chance."""
    cfg = TASK.make_config("rnn", "quick", {
        "n_pairs_source": 1200, "n_train": 80, "n_eval": 60, "epochs": 25, "attack_epochs": (), "n_shadows": 2,
        "emb": 32, "hidden": 48, "lr": 1e-2, "batch_size": 16, "attack_train_epochs": 40, "bleu_sentences": 10})
    data = TASK.load(cfg)
    splits = make_splits(cfg, data)
    cache = ArtifactCache()
    query = splits.eval_index
    victim = train_or_load(TASK, cfg, data, "victim", splits.victim_members, query, cache)
    others = np.setdiff1d(data.victim_pool, np.concatenate([splits.victim_members, splits.victim_nonmembers]))
    null = train_or_load(TASK, cfg, data, "shadow_9", others[: cfg.n_train], query, cache)  # never saw the members
    shadows = []
    for i in range(cfg.n_shadows):
        q = np.concatenate([splits.shadow_in[i][: cfg.n_eval], splits.shadow_out[i]])
        shadows.append(train_or_load(TASK, cfg, data, f"shadow_{i}", splits.shadow_in[i], q, cache))
    shadow_resp = Responses.concat([s.responses[cfg.epochs] for s in shadows])
    shadow_membership = np.concatenate([splits.eval_membership] * cfg.n_shadows)

    def auc(target) -> dict[str, float]:
        out = score_attacks(fit_attacks(build_attacks(TASK, cfg), shadow_resp, shadow_membership),
                            target.responses[cfg.epochs], splits.eval_membership)
        return {name: o.result.auc for name, o in out.items()}

    on_victim, on_null = auc(victim), auc(null)
    assert on_victim["shadow"] > 0.75, on_victim
    assert abs(on_null["shadow"] - 0.5) < 0.15, on_null
    assert on_victim["prmia"] > 0.65


def test_multi30k_download_writes_complete_files_and_reports_offline(tmp_path, monkeypatch):
    """The download button's function, with the network replaced by local bytes (tests stay offline)."""
    import gzip as _gzip
    import io
    import urllib.error

    from core.data import multi30k

    served = []

    def fake_urlopen(url, timeout):
        served.append(url)
        name = url.rsplit("/", 1)[1]
        return io.BytesIO(_gzip.compress(f"line of {name}\n".encode()))

    monkeypatch.setattr(multi30k.urllib.request, "urlopen", fake_urlopen)
    folder = tmp_path / "m30k"
    fetched = multi30k.download_multi30k(folder, ("en", "de"))
    assert sorted(fetched) == sorted(f"{s}.{l}.gz" for s in ("train", "val", "test_2016_flickr") for l in ("en", "de"))
    assert multi30k.missing_files(folder, ("en", "de")) == []
    assert multi30k.load_multi30k(folder, "en", "de", "val") == [("line of val.en.gz", "line of val.de.gz")]
    assert not list(folder.glob(".*part"))
    assert multi30k.download_multi30k(folder, ("en", "de")) == []  # nothing left to fetch

    def offline(url, timeout):
        raise urllib.error.URLError("Temporary failure in name resolution")

    monkeypatch.setattr(multi30k.urllib.request, "urlopen", offline)
    with pytest.raises(multi30k.DownloadError, match="offline"):
        multi30k.download_multi30k(tmp_path / "other", ("fr",))
    assert multi30k.missing_files(tmp_path / "other", ("fr",)) == ["train.fr.gz", "val.fr.gz", "test_2016_flickr.fr.gz"]


def test_batches_gathered_from_records_padded_once_equal_the_padded_batches():
    """Training batches come from records padded once and kept on the device (no per-step copy):
    each must equal what padding the same records per batch gives — values and widths — or
    training would differ from before."""
    from core.tasks.translation import _batch, _PaddedRecords

    task = get_task("translation")
    cfg = task.make_config("rnn", "quick", {"n_pairs_source": 400})
    rec = task.load(cfg).records
    index = np.arange(0, 300, 3)
    padded = _PaddedRecords(rec, index, torch.device("cpu"))
    rng = np.random.default_rng(0)
    for _ in range(20):
        pos = rng.choice(len(index), 16, replace=False)
        for a, b in zip(padded.batch(pos), _batch(rec, index[pos], torch.device("cpu"))):
            assert a.shape == b.shape and torch.equal(a, b)
