"""The translation task's presets and their notes (what each is for; its measured times are in
docs/results.md, "Preset times"): kept apart from :mod:`core.tasks.translation` so that the task's code and its
sizes are read separately."""
from __future__ import annotations

from typing import Any

from core.tasks.base import PRESET_TIMES

PRESETS: dict[str, dict[str, Any]] = {
    # captions v2 (context-decided synonyms): both architectures generalise at 1,000 pairs (at 300 both
    # memorise), and 2 Transformer layers generalise better than one at equal parameters (docs/results.md,
    # "Quick presets, built-in data").
    "quick": dict(dataset="captions", n_train=1000, n_eval=200, epochs=16, batch_size=32, lr=5e-3,
                  n_shadows=2, attack_epochs=(8,), attack_train_epochs=40,
                  n_pairs_source=6000, emb=64, hidden=96, dropout=0.1, tf_layers=2, bleu_sentences=40,
                  rnn=dict(lr=1e-2)),
    # real Multi30K sized for 2 CPU cores (en→de and de→en): the vocabularies capped at 2,000 tokens per
    # side (the output softmax was most of a step), pairs of at most 20 tokens, no dropout, batches of 16. The
    # LSTM learns only at these sizes with lr 5e-3 (the quick preset's 1e-2 and an uncapped vocabulary barely
    # moved it), and trains 28 epochs: at 18 one seed of six had hardly started, every LSTM curve still rising;
    # lr 1e-2 with clip 1 was slower. The Transformer has learned its members by epoch 18 in all six runs. The
    # probes: docs/results.md, "Why the LSTM did not learn on Multi30K with the quick preset" and "The preset now".
    "multi30k_cpu": dict(dataset="multi30k", src_lang="en", tgt_lang="de", n_train=1000, n_eval=200, epochs=18,
                         batch_size=16, lr=3e-3, n_shadows=2, attack_epochs=(9,), attack_train_epochs=40,
                         max_vocab=2000, max_len=20, emb=64, hidden=96, dropout=0.0, tf_layers=2,
                         bleu_sentences=100, rnn=dict(lr=5e-3, epochs=28, attack_epochs=(14,))),
    # parallel text in any folder at multi30k_cpu's sizes (docs/your_data.md, "Parallel text")
    "pairs_cpu": dict(dataset="pairs", src_lang="en", tgt_lang="de", n_train=1000, n_eval=200, epochs=18,
                      batch_size=16, lr=3e-3, n_shadows=2, attack_epochs=(9,), attack_train_epochs=40,
                      max_vocab=2000, max_len=20, emb=64, hidden=96, dropout=0.0, tf_layers=2,
                      bleu_sentences=100, rnn=dict(lr=5e-3, epochs=28, attack_epochs=(14,))),
    # Multi30K that translates, for one GPU: more pairs than the study's 5,000 (less memorisation, so
    # that attacks fall below saturation), batches of 128 (on a GPU these small models are launch-bound, so a
    # step of 128 should cost little more than one of 64: expected, not measured), the Transformer's warm-up +
    # inverse-√ schedule and label smoothing 0.1 for both (the paper preset's Transformer underfit at a
    # constant 1e-3); the same recipe for both architectures. Settings chosen with bench/translation_probe.py
    # (docs/results.md, "multi30k_gpu"): with PyTorch's N(0, 1) embeddings the ×√d input scale drowned the
    # Transformer's positions and it barely learned; unit-scale embeddings are what make it learn
    "multi30k_gpu": dict(dataset="multi30k", src_lang="en", tgt_lang="de", n_train=12000, n_eval=1000, epochs=24,
                         batch_size=128, lr=2e-3, n_shadows=5, attack_epochs=(), attack_train_epochs=40,
                         emb=150, hidden=200, dropout=0.2, clip=1.0, tf_layers=2, bleu_sentences=200,
                         warmup_steps=400, label_smoothing=0.1, tf_scaled_embeddings=True),
    # Multi30K that should translate on 2 CPU cores: data size is the lever (12,000 de→en pairs, word
    # vocabularies capped at 4,000 per side so that the output softmax stays small), multi30k_gpu's recipe
    # (warm-up + inverse-√ decay, label smoothing 0.1, unit-scale Transformer embeddings) at batches of 64, so
    # 12 epochs take about as many steps as its 24 of 128; emb 128 / hidden 160: 2.43M parameters, the
    # Transformer matched by match_transformer (d 128)
    "multi30k_small": dict(dataset="multi30k", src_lang="de", tgt_lang="en", n_train=12000, n_eval=1000, epochs=12,
                           batch_size=64, lr=2e-3, n_shadows=2, attack_epochs=(), attack_train_epochs=40,
                           max_vocab=4000, max_len=30, emb=128, hidden=160, dropout=0.2, clip=1.0, tf_layers=2,
                           bleu_sentences=100, warmup_steps=400, label_smoothing=0.1, tf_scaled_embeddings=True),
    # the study's sizes (001 A.1): Multi30K fr→en, 5,000 training pairs, emb 150, hidden 200,
    # dropout 0.2, Adam 1e-3, 20 epochs; 1,000 members + 1,000 non-members = 2,000 sequences
    # per model for the attack classifier; 5 shadows
    "paper": dict(dataset="multi30k", src_lang="fr", tgt_lang="en", n_train=5000, n_eval=1000, epochs=20,
                  batch_size=64, lr=1e-3, n_shadows=5, attack_epochs=(5, 10, 15), attack_train_epochs=40,
                  emb=150, hidden=200, dropout=0.2, clip=10.0, tf_layers=2, bleu_sentences=100),
}

PRESET_NOTES: dict[str, str] = {
    "quick": "built-in captions corpus, no data folder; 1,000 pairs, 2 shadows, 16 epochs: sized for the built-in "
             f"corpus, too small for real data. Measured times: {PRESET_TIMES}.",
    "multi30k_cpu": "Multi30K in data_dir (train.<src>.gz and train.<tgt>.gz; en→de by default, de→en with "
                    "src_lang/tgt_lang; no fr in the shared data); 1,000 pairs, vocabularies capped at 2,000 tokens, "
                    "2 shadows; the LSTM trains 28 epochs, the Transformer 18. Both memorise (every attack near AUC 1, "
                    "validation BLEU far below 20), so it cannot decide F1 (the RNN leaks more): that needs "
                    "validation BLEU ≥ 20 for both (multi30k_small, multi30k_gpu: their notes). "
                    f"Measured times: {PRESET_TIMES}.",
    "pairs_cpu": "parallel text in data_dir (<name>.<src_lang> / <name>.<tgt_lang>, one sentence a line; the "
                 "'train' pair when there are several; docs/your_data.md) at multi30k_cpu's sizes: on 1,000 pairs "
                 f"both models memorise, every attack near AUC 1. Measured times: {PRESET_TIMES}.",
    "multi30k_small": "Multi30K de→en in data_dir (train.de.gz, train.en.gz); sized for 2 CPU cores: 12,000 "
                      "training pairs, word vocabularies capped at 4,000 per side, 2.43M parameters for both "
                      "architectures, 12 epochs of 64 with multi30k_gpu's recipe (warm-up, label smoothing 0.1), 2 "
                      "shadows. Victims alone reach validation BLEU ≥ 20 for both architectures; the full preset "
                      f"(shadows, attacks) is not measured yet. Measured times: {PRESET_TIMES}.",
    "multi30k_gpu": "Multi30K en→de in data_dir (train.en.gz, train.de.gz); for a GPU: 12,000 training pairs, "
                    "5 shadows, batches of 128, 24 epochs, the same recipe for both architectures (learning-rate "
                    "warm-up over 400 steps then inverse-√ decay from 2e-3, label smoothing 0.1, the "
                    "Transformer's embeddings initialised at unit input scale) so that the Transformer learns "
                    "too (the paper preset's underfits). Both translate (validation BLEU ≥ 20, the findings' bar); "
                    "LiRA stays below saturation, not every attack does. One seed so far: F1 on it is inconclusive "
                    "until repeats run. Not for a CPU: its 6 × 2,256 training steps would take hours. "
                    f"Measured times: {PRESET_TIMES}.",
    "paper": "Multi30K (fr→en) in data_dir; the study's sizes (5,000 pairs, 5 shadows, 20 epochs): for a GPU. Its "
             "validation BLEU stays below the 20 both architectures need for a comparison that can decide F1; the "
             "multi30k_gpu preset reaches it (its note). No CPU preset with shadows and attacks comes near. "
             f"Measured times: {PRESET_TIMES}.",
}
