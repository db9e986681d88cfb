"""One training step (forward + backward, one batch of 128) of the attack LSTMs of the quick presets,
three ways: several members in one block-diagonal network read unpacked (``JointAttack.forward_padded``),
one network per member read unpacked (what :mod:`core.attacks.attack_ensemble` does on a CPU), and
one per member packed (``AttackLSTM.forward``: the path before issue 34). Shapes are the quick
presets' (navigation: 3 checkpoint epochs, 29 steps, 16 features, hidden 32; translation: 2, 26, 14,
64), lengths drawn around their measured means. Best of 3 rounds of 10 steps, one thread.

    OMP_NUM_THREADS=1 .venv/bin/python bench/attack_lstm_step.py
"""
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from core.models.attack import AttackLSTM, JointAttack  # noqa: E402

torch.set_num_threads(1)
for name, (b, steps, f, h, e, mean) in {"navigation quick": (128, 29, 16, 32, 3, 10.3),
                                        "translation quick": (128, 26, 14, 64, 2, 11.7)}.items():
    torch.manual_seed(0)
    lengths = torch.clamp((torch.randn(b) * 4 + mean).round().long(), 1, steps)
    x = torch.randn(b, steps, f * e) * (torch.arange(steps)[None, :] < lengths[:, None])[..., None]
    members = [AttackLSTM(f, h) for _ in range(e)]
    joint, singles = JointAttack(members), [JointAttack([m]) for m in members]
    longest = int(lengths.max())
    ways = {
        "joint, unpacked": lambda: joint.forward_padded(x[:, :longest], lengths[:, None].expand(-1, e)).sum(),
        "one each, unpacked": lambda: sum(s.forward_padded(x[:, :longest, i * f:(i + 1) * f], lengths[:, None]).sum()
                                          for i, s in enumerate(singles)),
        "one each, packed (before)": lambda: sum(m(x[:, :, i * f:(i + 1) * f], lengths).sum() for i, m in enumerate(members)),
    }
    best: dict[str, float] = {}
    for _ in range(3):
        for way, step in ways.items():
            t = time.perf_counter()
            for _ in range(10):
                step().backward()
            best[way] = min(best.get(way, float("inf")), (time.perf_counter() - t) / 10 * 1000)
    print(f"{name} ({e} LSTMs, hidden {h}): " + ", ".join(f"{w} {ms:.1f} ms" for w, ms in best.items()), flush=True)
