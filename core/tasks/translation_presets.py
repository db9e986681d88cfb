"""The translation task's presets and their notes (what each was measured at, and where): kept apart from
:mod:`core.tasks.translation` so that the task's code and the record of its sizes are read separately."""
from __future__ import annotations

from typing import Any

PRESETS: dict[str, dict[str, Any]] = {
    # captions v2 (context-decided synonyms): both architectures generalise — measured cold on 2 CPU
    # cores: Transformer BLEU 66 train / 34 val in 128 s wall, LSTM 79 / 61 in 76 s (victim, 2 shadows,
    # every attack incl. LiRA/RMIA; `bench/presets.py --presets quick`, one seed, docs/results.md "Quick
    # presets, built-in data"; the same figures as preset_notes["quick"]). 1,000 pairs: at 300 both
    # memorise (val < 10);
    # 2 Transformer layers: val 34 vs 21 with one at equal parameters.
    "quick": dict(dataset="captions", n_train=1000, n_eval=200, epochs=16, batch_size=32, lr=5e-3,
                  n_shadows=2, attack_epochs=(8,), attack_train_epochs=40,
                  n_pairs_source=6000, emb=64, hidden=96, dropout=0.1, tf_layers=2, bleu_sentences=40,
                  rnn=dict(lr=1e-2)),
    # real Multi30K sized for 2 CPU cores (measured in docs/results.md, en→de and de→en): the
    # vocabularies capped at 2,000 tokens per side (the output softmax was most of a step), pairs of at
    # most 20 tokens, no dropout, batches of 16. The LSTM at the quick preset's lr 1e-2 (batch 32: 31 steps an
    # epoch, full vocabularies) reached train BLEU 2.9 after 12 epochs; at 3e-3, batch 16, capped: 8.9 after 12
    # and 16.1 after 16; with pairs ≤ 20 tokens, no dropout and lr 5e-3: 19.1 after 12 (victim-only probes,
    # en→de, BLEU on 40 members). At 18 epochs, three seeds × two directions: 21.2–37.4 but 10.4 on
    # de→en seed 3964924996, every run still rising steeply (docs/results.md). So the LSTM trains 28
    # epochs: that run's victim reached 20.7 at epoch 22 and 42.3 at 28, en→de's slowest 57.0 (victim-
    # only probes, the first 18 epochs equal to the 18-epoch runs'). lr 1e-2 with clip 1 was slower.
    # The Transformer is past train BLEU 44 at epoch 18 in all six runs.
    "multi30k_cpu": dict(dataset="multi30k", src_lang="en", tgt_lang="de", n_train=1000, n_eval=200, epochs=18,
                         batch_size=16, lr=3e-3, n_shadows=2, attack_epochs=(9,), attack_train_epochs=40,
                         max_vocab=2000, max_len=20, emb=64, hidden=96, dropout=0.0, tf_layers=2,
                         bleu_sentences=100, rnn=dict(lr=5e-3, epochs=28, attack_epochs=(14,))),
    # parallel text in any folder at multi30k_cpu's sizes; its measured note in docs/your_data.md
    "pairs_cpu": dict(dataset="pairs", src_lang="en", tgt_lang="de", n_train=1000, n_eval=200, epochs=18,
                      batch_size=16, lr=3e-3, n_shadows=2, attack_epochs=(9,), attack_train_epochs=40,
                      max_vocab=2000, max_len=20, emb=64, hidden=96, dropout=0.0, tf_layers=2,
                      bleu_sentences=100, rnn=dict(lr=5e-3, epochs=28, attack_epochs=(14,))),
    # Multi30K that translates, for one GPU: more pairs than the study's 5,000 (less memorisation, so
    # that attacks fall below saturation), batches of 128 (on a GPU these small models are launch-bound, so a
    # step of 128 should cost little more than one of 64: expected, not measured), the Transformer's warm-up +
    # inverse-√ schedule and label smoothing 0.1 for both
    # (the paper preset's Transformer underfit at a constant 1e-3: train BLEU 15.6 after 20 epochs); the
    # same recipe for both architectures. Settings chosen with bench/translation_probe.py (docs/results.md
    # "multi30k_gpu"): on 2,000 pairs after 252 steps of 32 the Transformer with this recipe reached BLEU
    # 13.4 train / 10.7 val, with PyTorch's N(0, 1) embeddings instead 0.7 / 0.6 (the ×√d input scale drowned it)
    "multi30k_gpu": dict(dataset="multi30k", src_lang="en", tgt_lang="de", n_train=12000, n_eval=1000, epochs=24,
                         batch_size=128, lr=2e-3, n_shadows=5, attack_epochs=(), attack_train_epochs=40,
                         emb=150, hidden=200, dropout=0.2, clip=1.0, tf_layers=2, bleu_sentences=200,
                         warmup_steps=400, label_smoothing=0.1, tf_scaled_embeddings=True),
    # Multi30K that should translate on 2 CPU cores: data size is the lever (12,000 de→en pairs, word
    # vocabularies capped at 4,000 per side so that the output softmax stays small), multi30k_gpu's recipe
    # (warm-up + inverse-√ decay, label smoothing 0.1, unit-scale Transformer embeddings) at batches of 64, so
    # 12 epochs take about as many steps as its 24 of 128; emb 128 / hidden 160: 2.43M parameters, the
    # Transformer matched by match_transformer (d 128). What it was measured at: its note and docs/results.md
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
    "quick": "built-in captions corpus, no data folder; cold on 2 CPU cores 128 s (Transformer) / 76 s (LSTM) "
             "wall, one seed on a shared machine, measured (docs/results.md). Too small for real data.",
    "multi30k_cpu": "Multi30K in data_dir (train.<src>.gz and train.<tgt>.gz; en→de by default, de→en with "
                    "src_lang/tgt_lang; no fr in the shared data); 1,000 pairs, 2 shadows; the LSTM trains 28 "
                    "epochs, the Transformer 18. Measured over 3 seeds × 2 directions (docs/results.md), one CPU "
                    "core per run: about 3–4 min per architecture with shadows and attacks (Transformer 178–183 s, "
                    "LSTM 216–236 s); train BLEU 45–65 (Transformer) and 42–66 (LSTM). Both memorise: every "
                    "attack is near AUC 1 and validation BLEU is 2–8, so it cannot decide F1 (the RNN leaks "
                    "more): that needs validation BLEU ≥ 20 for both, which no CPU preset reaches yet (the "
                    "paper preset, on a GPU, is the candidate: its note).",
    "pairs_cpu": "parallel text in data_dir (<name>.<src_lang> / <name>.<tgt_lang>, one sentence a line; the "
                 "'train' pair when there are several; docs/your_data.md) at multi30k_cpu's sizes. Measured on "
                 "Multi30K en→de read as pairs (one seed, a 2-core machine loaded by other work): 586 s "
                 "(Transformer) / 444 s (LSTM) from the command to the results (95 / 128 CPU s); train BLEU "
                 "53.6 / 57.7, validation 4.1 / 4.0; both memorise: every attack near AUC 1.",
    "multi30k_small": "Multi30K de→en in data_dir (train.de.gz, train.en.gz), sized for 2 CPU cores: 12,000 "
                      "training pairs, word vocabularies capped at 4,000 per side, 2.43M parameters for both "
                      "architectures, 12 epochs of 64 with multi30k_gpu's recipe (warm-up, label smoothing 0.1), 2 "
                      "shadows. Measured victim-only so far (bench/translation_probe.py, one seed, a shared and "
                      "loaded machine; docs/results.md \"multi30k_small\"); the full preset (shadows, attacks) is "
                      "not measured yet.",
    "multi30k_gpu": "Multi30K en→de in data_dir (train.en.gz, train.de.gz), for a GPU: 12,000 training pairs, "
                    "5 shadows, batches of 128, 24 epochs, the same recipe for both architectures (learning-rate "
                    "warm-up over 400 steps then inverse-√ decay from 2e-3, label smoothing 0.1, the "
                    "Transformer's embeddings initialised at unit input scale) so that the Transformer learns "
                    "too (the paper preset's underfit: train BLEU 15.6). Measured on one H100 on 2026-11-27 "
                    "(one seed; bench/device_session_findings.sh on main's tree at commit 5953d02, torch 2.11; "
                    "docs/results.md, \"GPU check (one H100, 2026-11-27)\"): the six models side by side "
                    "(MIA_EXECUTOR=processes) trained in 115.9 s (Transformer) / 117.0 s (LSTM), attack stage "
                    "31.2 s / 20.7 s; validation BLEU 26.4 / 26.8 (train 65.6 / 41.7), so both translate (the "
                    "findings' bar, validation BLEU ≥ 20); LiRA AUC 0.945 / 0.936 is below 0.95 but RMIA 0.986 / "
                    "0.975 is above (and the Transformer's shadow-model attack 0.968, zlib 0.955, PRMIA 0.952), "
                    "so not every attack is below saturation. One seed: F1 on it is inconclusive "
                    "(one repeat); 6 repeats would take about 6 × (149 + 138) s ≈ 29 min of one H100 (an "
                    "estimate from that one repeat). Not for a CPU: on one core here 8 steps of one Transformer "
                    "and a BLEU on 100 sentences took 22 s (bench/translation_probe.py), so the 6 × 2,256 steps "
                    "would take hours (an estimate).",
    "paper": "Multi30K (fr→en) in data_dir; the study's sizes (5,000 pairs, 5 shadows): for a GPU — on one H100, "
             "en→de, the six models side by side (MIA_EXECUTOR=processes) trained in 82 s (Transformer) / 77 s "
             "(LSTM) and the attacks took 35–43 s (docs/results.md, commit f0f2da2); with the batched attack "
             "fit the LSTM's attack stage took 26.0 s (2026-11-27, main's tree at commit 5953d02; target ≤ 10 s). "
             "Not measured on 2 CPU cores. Validation BLEU there: 12.9 (Transformer) / 19.6 (LSTM), LiRA AUC "
             "0.96 / 0.94: below the ≥ 20 both need for a comparison that can decide F1; the "
             "multi30k_gpu preset reaches validation BLEU ≥ 20 for both (its note). No CPU preset comes near "
             "(multi30k_cpu: 2–8).",
}
