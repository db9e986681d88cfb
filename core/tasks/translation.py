"""Machine translation task (paper 000 §4.3, paper 001 §3.1 and A.1–A.2): attentional LSTM vs Transformer.

Data sources (the top-level ``dataset`` field):

* ``captions`` (built-in default): ``n_pairs_source`` seeded Multi30K-like caption pairs, English →
  a synthetic language with synonyms, agreement and reordering (:mod:`core.data.corpus`,
  docs/captions_grammar.md).
* ``multi30k``: Multi30K (Elliott et al. 2016) from ``data_dir`` in the repository's raw layout
  (:mod:`core.data.multi30k`); the language pair is ``src_lang`` → ``tgt_lang`` (the study: fr → en).
  Its 29,000-pair train split is the data source.
* ``pairs``: parallel text in any folder, ``<name>.<src_lang>`` / ``<name>.<tgt_lang>`` (plain or gzipped;
  :mod:`core.data.text_pairs` says which pair is the data source); record ids are line numbers.

Half of the data source goes to the victim, the other half to the attacker (paper 000 §3.2).

Attacks on this task:

* ``shadow`` — the pipeline's standard shadow-model attack. Records here are answered by one
  probability vector per reference token, so it is an LSTM over the per-step probability
  features: this **is the PVMIA** of paper 001 (§3.1, A.2), and the task's primary attack.
* ``prmia`` — the rank-histogram attack of Song & Shmatikov (2019) that PVMIA is benchmarked
  against (001 A.2).
* ``bleu_feature`` — Hisamoto, Post & Duh (2020): an output-only attack on the model's own
  greedy translation ê of the source, with features the modified 1- to 4-gram precisions
  pₙ = Σ_g min(count_ê(g), count_ref(g)) / Σ_g count_ê(g) and the smoothed sentence BLEU
  (add-one for n > 1, Lin & Och 2004) of ê against the reference.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, ClassVar, Sequence

import numpy as np
import sacrebleu
import torch
import torch.nn.functional as F
from torch import nn

from core.attacks.sequence_scores import ZLIB_FEATURE, zlib_length
from core.data.corpus import generate_captions
from core.data.multi30k import LANGUAGES, load_multi30k
from core.data.text_pairs import LANGUAGE_CODE, load_text_pairs
from core.data.translation_records import TranslationRecords, build_records, detokenize
from core.foundations.config import ExperimentConfig, bounded, check_fields
from core.foundations.device import default_device, single_thread
from core.foundations.errors import ConfigError, DatasetNotFoundError
from core.foundations.memory import FLOAT_BYTES, attack_training_bytes, responses_bytes, training_state_bytes
from core.foundations.paths import data_root
from core.measurement.responses import Responses
from core.measurement.slices import quantile_buckets
from core.models.translation import EOS, PAD, SOS, LuongSeq2Seq, TransformerSeq2Seq, match_transformer
from core.tasks.base import (
    EpochCallback,
    FractionCallback,
    OutputTransform,
    RecordView,
    Task,
    TaskData,
    VictimLoader,
    fixed_halves,
    named_record_indices,
)
from core.tasks.examples import TokenProb, TranslationExample, TranslationExamples
from core.tasks.translation_presets import PRESET_NOTES, PRESETS
from core.training.loop import (
    BatchCallback,
    PrivacySettings,
    TrainingRecord,
    autocast_dtype,
    build_optimizer,
    seeded_generator,
    train_epochs,
    warmup_inverse_sqrt,
)


# ---------------------------------------------------------------------------- options and data
@dataclass(frozen=True)
class TranslationOptions:
    """Options of the translation task (ranges in brackets, checked by :meth:`validate`).

    Attributes:
        src_lang, tgt_lang: Multi30K language pair (en, de, fr, cs; they must differ); ignored
            by ``captions`` (always English → Veltan). With ``dataset=pairs``: the files' language
            suffixes, any code of 1–32 letters, digits, '_' or '-'.
        pair_name: ``dataset=pairs`` only: the stem of the pair of files read (``NAME.<src_lang>``);
            "" = ``train`` when present, else the folder's only pair (:mod:`core.data.text_pairs`).
        n_pairs_source: size of the generated ``captions`` data source. [1, 500000]
        captions_seed: seed of the ``captions`` generator (the data source, not the training).
            [0, 2**32)
        min_freq: a token enters the vocabulary if it occurs at least this often in the data
            source; rarer ones become <unk>. [1, 1000000]
        max_vocab: at most this many entries in each vocabulary (specials included), the most
            frequent tokens of the data source; rarer ones become <unk>. 0 = no cap. A cap, unlike
            ``min_freq``, gives every language pair the same output layer (the output softmax is
            most of a CPU training step on full vocabularies). [0, 1000000]
        max_len: pairs with more tokens than this on either side are left out of the data
            source. [1, 512]
        emb: embedding size of the LSTM (the study: 150). [1, 4096]
        hidden: hidden size of the LSTM encoder (each direction) and decoder (the study: 200).
            [1, 4096]
        dropout: dropout of both architectures (the study: 0.2). [0, 1)
        clip: gradient-norm clipping threshold. (0, 1000000]
        tf_heads: attention heads of the Transformer. [1, 64]
        tf_layers: encoder and decoder layers of the Transformer. [1, 24]
        tf_d_model: Transformer width; 0 = chosen with its feed-forward width to match the
            LSTM's parameter count (:func:`core.models.translation.match_transformer`).
            [0, 8192], and a multiple of 2·tf_heads when not 0.
        warmup_steps: the learning rate rises linearly to ``lr`` over this many optimizer steps, then
            decays as √(warmup_steps / step) (Vaswani et al. 2017, §5.3;
            :func:`core.training.loop.warmup_inverse_sqrt`); 0 = the constant rate ``lr``. [0, 1000000]
        label_smoothing: the training loss' label smoothing (Szegedy et al. 2016; Vaswani et al. use
            0.1): the reference token's target probability is 1 − ε and ε is spread over the
            vocabulary. Training only: the answers the attacks read are the model's own
            probabilities. [0, 1)
        tf_scaled_embeddings: initialise the Transformer's embeddings N(0, 1/d), d its width (fairseq's), instead
            of PyTorch's N(0, 1), so that its inputs (embedding × √d + position) have entries of unit
            scale; false = the default initialisation. The parameter count is unchanged.
        bleu_sentences: at most this many sentences are decoded for each utility (BLEU) value.
            [1, 100000]
        n_examples: member and non-member sentences each in the showcase. [0, 100]
    """

    src_lang: str = "en"
    tgt_lang: str = "de"
    n_pairs_source: int = bounded(30000, 1, 500_000)
    captions_seed: int = bounded(0, 0, 2**32, hi_open=True, hi_text="2**32")
    min_freq: int = bounded(2, 1, 1_000_000)
    max_vocab: int = bounded(0, 0, 1_000_000)
    max_len: int = bounded(30, 1, 512)
    emb: int = bounded(150, 1, 4096)
    hidden: int = bounded(200, 1, 4096)
    dropout: float = bounded(0.2, 0, 1, hi_open=True)
    clip: float = bounded(10.0, 0, 1_000_000, lo_open=True)
    tf_heads: int = bounded(4, 1, 64)
    tf_layers: int = bounded(2, 1, 24)
    tf_d_model: int = bounded(0, 0, 8192)
    bleu_sentences: int = bounded(100, 1, 100_000)
    n_examples: int = bounded(3, 0, 100)
    pair_name: str = ""
    warmup_steps: int = bounded(0, 0, 1_000_000)
    label_smoothing: float = bounded(0.0, 0, 1, hi_open=True)
    tf_scaled_embeddings: bool = False

    #: fields added after cached runs existed: left out of the hashes at their default (no cap, no
    #: pair named, no schedule, no smoothing) so that every config made before them keeps its hash and its cache
    OMIT_AT_DEFAULT: ClassVar[tuple[str, ...]] = ("max_vocab", "pair_name", "warmup_steps", "label_smoothing",
                                                   "tf_scaled_embeddings")

    def validate(self) -> None:
        """Ranges and types of every field, then the language codes' shape and the Transformer width
        (which codes exist depends on the data source: :meth:`validate_for_dataset`)."""
        check_fields(self)
        for lang in (self.src_lang, self.tgt_lang):
            if not LANGUAGE_CODE.fullmatch(lang):
                raise ConfigError(f"src_lang/tgt_lang must be a language code of 1–32 letters, digits, '_' or '-', "
                                  f"got {lang[:40]!r}")
        if self.src_lang == self.tgt_lang:
            raise ConfigError("src_lang and tgt_lang must differ")
        if self.tf_d_model and self.tf_d_model % (2 * self.tf_heads):
            raise ConfigError(f"tf_d_model must be 0 (auto) or a multiple of 2·tf_heads, got {self.tf_d_model}")

    def validate_for_dataset(self, dataset: str) -> None:
        """Multi30K (and the captions' default) know four languages; ``pairs`` reads any code."""
        if dataset != "pairs":
            for lang in (self.src_lang, self.tgt_lang):
                if lang not in LANGUAGES:
                    raise ConfigError(f"src_lang/tgt_lang must be one of {LANGUAGES}, got {lang!r}")
        elif self.pair_name and not re.fullmatch(r"[\w.-]{1,200}", self.pair_name):
            raise ConfigError(f"pair_name must be a file stem of letters, digits, '.', '_' or '-', got "
                              f"{self.pair_name[:40]!r}")


def _pad(seqs: list[np.ndarray], prefix: int | None = None, suffix: int | None = None) -> torch.Tensor:
    rows = [np.concatenate([[prefix] if prefix is not None else [], s, [suffix] if suffix is not None else []]) for s in seqs]
    out = np.full((len(rows), max(len(r) for r in rows)), PAD, np.int64)
    for i, r in enumerate(rows):
        out[i, : len(r)] = r
    return torch.from_numpy(out)


def _batch(rec: TranslationRecords, idx: np.ndarray, device: torch.device):
    """src (B, S), src_len (B,), tgt_in = <sos> y (B, T), tgt_out = y <eos> (B, T)."""
    padded = _PaddedRecords(rec, idx, device)
    return padded.src, torch.from_numpy(padded.src_len), padded.tgt_in, padded.tgt_out


class _PaddedRecords:
    """Records padded once and kept on the device: a training batch is then a gather and a trim on the
    device, equal to :func:`_batch` of the same records, and no blocking copy per step keeps the CPU
    from queueing the next step on a GPU."""

    def __init__(self, rec: TranslationRecords, index: np.ndarray, device: torch.device):
        src = [rec.src_ids[i] for i in index]
        tgt = [rec.tgt_ids[i] for i in index]
        self.src, self.tgt_in, self.tgt_out = (_pad(src).to(device), _pad(tgt, prefix=SOS).to(device),
                                               _pad(tgt, suffix=EOS).to(device))
        self.src_len = np.array([len(s) for s in src], np.int64)
        self.tgt_len = np.array([len(t) + 1 for t in tgt], np.int64)  # with <sos> / <eos>

    def batch(self, pos: np.ndarray):
        """The records at positions ``pos``: src (B, S), src_len (B,) on the CPU, tgt_in, tgt_out (B, T)."""
        s, t = int(self.src_len[pos].max()), int(self.tgt_len[pos].max())
        at = torch.from_numpy(np.ascontiguousarray(pos, np.int64)).to(self.src.device, non_blocking=True)
        return self.src[at, :s], torch.from_numpy(self.src_len[pos]), self.tgt_in[at, :t], self.tgt_out[at, :t]


class _EvalMode:
    """Evaluate in eval mode, then restore the caller's mode (the pipeline toggles it too)."""

    def __init__(self, model: nn.Module):
        self.model, self.was = model, model.training

    def __enter__(self):
        self.model.eval()
        return self.model

    def __exit__(self, *exc):
        self.model.train(self.was)


_SENTENCE_BLEU = sacrebleu.BLEU(smooth_method="add-k", smooth_value=1, effective_order=True)
# add-k smoothing rewrites the n-gram counts it reports, so raw precisions come from an unsmoothed scorer
_RAW_BLEU = sacrebleu.BLEU(smooth_method="none", effective_order=True)


def bleu_features(hyp: str, ref: str) -> list[float]:
    """Hisamoto et al.'s features: modified 1- to 4-gram precisions pₙ (0 when ê has no n-grams)
    and the add-one smoothed sentence BLEU (Lin & Och 2004), all in [0, 1]."""
    raw = _RAW_BLEU.sentence_score(hyp, [ref])
    precisions = [c / t if t > 0 else 0.0 for c, t in zip(raw.counts, raw.totals)]
    return precisions + [_SENTENCE_BLEU.sentence_score(hyp, [ref]).score / 100.0]


class TranslationTask(Task):
    name = "translation"
    utility_metric = "bleu"
    label = "Machine translation"
    record_names = ("sentence pair", "sentence pairs")
    width_knob = "hidden"
    privacy_unit = "one sentence pair"
    sensitivity_samples = 3
    options_cls = TranslationOptions
    datasets = ("captions", "multi30k", "pairs")
    about = ("A record is a sentence pair. Models are queried teacher-forced with the reference translation and "
             "answer one probability vector per target token. The shadow-model attack is PVMIA: an LSTM over the "
             "per-token probability values; PRMIA reads only the reference tokens' ranks, the BLEU-feature attack "
             "only the model's own greedy translation; LiRA and RMIA compare each token's probability with the "
             "shadows' on the same sentence. The built-in captions corpus decides every synonym and word order by "
             "context the source shows (docs/captions_grammar.md), so that both architectures can generalise on the "
             "quick preset (the run shown reports its own training and validation BLEU). The quick preset is sized "
             "for captions and is too small for real data: on Multi30K en→de with its sizes a model may barely "
             "learn, and the comparison would then set a model that learned against one that did not (compare the "
             "two runs' BLEU before reading their attacks). For Multi30K on a CPU use the multi30k_small preset "
             "(12,000 pairs: both victims reach validation BLEU ≥ 20 in docs/results.md; multi30k_cpu's 1,000 "
             "pairs are memorised), on a GPU multi30k_gpu or the paper preset (the study's sizes).")
    real_datasets = ("multi30k", "pairs")
    record_id_meaning = ("pairs: the pair's 1-based line number in its files; captions and multi30k: the sentence "
                         "pair's 0-based index among the pairs kept (the data source's pairs in file order, those "
                         "longer than max_len tokens left out)")
    presets = PRESETS  # core/tasks/translation_presets.py: the sizes and what each is for
    preset_notes = PRESET_NOTES

    def __init__(self) -> None:
        self._loaded: dict[tuple, TaskData] = {}

    # ------------------------------------------------------------------ data
    def load(self, cfg: ExperimentConfig) -> TaskData:
        o: TranslationOptions = cfg.options
        if cfg.dataset == "captions":
            key: tuple = ("captions", o.n_pairs_source, o.captions_seed, o.min_freq, o.max_len, o.max_vocab)
        elif cfg.dataset == "multi30k":
            key = ("multi30k", cfg.data_dir, o.src_lang, o.tgt_lang, o.min_freq, o.max_len, o.max_vocab)
        elif cfg.dataset == "pairs":
            key = ("pairs", cfg.data_dir, o.src_lang, o.tgt_lang, o.pair_name, o.min_freq, o.max_len, o.max_vocab)
        else:
            raise ConfigError(f"unknown translation dataset {cfg.dataset!r}; choose captions, multi30k or pairs")
        if cfg.dataset != "captions":  # a relative data_dir names another folder under another data root
            key += (str(data_root()),)
        if key in self._loaded:
            return self._loaded[key]
        line_numbers: list[int] | None = None
        if cfg.dataset == "captions":
            pairs = generate_captions(o.n_pairs_source, seed=o.captions_seed)
            pair_name = "en→veltan"
            source = f"captions: {len(pairs):,} generated caption pairs English → Veltan (seed {o.captions_seed})"
        elif cfg.dataset == "pairs":
            if not cfg.data_dir:
                raise DatasetNotFoundError(f"dataset pairs needs data_dir: a folder holding <name>.{o.src_lang} and "
                                           f"<name>.{o.tgt_lang} with one sentence a line (plain or .gz)")
            text = load_text_pairs(cfg.data_dir, o.src_lang, o.tgt_lang, o.pair_name)
            pairs, line_numbers = text.pairs, text.line_numbers
            pair_name = f"{o.src_lang}→{o.tgt_lang}"
            empty = f", {text.dropped_empty:,} with an empty side left out" if text.dropped_empty else ""
            source = (f"pairs {pair_name}: {len(pairs):,} line pairs of {text.files[0]} / {text.files[1]}{empty} "
                      f"({cfg.data_dir})")
        else:
            if not cfg.data_dir:
                raise DatasetNotFoundError(
                    f"dataset multi30k needs data_dir: a folder holding train.{o.src_lang}.gz and train.{o.tgt_lang}.gz "
                    f"from data/task1/raw/ of the Multi30K repository (e.g. --set data_dir=/path/to/multi30k)"
                )
            pairs = load_multi30k(cfg.data_dir, o.src_lang, o.tgt_lang, "train")
            pair_name = f"{o.src_lang}→{o.tgt_lang}"
            source = f"multi30k {pair_name}: {len(pairs):,} training pairs ({cfg.data_dir})"
        rec = build_records(pairs, o.min_freq, o.max_len, o.max_vocab, ids=line_numbers)
        n = len(rec.src_ids)
        src_len = np.array([len(s) for s in rec.src_ids])
        tgt_len = np.array([len(t) for t in rec.tgt_ids])
        info = {
            "n_records": int(n), "pair": pair_name, "src_vocab": len(rec.src_vocab), "tgt_vocab": len(rec.tgt_vocab),
            "mean_src_len": float(src_len.mean()) if n else 0.0, "mean_tgt_len": float(tgt_len.mean()) if n else 0.0,
            "dropped_too_long": int(len(pairs) - n), "min_freq": o.min_freq, "max_len": o.max_len,
            "max_vocab": o.max_vocab,
        }
        description = f"{source}; vocabularies {len(rec.src_vocab):,} / {len(rec.tgt_vocab):,} tokens"
        data = TaskData(rec, *fixed_halves(n), description, info)
        self._loaded[key] = data
        return data

    # ------------------------------------------------------------------ models
    def build_model(self, cfg: ExperimentConfig, data: TaskData) -> nn.Module:
        """The LSTM of the study, or a Transformer with parameter count matched to it (within 1 %)."""
        o: TranslationOptions = cfg.options
        rec: TranslationRecords = data.records
        vs, vt = len(rec.src_vocab), len(rec.tgt_vocab)
        if cfg.arch == "rnn":
            return LuongSeq2Seq(vs, vt, o.emb, o.hidden, o.dropout, dp=cfg.private)
        target = LuongSeq2Seq.param_count(vs, vt, o.emb, o.hidden)
        d, ff = match_transformer(target, vs, vt, o.tf_heads, o.tf_layers, prefer_d=o.emb, d_model=o.tf_d_model)
        return TransformerSeq2Seq(vs, vt, d, o.tf_heads, o.tf_layers, ff, o.dropout, dp=cfg.private,
                                  scaled_embeddings=o.tf_scaled_embeddings)

    def memory_estimate(self, cfg: ExperimentConfig, data: TaskData) -> int:
        """Peak bytes of one experiment from the config and the vocabulary sizes (nothing is built):
        weights with gradients and Adam state (both architectures have the LSTM's parameter
        count, matched within 1 %), one batch's logits over the target vocabulary (with softmax
        and gradient) and hidden states at every target position, the largest attack
        classifier's training (PVMIA: an LSTM over ``max_len + 1`` steps of 14 features) and
        the Responses every model keeps (top-10 probabilities plus per-step signals)."""
        o: TranslationOptions = cfg.options
        rec: TranslationRecords = data.records
        vs, vt = len(rec.src_vocab), len(rec.tgt_vocab)
        params = LuongSeq2Seq.param_count(vs, vt, o.emb, o.hidden)
        steps = o.max_len + 1
        width = max(o.emb, o.hidden, o.tf_d_model)
        act = cfg.batch_size * steps * (3 * vt + 40 * width * max(1, o.tf_layers if cfg.arch == "ffnn" else 1))
        train = training_state_bytes(params) + act * FLOAT_BYTES
        attack = max(attack_training_bytes(cfg, n_features=14, max_steps=steps),
                     attack_training_bytes(cfg, n_features=8), attack_training_bytes(cfg, n_features=5))
        kept = responses_bytes(cfg, steps_per_record=steps, floats_per_step=18)
        return int(max(train, attack) + kept)

    # ------------------------------------------------------------------ training
    def train(self, cfg: ExperimentConfig, model: nn.Module, data: TaskData, train_index: np.ndarray,
              on_epoch: EpochCallback, on_progress: FractionCallback,
              on_batch: BatchCallback | None = None) -> TrainingRecord:
        """Teacher-forced token cross-entropy through the shared loop (:func:`core.training.loop.train_epochs`):
        Adam with L2 on weight matrices, seeded batches, gradient norm clipped at ``clip``.

        Non-private: −Σ log p(yₜ | y<ₜ, x) averaged over all non-<pad> target tokens of the batch
        (with ``label_smoothing`` ε the target of each token is 1 − ε on yₜ and ε spread over the
        vocabulary; ``warmup_steps``: the learning-rate schedule of the options).
        DP-SGD (``cfg.dp`` on; a sample = one sentence pair): each pair's loss is the mean over
        its own target tokens, and the batch loss their mean — a token average across the batch
        would let one pair's length scale every other pair's gradient. The batch is ordered by
        decreasing source length so the encoder packs it without permuting the pairs (the
        per-sample gradients of every layer then line up), and the per-pair clip C replaces the
        global clip."""
        device = default_device()
        rec: TranslationRecords = data.records
        train_index = np.asarray(train_index)
        private = cfg.private
        records = _PaddedRecords(rec, train_index, device)
        smoothing = float(cfg.options.label_smoothing)

        def batch_loss(index: torch.Tensor) -> torch.Tensor:
            pos = index.numpy()
            if private:
                pos = pos[np.argsort(-records.src_len[pos], kind="stable")]
            src, src_len, tgt_in, tgt_out = records.batch(pos)
            logits = model(src, src_len, tgt_in)
            if not private:
                return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), tgt_out.reshape(-1), ignore_index=PAD,
                                       label_smoothing=smoothing)
            token_loss = F.cross_entropy(logits.transpose(1, 2), tgt_out, ignore_index=PAD, reduction="none",
                                         label_smoothing=smoothing)  # (B, T)
            valid = (tgt_out != PAD).float()
            return ((token_loss * valid).sum(1) / valid.sum(1).clamp_min(1.0)).mean()

        with single_thread():  # thousands of small LSTM ops per batch: threads cost more than they save
            return train_epochs(model, len(train_index), batch_loss, epochs=cfg.epochs, batch_size=cfg.batch_size,
                                optimizer=build_optimizer(model, cfg.lr, cfg.weight_decay), generator=seeded_generator(),
                                privacy=PrivacySettings.from_config(cfg), clip_norm=cfg.options.clip,
                                autocast=autocast_dtype(cfg), lr_factor=warmup_inverse_sqrt(cfg.options.warmup_steps),
                                unit="one sentence pair (a training record)", on_batch=on_batch, on_epoch=on_epoch,
                                on_progress=on_progress)

    # ------------------------------------------------------------------ queries
    @torch.no_grad()
    def translate(self, cfg: ExperimentConfig, model: nn.Module, data: TaskData, index: np.ndarray,
                  output_transform: OutputTransform | None = None) -> list[list[str]]:
        """Greedy translations (token lists) of the sources of records ``index`` (each step's
        distribution passed through ``output_transform`` first, when given)."""
        if not isinstance(model, (LuongSeq2Seq, TransformerSeq2Seq)):
            raise TypeError(f"a translator is a LuongSeq2Seq or a TransformerSeq2Seq, got {type(model).__name__}")
        rec: TranslationRecords = data.records
        device = next(model.parameters()).device
        out: list[list[str]] = []
        with _EvalMode(model), single_thread():
            for start in range(0, len(index), 128):
                idx = index[start : start + 128]
                src, src_len, _, _ = _batch(rec, idx, device)
                # a translation longer than twice its source (+5) is a runaway, not a sentence: cap it
                limit = min(cfg.options.max_len + 1, 2 * int(src_len.max()) + 5)
                ids = model.greedy(src, src_len, limit, output_transform).cpu().numpy()
                out.extend(rec.tgt_vocab.decode(row) for row in ids)
        return out

    def utility(self, cfg: ExperimentConfig, model: nn.Module, data: TaskData, index: np.ndarray,
                output_transform: OutputTransform | None = None) -> float:
        """Corpus BLEU (sacrebleu, 0–100) of greedy translations of the first ``bleu_sentences`` records."""
        index = np.asarray(index)[: cfg.options.bleu_sentences]
        if len(index) == 0:
            return 0.0
        hyps = [detokenize(h) for h in self.translate(cfg, model, data, index, output_transform=output_transform)]
        refs = [data.records.reference(i) for i in index]
        return float(sacrebleu.corpus_bleu(hyps, [refs]).score)

    @torch.no_grad()
    def _teacher_forced(self, model: nn.Module, data: TaskData, index: np.ndarray):
        """Yield (logits (T, V) at each reference token incl. <eos>, lengths, reference ids) per batch."""
        rec: TranslationRecords = data.records
        device = next(model.parameters()).device
        with _EvalMode(model), single_thread():
            for start in range(0, len(index), 64):
                idx = index[start : start + 64]
                src, src_len, tgt_in, tgt_out = _batch(rec, idx, device)
                logits = model(src, src_len, tgt_in).float()
                valid = tgt_out != PAD
                # logits stay on the model's device: Responses reduce them there (core/measurement/responses.py)
                yield logits[valid], valid.sum(1).cpu().numpy(), tgt_out[valid]

    def respond(self, cfg: ExperimentConfig, model: nn.Module, data: TaskData, index: np.ndarray,
                record_features: bool = True) -> Responses:
        """Teacher-forced answers: one probability vector per reference token (incl. <eos>), the
        reference being that token; plus ``record_features["bleu_features"]`` (N, 5) of the greedy
        translation (Hisamoto et al. 2020) and ``record_features["reference_zlib_bytes"]`` (N, 1), the
        zlib-compressed length of each reference text, unless ``record_features`` is False. Built batch
        by batch, so only top-K and per-step signals are held for the whole set."""
        index = np.asarray(index)
        parts = [Responses.from_logits(z, lengths, ref) for z, lengths, ref in self._teacher_forced(model, data, index)]
        resp = Responses.concat(parts)
        if record_features:
            resp.record_features.update(self._bleu_record_features(cfg, model, data, index))
            # the zlib attack's normaliser (Carlini et al. 2021): the compressed length of each reference text
            resp.record_features[ZLIB_FEATURE] = np.array(
                [[zlib_length(data.records.reference(int(i)))] for i in index], np.float32).reshape(len(index), 1)
        return resp

    def _bleu_record_features(self, cfg: ExperimentConfig, model: nn.Module, data: TaskData, index: np.ndarray,
                              output_transform: OutputTransform | None = None) -> dict[str, np.ndarray]:
        hyps = self.translate(cfg, model, data, index, output_transform=output_transform)
        feats = [bleu_features(detokenize(h), data.records.reference(i)) for h, i in zip(hyps, index)]
        return {"bleu_features": np.asarray(feats, np.float32).reshape(len(index), 5)}

    def record_features_under(self, cfg: ExperimentConfig, model: nn.Module, data: TaskData, index: np.ndarray,
                              output_transform: OutputTransform) -> dict[str, np.ndarray]:
        """The BLEU features of translations decoded from the transformed distributions."""
        return self._bleu_record_features(cfg, model, data, np.asarray(index), output_transform)

    # ------------------------------------------------------------------ attacks and showcase
    # PRMIA (rank histogram) and Hisamoto et al.'s BLEU-feature attack run beside the PVMIA: they are
    # registered for this task in core.attacks.registry

    canary_design = ("mismatched sentence pairs: unused pairs of the victim's half whose target is swapped for "
                     "another canary's (a seeded rotation), so no rule of the language produces it; the model "
                     "fits one only by memorising it, and the auditor's score is minus its teacher-forced loss")

    def canary_data(self, cfg: ExperimentConfig, data: TaskData, index: np.ndarray,
                    rng: np.random.Generator) -> TaskData:
        """Rare (mismatched) sentence pairs: the targets of ``index`` rotated among themselves by a
        seeded offset in 1..m−1, the sources kept; vocabularies unchanged (the targets are words of
        the same data source)."""
        rec: TranslationRecords = data.records
        index = np.asarray(index, np.int64)
        if len(index) < 2:
            raise ConfigError("mismatched-pair canaries need at least two records")
        donor = np.roll(index, int(rng.integers(1, len(index))))
        tgt_ids, tgt_text = list(rec.tgt_ids), list(rec.tgt_text)
        for i, j in zip(index, donor):
            tgt_ids[i], tgt_text[i] = rec.tgt_ids[j], rec.tgt_text[j]
        records = TranslationRecords(rec.src_text, tgt_text, rec.src_ids, tgt_ids, rec.src_vocab, rec.tgt_vocab)
        return TaskData(records, data.victim_pool, data.attacker_pool, data.description, data.info)

    # ------------------------------------------------------------------ one record, for the app
    def record_ids(self, cfg: ExperimentConfig, data: TaskData, index: np.ndarray) -> list[str]:
        """``pairs``: each pair's 1-based line number in its files; the other sources: the index."""
        lines = getattr(data.records, "record_ids", None)
        return [str(lines[int(i)]) for i in index] if lines else super().record_ids(cfg, data, index)

    def record_indices(self, cfg: ExperimentConfig, data: TaskData, ids: Sequence[str]) -> np.ndarray:
        """``pairs``: a member list names pairs by their line number (a line left out, e.g. empty, names none)."""
        lines = getattr(data.records, "record_ids", None)
        if not lines:
            return super().record_indices(cfg, data, ids)
        return named_record_indices([str(n) for n in lines], ids, data.description, self.record_id_meaning)

    def describe_record(self, cfg: ExperimentConfig, data: TaskData, index: int, victim: VictimLoader | None = None,
                        role: str = "member") -> RecordView:
        """The sentence pair (source, reference) and, with a ``victim``, its greedy translation."""
        rec: TranslationRecords = data.records
        i = int(index)
        answer = None
        if victim is not None:
            answer = detokenize(self.translate(cfg, victim(), data, np.array([i], np.int64))[0])
        where = f"line {rec.record_ids[i]}" if rec.record_ids else f"sentence pair {i}"
        return RecordView("text", f"{where} ({role})",
                          lines=(("source", rec.src_text[i]), ("reference", rec.tgt_text[i])), answer=answer)

    def slice_labels(self, cfg: ExperimentConfig, data: TaskData, records: np.ndarray,
                     summary: dict[str, Any]) -> dict[str, list[str]]:
        """Source length and the frequency (in the whole data source) of the source's rarest word,
        each in terciles."""
        rec: TranslationRecords = data.records
        counts = np.bincount(np.concatenate([np.asarray(s, np.int64) for s in rec.src_ids]))
        lengths = [len(rec.src_ids[i]) for i in records]
        rarest = [int(counts[np.asarray(rec.src_ids[i], np.int64)].min()) if len(rec.src_ids[i]) else 0
                  for i in records]
        return {"source length": quantile_buckets(lengths, 3, " tokens"),
                "rarest source word frequency": quantile_buckets(rarest, 3, "×")}

    def primary_attack(self) -> str:
        """``shadow``: on this task the standard shadow-model attack is the PVMIA (paper 001)."""
        return "shadow"

    def examples(self, cfg: ExperimentConfig, model: nn.Module, data: TaskData, members: np.ndarray,
                 nonmembers: np.ndarray) -> dict[str, Any]:
        """A few member and non-member sentences: source, reference, the victim's greedy
        translation, and the teacher-forced probability of each reference token."""
        k = cfg.options.n_examples
        index = np.concatenate([np.asarray(members)[:k], np.asarray(nonmembers)[:k]]).astype(np.int64)
        flags = [True] * min(k, len(members)) + [False] * min(k, len(nonmembers))
        if len(index) == 0:
            return TranslationExamples().to_dict()
        rec: TranslationRecords = data.records
        hyps = self.translate(cfg, model, data, index)
        probs = []
        for logits, lengths, ref in self._teacher_forced(model, data, index):
            ref_p = F.softmax(logits, -1).gather(1, ref[:, None])[:, 0].cpu().numpy()
            probs.extend(np.split(ref_p, np.cumsum(lengths)[:-1]))
        sentences = []
        for i, member, hyp, p in zip(index, flags, hyps, probs):
            tokens = [rec.tgt_vocab.itos[t] for t in rec.tgt_ids[i]] + ["<eos>"]
            ref = rec.reference(int(i))
            sentences.append(TranslationExample(
                index=int(i), member=member, source=rec.src_text[i], reference=rec.tgt_text[i],
                translation=detokenize(hyp),
                sentence_bleu=float(_SENTENCE_BLEU.sentence_score(detokenize(hyp), [ref]).score),
                tokens=tuple(TokenProb(t, float(q)) for t, q in zip(tokens, p)),
            ))
        return TranslationExamples(tuple(sentences)).to_dict()
