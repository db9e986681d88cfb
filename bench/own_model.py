"""Real data through the "model you already have" audit (python -m core audit): models trained outside the explorer.

    .venv/bin/python bench/own_model.py --out /tmp/own_model            # 2,000 images, 20 epochs, 2 references
    .venv/bin/python bench/own_model.py --out /tmp/own_model --tiny     # a check that it runs (minutes)
    .venv/bin/python bench/own_model.py --out /tmp/own_model --only table   # the table alone (seconds)

1. **ResNet-18 on CIFAR-10 class folders.** A seeded draw of CIFAR-10 training images (``--images``; 400 with ``--tiny``) of
   ``../shared/data/cifar10/cifar10_jpeg.npz`` are written as ``DIR/<class>/<i>.png``; a torchvision ResNet-18
   (10 classes) is trained *outside* the explorer on a seeded half of them with the usual CIFAR transform
   (ToTensor + Normalize, random flip + 4-pixel crop) and SGD, saved as safetensors with its member list, the
   declared preprocessing and the recipe; then ``python -m core audit --model torchvision:resnet18 …`` audits it.
2. **scikit-learn on a real table through ONNX.** scikit-learn's breast cancer table (569 rows, 30 columns) written
   as a CSV with an id column; a gradient-boosting classifier trained on a seeded half, exported with skl2onnx;
   ``python -m core audit --model onnx:… --data table.csv`` audits it (no references: LiRA/RMIA are said not to run).

Each row printed: records per role, training accuracy, the check's accuracy, wall time of the audit, and every
attack's AUC with its 95 % interval beside the blind baseline's (the JSON and HTML report stay in ``--out``).
Timings only mean something on an idle machine: record them in docs/your_data.md with the command and the commit.
"""
from __future__ import annotations

import argparse
import io
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
#: the checkout's ../shared (a worktree one level deeper: ../../shared)
CIFAR = next((p for p in (ROOT.parent / "shared", ROOT.parent.parent / "shared") if p.is_dir()),
             ROOT.parent / "shared") / "data" / "cifar10" / "cifar10_jpeg.npz"
MEAN, STD = [0.4914, 0.4822, 0.4465], [0.2470, 0.2435, 0.2616]


def cifar_folder(out: Path, n: int) -> np.ndarray:
    from PIL import Image
    z = np.load(CIFAR, allow_pickle=False)
    jpeg, offsets, labels, split = z["jpeg"], z["offsets"], z["labels"], z["split"]
    # a seeded draw: the file is ordered by class
    train = np.sort(np.random.default_rng(0).choice(np.flatnonzero(split == 0), n, replace=False))
    pixels = []
    for j, i in enumerate(train):
        img = Image.open(io.BytesIO(jpeg[offsets[i]:offsets[i + 1]].tobytes())).convert("RGB")
        (out / f"c{labels[i]}").mkdir(parents=True, exist_ok=True)
        img.save(out / f"c{labels[i]}" / f"{j:05d}.png")
        pixels.append(np.asarray(img))
    return np.stack(pixels), labels[train].astype(np.int64)


def train_resnet(out: Path, n_images: int, epochs: int, references: int) -> list[str]:
    import torch
    from safetensors.torch import save_file
    sys.path.insert(0, str(ROOT))
    from core.models.kinds.vision_import import import_torchvision
    tv = import_torchvision()
    folder = out / "cifar"
    pixels, labels = cifar_folder(folder, n_images)
    ids = sorted(str(p.relative_to(folder)) for p in folder.rglob("*.png"))
    by_name = {f"c{labels[j]}/{j:05d}.png": j for j in range(len(labels))}
    order = [by_name[i] for i in ids]
    members = sorted(np.random.default_rng(0).choice(len(ids), len(ids) // 2, replace=False))
    x = torch.as_tensor(pixels[order]).permute(0, 3, 1, 2).float() / 255.0
    x = (x - torch.tensor(MEAN)[:, None, None]) / torch.tensor(STD)[:, None, None]
    y = torch.as_tensor(labels[order])
    torch.manual_seed(0)
    net = tv.models.resnet18(num_classes=10)
    opt = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9, weight_decay=5e-4)
    g = torch.Generator().manual_seed(0)
    xm, ym = x[members], y[members]
    t0 = time.time()
    for _ in range(epochs):
        net.train()
        perm = torch.randperm(len(ym), generator=g)
        for i in range(0, len(ym), 128):
            b = perm[i:i + 128]
            xb = xm[b]
            flip = torch.rand(len(b), generator=g) < 0.5
            xb = torch.where(flip[:, None, None, None], xb.flip(-1), xb)
            pad = torch.nn.functional.pad(xb, (4, 4, 4, 4))
            dy, dx = torch.randint(0, 9, (2,), generator=g)
            xb = pad[:, :, dy:dy + 32, dx:dx + 32]
            loss = torch.nn.functional.cross_entropy(net(xb), ym[b])
            opt.zero_grad()
            loss.backward()
            opt.step()
    net.eval()
    with torch.no_grad():
        acc = float((net(xm[:2000]).argmax(1) == ym[:2000]).float().mean())
    print(f"resnet18: trained {epochs} epochs on {len(members)} images in {time.time() - t0:.0f} s, train acc {acc:.3f}")
    save_file(net.state_dict(), out / "resnet18.safetensors")
    (out / "members.txt").write_text("\n".join(ids[i] for i in members) + "\n")
    (out / "pre.toml").write_text(f"num_classes = 10\n[image]\nchannels = 3\nmean = {MEAN}\nstd = {STD}\n")
    (out / "recipe.toml").write_text(f'optimizer = "sgd"\nlr = 0.05\nmomentum = 0.9\nweight_decay = 5e-4\n'
                                     f'epochs = {epochs}\nbatch_size = 128\nreferences = {references}\n'
                                     f'[augmentation]\nhflip = true\ncrop_padding = 4\n')
    return ["--model", "torchvision:resnet18", "--weights", str(out / "resnet18.safetensors"), "--data", str(folder),
            "--members", str(out / "members.txt"), "--preprocess", str(out / "pre.toml"),
            "--recipe", str(out / "recipe.toml"), "--stated-accuracy", f"{acc:.4f}"]


def train_table(out: Path) -> list[str]:
    from skl2onnx import convert_sklearn
    from skl2onnx.common.data_types import FloatTensorType
    from sklearn.datasets import load_breast_cancer
    from sklearn.ensemble import GradientBoostingClassifier
    d = load_breast_cancer()
    cols = [f"x{j}" for j in range(d.data.shape[1])]
    rows = np.array([[float(f"{v:.9g}") for v in r] for r in d.data], np.float32)
    lines = ["id," + ",".join(cols) + ",diagnosis"] + [f"p{i}," + ",".join(f"{v:.9g}" for v in rows[i]) +
                                                       f",{d.target[i]}" for i in range(len(rows))]
    (out / "table.csv").write_text("\n".join(lines) + "\n")
    members = sorted(np.random.default_rng(0).choice(len(rows), len(rows) // 2, replace=False))
    clf = GradientBoostingClassifier(random_state=0).fit(rows[members], d.target[members])
    print(f"gradient boosting: train acc {clf.score(rows[members], d.target[members]):.3f}")
    onx = convert_sklearn(clf, initial_types=[("x", FloatTensorType([None, len(cols)]))])
    (out / "gb.onnx").write_bytes(onx.SerializeToString())
    (out / "table_members.txt").write_text("\n".join(f"p{i}" for i in members) + "\n")
    (out / "table.toml").write_text(f'num_classes = 2\n[table]\ncolumns = {json.dumps(cols)}\nlabel = "diagnosis"\n'
                                    f'id = "id"\n')
    return ["--model", f"onnx:{out / 'gb.onnx'}", "--data", str(out / "table.csv"), "--members",
            str(out / "table_members.txt"), "--preprocess", str(out / "table.toml")]


def audit(name: str, args: list[str], out: Path) -> None:
    t0 = time.time()
    cmd = [sys.executable, "-m", "core", "audit", *args, "--out", str(out / f"{name}.json"),
           "--report", str(out / f"{name}.html")]
    subprocess.run(cmd, cwd=ROOT, check=True)
    doc = json.loads((out / f"{name}.json").read_text())
    print(f"{name}: {time.time() - t0:.0f} s wall; roles {doc['roles']}; check: {doc['check']['message']}")
    for a, v in doc["attacks"].items():
        auc = v["auc"]
        print(f"  {a:13s} AUC {auc['mean']:.3f} [{auc['ci_low']:.3f}, {auc['ci_high']:.3f}]  N = {auc['n']}")
    print(f"  not run: {doc['not_run']}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True)
    p.add_argument("--tiny", action="store_true", help="400 images, 15 epochs, 2 references: checks that it runs")
    # ResNet-18 at 32x32 trains at roughly 100 images a second on one core: 2,000 images (1,000 members) for 20 epochs
    # is a few minutes a model, the victim and each reference alike
    p.add_argument("--images", type=int, default=2000, help="CIFAR-10 images written as class folders (half members)")
    p.add_argument("--epochs", type=int, default=20)
    p.add_argument("--references", type=int, default=2, help="reference models the audit trains with the recipe")
    p.add_argument("--only", choices=("resnet", "table"), help="one of the two models")
    a = p.parse_args()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    extra = ["--bootstrap", "200"] if a.tiny else []
    if a.only != "table":
        args = train_resnet(out, 400 if a.tiny else a.images, 15 if a.tiny else a.epochs, 2 if a.tiny else a.references)
        audit("resnet18_cifar10", args + extra, out)
    if a.only != "resnet":
        audit("sklearn_breast_cancer", train_table(out) + extra, out)


if __name__ == "__main__":
    main()
