"""Auditing a model its owner already has (core.audit, python -m core audit): every kind end to end on tiny models
made here, the planted-preprocessing check, the fit check, the refusals, and the doors' equal numbers."""
from __future__ import annotations

import io
import json
import warnings

import numpy as np
import pytest
import torch
from PIL import Image
from safetensors.torch import save_file
from sklearn.datasets import load_breast_cancer, load_digits
from torch import nn

from core.audit import AuditResult, audit
from core.cli.main import main
from core.foundations.errors import ConfigError
from core.measurement.metrics import roc_auc
from core.models.kinds.preprocess import ImageTransform, transform_image
from core.models.kinds.vision_import import import_torchvision

N_PER_CLASS = 40  # 3 classes × 40 = 120 images: 40 members, 40 non-members, 40 in the pool
CLASSES = (1, 7, 9)  # digits a small CNN confuses now and then: its losses separate members
QUICK = {"n_boot": 100}


def digits_folder(root, factor: int = 15):
    """DIR/<class>/<i>.png of sklearn's 8×8 digits (values 0…16 stored as value × factor), and the member list."""
    d = load_digits()
    paths, images, labels = [], [], []
    for k, c in enumerate(CLASSES):
        (root / f"c{c}").mkdir(parents=True)
        for j, i in enumerate(np.flatnonzero(d.target == c)[:N_PER_CLASS]):
            px = (d.images[i] * factor).astype(np.uint8)
            rel = f"c{c}/{j:03d}.png"
            Image.fromarray(px).save(root / rel)
            paths.append(rel)
            images.append(px)
            labels.append(k)
    rng = np.random.default_rng(0)
    members = sorted(rng.choice(len(paths), size=len(paths) // 3, replace=False))
    (root.parent / "members.txt").write_text("\n".join(paths[i] for i in members) + "\n")
    return paths, np.stack(images), np.asarray(labels), np.asarray(members)


class SmallCNN(nn.Module):
    def __init__(self, channels: int = 1, n_classes: int = 3):
        super().__init__()
        self.conv = nn.Conv2d(channels, 8, 3, padding=1)
        self.fc = nn.Linear(8 * 8 * 8, n_classes)

    def forward(self, x):
        return self.fc(torch.relu(self.conv(x)).flatten(1))


def fit(module: nn.Module, x: torch.Tensor, y: np.ndarray, steps: int = 150, lr: float = 1e-2,
        frozen_norm: bool = False, sgd: bool = False) -> nn.Module:
    """Full-batch Adam; ``frozen_norm``: BatchNorm kept at its initial statistics (eval mode) while training, so a
    few steps give a model that answers in eval mode as it trained."""
    torch.manual_seed(0)
    module.train(not frozen_norm)
    opt = torch.optim.SGD(module.parameters(), lr, momentum=0.9) if sgd else torch.optim.Adam(module.parameters(), lr)
    target = torch.as_tensor(y)
    for _ in range(steps):
        opt.zero_grad()
        out = module(x)
        nn.functional.cross_entropy(getattr(out, "logits", out), target).backward()
        opt.step()
    return module.eval()


def timm_on_digits(images, labels, members, out) -> tuple[nn.Module, torch.Tensor]:
    """timm's ``test_resnet`` fitted on the digits' members under a declared 3-channel transform, its state dict
    saved as safetensors at ``out`` (a model trained outside the explorer, as a user brings one): (the model, the
    transformed images)."""
    from core.models.kinds.vision_import import import_timm
    timm = import_timm()
    transform = ImageTransform(channels=3, mean=(0.5, 0.5, 0.5), std=(0.25, 0.25, 0.25))
    x = torch.as_tensor(np.stack([transform_image(p, transform) for p in images]))
    torch.manual_seed(0)
    net = fit(timm.create_model("test_resnet", pretrained=False, num_classes=3), x[members], labels[members],
              steps=40, lr=3e-3, frozen_norm=True)
    save_file(net.state_dict(), out)
    return net, x


@pytest.fixture()
def digits(tmp_path):
    data = tmp_path / "digits"
    paths, images, labels, members = digits_folder(data)
    return data, paths, images, labels, members


def test_planted_preprocessing_loss_auc_equals_the_models_own_losses(digits, tmp_path):
    """A model trained on its own transform (pixels / 16) is audited on that transform exactly: the loss threshold's
    AUC equals the AUC of its per-record losses computed here, outside the explorer."""
    data, paths, images, labels, members = digits
    x = torch.as_tensor(images[:, None].astype(np.float32) / np.float32(16.0))
    torch.manual_seed(0)
    net = fit(SmallCNN(), x[members], labels[members], steps=60)
    (tmp_path / "pre.toml").write_text("[image]\nchannels = 1\nscale = 16\n")
    result = audit(net, str(tmp_path / "members.txt"), data=str(data), preprocess=str(tmp_path / "pre.toml"), **QUICK)
    audited = result.state.audit_index  # the records' order is the folder's: the paths made above
    with torch.no_grad():  # the model's own per-record losses, −log softmax(logits)[label] in float64
        own_loss = nn.functional.cross_entropy(net(x[audited]).double(), torch.as_tensor(labels[audited]),
                                               reduction="none").numpy()
    is_member = np.isin(audited, members)
    assert is_member.sum() == len(members) and (~is_member).sum() == 40
    own_auc = roc_auc(-own_loss, is_member)
    assert 0.55 < own_auc < 1.0  # a leak the test can see, not a saturated one
    assert abs(result.attack("loss").auc.mean - own_auc) < 1e-6
    assert result.preprocess["image"]["scale"] == 16.0
    # the explorer's own scaling (pixels / 255) is never applied silently: declared, it gives other numbers or stops
    try:
        other = audit(net, str(tmp_path / "members.txt"), data=str(data), preprocess={"image": {"channels": 1}}, **QUICK)
    except ConfigError as exc:
        assert "check the preprocessing" in str(exc)
    else:
        assert abs(other.attack("loss").auc.mean - own_auc) > 1e-6


def test_a_model_that_does_not_fit_its_members_under_the_declared_preprocessing_stops(digits, tmp_path):
    data, paths, images, labels, members = digits
    torch.manual_seed(1)
    untrained = SmallCNN()
    with pytest.raises(ConfigError, match="does not fit its own members: check the preprocessing"):
        audit(untrained, str(tmp_path / "members.txt"), data=str(data), preprocess={"image": {"channels": 1}}, **QUICK)


def test_nn_module_with_references_what_ifs_and_report(digits, tmp_path):
    data, paths, images, labels, members = digits
    x = torch.as_tensor(images[:, None].astype(np.float32) / np.float32(16.0))
    net = fit(SmallCNN(), x[members], labels[members], steps=60)
    recipe = {"optimizer": "adam", "lr": 1e-2, "epochs": 15, "batch_size": 40, "references": 4}
    result = audit(net, str(tmp_path / "members.txt"), data=str(data), preprocess={"image": {"channels": 1, "scale": 16}},
                   recipe=recipe, factory=SmallCNN, **QUICK)
    assert isinstance(result, AuditResult)
    names = {a.name for a in result.attacks}
    assert {"loss", "entropy", "lira_offline", "rmia", "quantile", "label_only", "gap", "blind"} <= names
    for a in result.attacks:
        assert a.auc.ci_low <= a.auc.mean <= a.auc.ci_high and a.auc.n > 0
    doc = json.loads(result.to_json())
    assert doc["roles"] == {**doc["roles"], "members": 40, "nonmembers": 40, "pool": 40, "records": 120}
    assert doc["method"]["references_trained"] == 4 and doc["recipe"]["epochs"] == 15
    assert {r["attack"] for r in doc["risk"]} >= {"loss", "lira_offline"}
    r = doc["risk"][0]
    assert r["precision"]["mean"] is not None and r["prior"] == pytest.approx(40 / 120)
    assert "blind" in {c["of"].split(" - ")[1] for c in doc["comparisons"]}
    strong = result.dirichlet(1e-3)  # k → 0: answers are nearly one-hot draws, the loss leaks less than undefended
    assert strong.defense["mechanism"] == "dirichlet" and strong.attack("blind").auc.mean == result.attack("blind").auc.mean
    assert strong.attack("loss").auc.mean != result.attack("loss").auc.mean
    noisy = result.gaussian(10.0)  # weights drowned in noise: utility falls
    assert noisy.utility["member_accuracy"] < result.utility["member_accuracy"]
    html = result.report(tmp_path / "report.html")
    assert "Blind baseline" in html and "lira_offline" in html and (tmp_path / "report.html").exists()


def test_torchvision_resnet_end_to_end_via_the_cli(digits, tmp_path):
    tv = import_torchvision()
    data, paths, images, labels, members = digits
    transform = ImageTransform(channels=3)  # what pre.toml below declares
    x = torch.as_tensor(np.stack([transform_image(p, transform) for p in images]))
    torch.manual_seed(0)
    net = fit(tv.models.resnet18(num_classes=3), x[members], labels[members], steps=12, lr=0.05, frozen_norm=True,
              sgd=True)
    save_file(net.state_dict(), tmp_path / "resnet.safetensors")
    (tmp_path / "pre.toml").write_text("num_classes = 3\n[image]\nchannels = 3\n")
    (tmp_path / "recipe.toml").write_text('optimizer = "sgd"\nlr = 0.05\nepochs = 1\nbatch_size = 40\nreferences = 2\n')
    rc = main(["audit", "--model", "torchvision:resnet18", "--weights", str(tmp_path / "resnet.safetensors"),
               "--data", str(data), "--members", str(tmp_path / "members.txt"), "--preprocess", str(tmp_path / "pre.toml"),
               "--recipe", str(tmp_path / "recipe.toml"), "--bootstrap", "100", "--out", str(tmp_path / "r.json"),
               "--dirichlet", "1"])
    assert rc == 0
    doc = json.loads((tmp_path / "r.json").read_text())
    assert doc["model"]["kind"] == "torchvision" and doc["check"]["fits"]
    assert doc["method"]["references_trained"] == 2 and "lira_offline" in doc["attacks"]
    assert doc["what_if"][0]["defense"]["k"] == 1.0


def test_timm_model_without_a_recipe_says_why_lira_and_rmia_did_not_run(digits, tmp_path):
    data, paths, images, labels, members = digits
    net, x = timm_on_digits(images, labels, members, tmp_path / "timm.safetensors")
    pre = {"num_classes": 3, "image": {"channels": 3, "mean": [0.5] * 3, "std": [0.25] * 3}}
    result = audit("timm:test_resnet", str(tmp_path / "members.txt"), data=str(data), weights=str(tmp_path / "timm.safetensors"),
                   preprocess=pre, **QUICK)
    assert result.model["kind"] == "timm" and result.check.fits
    assert "no recipe" in result.not_run["lira_offline"] and "rmia" in result.not_run
    with torch.no_grad():
        own = nn.functional.cross_entropy(net(x[result.state.audit_index]).double(),
                                          torch.as_tensor(labels[result.state.audit_index]), reduction="none")
    assert abs(result.attack("loss").auc.mean - roc_auc(-own.numpy(), result.state.member)) < 1e-6
    with pytest.raises(ConfigError, match="do not fit timm:test_resnet"):
        audit("timm:test_resnet", str(tmp_path / "members.txt"), data=str(data), weights=str(tmp_path / "timm.safetensors"),
              preprocess={**pre, "num_classes": 4})


def test_hugging_face_folder_with_its_own_image_processor(digits, tmp_path):
    import_torchvision()  # before transformers, which imports torchvision where it is installed
    from transformers import ViTConfig, ViTForImageClassification, ViTImageProcessor
    data, paths, images, labels, members = digits
    config = ViTConfig(image_size=8, patch_size=4, num_channels=3, hidden_size=16, num_hidden_layers=1,
                       num_attention_heads=2, intermediate_size=32, num_labels=3)
    processor = ViTImageProcessor(size={"height": 8, "width": 8}, image_mean=[0.5] * 3, image_std=[0.5] * 3)
    x = torch.as_tensor(processor(images=[Image.fromarray(p).convert("RGB") for p in images],
                                  return_tensors="np")["pixel_values"])
    torch.manual_seed(0)
    model = fit(ViTForImageClassification(config), x[members], labels[members], steps=60, lr=1e-2)
    folder = tmp_path / "vit"
    model.save_pretrained(folder)
    processor.save_pretrained(folder)
    result = audit(f"hf:{folder}", str(tmp_path / "members.txt"), data=str(data),
                   recipe={"epochs": 2, "batch_size": 40, "references": 2, "lr": 1e-2}, **QUICK)
    assert result.model["kind"] == "hf" and result.check.fits
    assert any("image processor" in n for n in result.model["notes"])
    with torch.no_grad():
        own = nn.functional.cross_entropy(model(pixel_values=x[result.state.audit_index]).logits,
                                          torch.as_tensor(labels[result.state.audit_index]), reduction="none")
    assert abs(result.attack("loss").auc.mean - roc_auc(-own.numpy(), result.state.member)) < 1e-6
    assert result.method["references_trained"] == 2


def test_hugging_face_text_classifier_with_its_own_tokenizer(tmp_path):
    import_torchvision()  # before transformers, which imports torchvision where it is installed
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import BertConfig, BertForSequenceClassification, PreTrainedTokenizerFast
    words = [f"w{i}" for i in range(30)] + ["good", "bad"]
    vocab = {"[PAD]": 0, "[UNK]": 1, **{w: i + 2 for i, w in enumerate(words)}}
    raw = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    raw.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=raw, pad_token="[PAD]", unk_token="[UNK]")
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 2, 120)
    noisy = rng.random(120) < 0.3  # a third of the sentences carry the other label's word: members get memorised
    texts = [" ".join(list(rng.choice(words[:30], 6)) + [("good" if (y == 1) != n else "bad")])
             for y, n in zip(labels, noisy)]
    (tmp_path / "t.csv").write_text("id,text,label\n" + "".join(f"s{i},{t},{y}\n" for i, (t, y) in
                                                                 enumerate(zip(texts, labels))))
    members = np.sort(rng.choice(120, 40, replace=False))
    (tmp_path / "members.txt").write_text("\n".join(f"s{i}" for i in members) + "\n")
    config = BertConfig(vocab_size=len(vocab), hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=16, num_labels=2)
    torch.manual_seed(0)
    model = BertForSequenceClassification(config)
    enc = tokenizer(texts, padding="max_length", truncation=True, max_length=12, return_tensors="pt")
    x = {k: v for k, v in enc.items() if k in ("input_ids", "attention_mask", "token_type_ids")}

    class Wrap(nn.Module):  # fit() calls module(x): the dict goes in as keywords
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, batch):
            return self.m(**batch).logits

    fit(Wrap(model), {k: v[members] for k, v in x.items()}, labels[members], steps=150, lr=1e-2)
    folder = tmp_path / "bert"
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    pre = {"text": {"column": "text", "label": "label", "id": "id", "max_length": 12}}
    result = audit(f"hf:{folder}", str(tmp_path / "members.txt"), data=str(tmp_path / "t.csv"), preprocess=pre,
                   recipe={"epochs": 2, "batch_size": 40, "references": 2, "lr": 1e-2}, **QUICK)
    assert result.model["modality"] == "text" and result.check.fits
    assert "label_only" in result.not_run and result.method["references_trained"] == 2
    idx = result.state.audit_index
    with torch.no_grad():
        own = nn.functional.cross_entropy(model(**{k: v[idx] for k, v in x.items()}).logits.double(),
                                          torch.as_tensor(labels[idx]), reduction="none")
    assert abs(result.attack("loss").auc.mean - roc_auc(-own.numpy(), result.state.member)) < 1e-6


def test_onnx_export_of_a_torch_model_runs_the_attacks_without_shadows(digits, tmp_path):
    data, paths, images, labels, members = digits
    x = torch.as_tensor(images[:, None].astype(np.float32) / np.float32(16.0))
    net = fit(SmallCNN(), x[members], labels[members], steps=60)
    buf = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(net, torch.zeros(1, 1, 8, 8), buf, input_names=["x"], output_names=["logits"],
                          dynamic_axes={"x": {0: "n"}, "logits": {0: "n"}}, dynamo=False)
    (tmp_path / "cnn.onnx").write_bytes(buf.getvalue())
    result = audit(f"onnx:{tmp_path / 'cnn.onnx'}", str(tmp_path / "members.txt"), data=str(data),
                   preprocess={"num_classes": 3, "image": {"channels": 1, "scale": 16}}, **QUICK)
    names = {a.name for a in result.attacks}
    assert {"loss", "entropy", "quantile", "label_only", "gap", "blind"} <= names
    assert not names & {"lira_offline", "lira_online", "rmia"}
    assert "ONNX" in result.not_run["lira_offline"]
    import onnxruntime  # the graph's own answers, run here on pixels / 16 computed here
    session = onnxruntime.InferenceSession(buf.getvalue(), providers=["CPUExecutionProvider"])
    logits = torch.as_tensor(session.run(None, {"x": x[result.state.audit_index].numpy()})[0]).double()
    own = nn.functional.cross_entropy(logits, torch.as_tensor(labels[result.state.audit_index]), reduction="none")
    assert abs(result.attack("loss").auc.mean - roc_auc(-own.numpy(), result.state.member)) < 1e-6
    with pytest.raises(ConfigError, match="ONNX graph is run"):
        result.gaussian(0.1)


def sklearn_table(tmp_path):
    from skl2onnx import convert_sklearn
    from skl2onnx.common.data_types import FloatTensorType
    from sklearn.tree import DecisionTreeClassifier
    d = load_breast_cancer()
    cols = [f"f{j}" for j in range(5)]
    rows = d.data[:150, :5]
    y = d.target[:150]
    lines = ["id," + ",".join(cols) + ",outcome"] + [f"r{i}," + ",".join(f"{v:.6g}" for v in rows[i]) + f",{y[i]}"
                                                     for i in range(150)]
    (tmp_path / "t.csv").write_text("\n".join(lines) + "\n")
    members = np.random.default_rng(0).choice(150, 50, replace=False)
    feats = np.array([[float(f"{v:.6g}") for v in r] for r in rows], np.float32)
    clf = DecisionTreeClassifier(random_state=0).fit(feats[members], y[members])  # fits its members exactly
    onx = convert_sklearn(clf, initial_types=[("x", FloatTensorType([None, 5]))])
    (tmp_path / "tree.onnx").write_bytes(onx.SerializeToString())
    (tmp_path / "members.txt").write_text("\n".join(f"r{i}" for i in members) + "\n")
    (tmp_path / "pre.toml").write_text(f'num_classes = 2\n[table]\ncolumns = {json.dumps(cols)}\nlabel = "outcome"\n'
                                       f'id = "id"\n')
    return clf, feats, y, members


def test_scikit_learn_through_skl2onnx_and_the_doors_give_equal_numbers(tmp_path):
    clf, feats, y, members = sklearn_table(tmp_path)
    result = audit(f"onnx:{tmp_path / 'tree.onnx'}", str(tmp_path / "members.txt"), data=str(tmp_path / "t.csv"),
                   preprocess=str(tmp_path / "pre.toml"), **QUICK)
    assert result.model["modality"] == "table" and "label_only" in result.not_run
    assert any("probabilities" in n for n in result.model["notes"])
    rows = [int(result.state.audit_index[i]) for i in range(len(result.state.audit_index))]
    p = np.maximum(clf.predict_proba(feats[rows])[np.arange(len(rows)), y[rows]], 1e-12)
    assert abs(result.attack("loss").auc.mean - roc_auc(np.log(p), result.state.member)) < 1e-6
    rc = main(["audit", "--model", f"onnx:{tmp_path / 'tree.onnx'}", "--data", str(tmp_path / "t.csv"), "--members",
               str(tmp_path / "members.txt"), "--preprocess", str(tmp_path / "pre.toml"), "--bootstrap", "100",
               "--out", str(tmp_path / "cli.json")])
    assert rc == 0
    assert json.loads((tmp_path / "cli.json").read_text()) == json.loads(result.to_json())


def test_reference_losses_supplied_for_onnx_run_lira_and_rmia(tmp_path):
    clf, feats, y, members = sklearn_table(tmp_path)
    rng = np.random.default_rng(3)
    lines = ["id,ref_loss_0,ref_loss_1,ref_loss_2"] + [f"r{i}," + ",".join(f"{v:.4f}" for v in rng.exponential(0.5, 3))
                                                       for i in range(150)]
    (tmp_path / "refs.csv").write_text("\n".join(lines) + "\n")
    rc = main(["audit", "--model", f"onnx:{tmp_path / 'tree.onnx'}", "--data", str(tmp_path / "t.csv"), "--members",
               str(tmp_path / "members.txt"), "--preprocess", str(tmp_path / "pre.toml"), "--bootstrap", "100",
               "--reference-losses", str(tmp_path / "refs.csv"), "--out", str(tmp_path / "r.json")])
    assert rc == 0
    doc = json.loads((tmp_path / "r.json").read_text())
    assert {"lira_offline", "rmia"} <= set(doc["attacks"]) and "lira_offline" not in doc["not_run"]


@pytest.mark.parametrize("name, head", [("model.pt", b"PK\x03\x04"), ("model.joblib", b"\x80\x04"),
                                        ("weights.safetensors", b"\x80\x05\x95")])
def test_pickles_are_refused_with_the_safe_export_named(tmp_path, name, head, capsys):
    (tmp_path / name).write_bytes(head + b"\x00" * 64)
    (tmp_path / "d").mkdir()
    rc = main(["audit", "--model", "torchvision:resnet18", "--weights", str(tmp_path / name), "--data",
               str(tmp_path / "d"), "--members", str(tmp_path / "m.txt")])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and err[0].startswith("error: ") and "safetensors" in err[0]


@pytest.mark.parametrize("args, says", [
    (["--model", "resnet18"], "KIND:NAME"),
    (["--model", "onnx:m.onnx", "--recipe", "r.toml"], "not retrained"),
    (["--model", "hf:x", "--fpr", "2"], "--fpr"),
    (["--model", "hf:x", "--dirichlet", "0"], "--dirichlet"),
])
def test_cli_bad_input_is_one_line_and_exit_2(tmp_path, args, says, capsys):
    rc = main(["audit", "--data", str(tmp_path), "--members", str(tmp_path / "m.txt"), *args])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and err[0].startswith("error: ") and says in err[0]


def test_bad_preprocessing_and_recipe_are_one_line(digits, tmp_path):
    data = digits[0]
    for pre, says in [({"image": {"channels": 2}}, "channels"), ({"image": {"mean": [0.5, 0.5, 0.5]}}, "mean and std"), ({"image": {"mean": [0.5]}}, "3 finite numbers"),
                      ({"imgae": {}}, "no key 'imgae'")]:
        with pytest.raises(ConfigError, match=says):
            audit(SmallCNN(), str(tmp_path / "members.txt"), data=str(data), preprocess=pre)
    with pytest.raises(ConfigError, match="optimizer"):
        audit(SmallCNN(), str(tmp_path / "members.txt"), data=str(data), recipe={"optimizer": "lbfgs"})
    (tmp_path / "bad.txt").write_text("c1/000.png\nnot/there.png\n")
    with pytest.raises(ConfigError, match="not a record"):
        audit(SmallCNN(), str(tmp_path / "bad.txt"), data=str(data))


def test_the_page_audits_an_onnx_model_with_the_same_numbers_as_python(tmp_path, monkeypatch):
    """The third door: the Your model page sizes the roles to the data, says them, and gives the numbers the
    Python function gives on the same inputs."""
    from pathlib import Path

    from streamlit.testing.v1 import AppTest
    root = tmp_path / "root"
    root.mkdir()
    monkeypatch.setenv("MIA_DATA_ROOT", str(root))
    sklearn_table(root)
    python = audit(f"onnx:{root / 'tree.onnx'}", str(root / "members.txt"), data=str(root / "t.csv"),
                   preprocess=str(root / "pre.toml"))
    at = AppTest.from_file(str(Path(__file__).resolve().parent.parent / "app.py"), default_timeout=120)
    at.switch_page("app_pages/6_Your_model.py")
    at.run()
    at.radio(key="yours:way").set_value("A model you already have").run()
    at.selectbox(key="own:kind").set_value("onnx").run()
    at.text_input(key="own:target").set_value("tree.onnx").run()
    at.text_input(key="own:data").set_value("t.csv").run()
    at.text_input(key="own:members").set_value("members.txt").run()
    at.text_area(key="own:pre").set_value((root / "pre.toml").read_text()).run()
    at.text_area(key="own:recipe").set_value("").run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    said = " ".join(s.value for s in at.success)
    assert "150 records" in said and "50 members" in said and "50 non-members" in said and "**50**" in said
    at.button(key="own:run").click().run()  # queued in the job queue: the page shows its progress, never trains
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    from core.jobs.own_model_audit import KIND
    from ui.shared import server_jobs
    manager = server_jobs()  # the server's queue (the page's own, one per process)
    [job] = [j for j in manager.active() + manager.recent() if j.kind == KIND]
    assert "background worker" in " ".join(c.value for c in at.caption)
    assert at.get("progress") and at.button(key=f"own:cancel:{job.id}")  # its progress bar and Cancel, while it runs
    with manager._cond:  # until the job ends (the manager is notified whenever a job leaves its slot)
        assert manager._cond.wait_for(lambda: job.done, 600)
    assert job.state == "done", job.error
    at.run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    table = at.dataframe[0].value
    loss = table[table["attack"] == "loss"]["AUC [95 % CI]"].iloc[0]
    a = python.attack("loss").auc
    assert loss == f"{a.mean:.3f} [{a.ci_low:.3f}, {a.ci_high:.3f}]"
    # the what-ifs: every attack that ran, its defended AUC beside the undefended one, and the defended utility
    what_if = at.dataframe[-1].value
    assert list(what_if["attack"]) == [x.name for x in python.attacks]
    assert what_if[what_if["attack"] == "loss"]["undefended AUC [95 % CI]"].iloc[0] == loss
    at.select_slider(key="own:k").set_value(0.01).run()
    assert not at.exception, at.exception
    moved = at.dataframe[-1].value
    d = python.dirichlet(0.01).attack("loss").auc
    assert moved[moved["attack"] == "loss"]["defended AUC [95 % CI]"].iloc[0] == \
        f"{d.mean:.3f} [{d.ci_low:.3f}, {d.ci_high:.3f}]"
    assert {m.label for m in at.metric} >= {"non-member accuracy (defended)", "utility loss"}
    # another session with the same inputs: the audit is not shown until it asks; asking attaches, nothing recomputed
    other = AppTest.from_file(str(Path(__file__).resolve().parent.parent / "app.py"), default_timeout=120)
    other.switch_page("app_pages/6_Your_model.py")
    other.run()
    other.radio(key="yours:way").set_value("A model you already have").run()
    other.selectbox(key="own:kind").set_value("onnx").run()
    for key, value in (("own:target", "tree.onnx"), ("own:data", "t.csv"), ("own:members", "members.txt")):
        other.text_input(key=key).set_value(value).run()
    other.text_area(key="own:pre").set_value((root / "pre.toml").read_text()).run()
    other.text_area(key="own:recipe").set_value("").run()
    assert not other.dataframe and other.button(key="own:run")
    other.button(key="own:run").click().run()
    assert not other.exception, other.exception
    assert other.dataframe and [j for j in manager.active() if j.kind == KIND] == []
    outside = tmp_path / "outside.onnx"
    outside.write_bytes((root / "tree.onnx").read_bytes())
    at.text_input(key="own:target").set_value(str(outside)).run()
    assert at.error and "outside the data root" in at.error[0].value


def test_table_labels_are_the_models_output_indices_when_integers_below_num_classes(tmp_path):
    from core.data.user_records import read_table_records
    from core.models.kinds.preprocess import parse_preprocess
    (tmp_path / "t.csv").write_text("a,y\n" + "".join(f"{i},{(0, 2)[i % 2]}\n" for i in range(10)))
    three = read_table_records(str(tmp_path / "t.csv"), parse_preprocess({"num_classes": 3, "table": {"label": "y"}}),
                               root="/")
    assert set(three.labels.tolist()) == {0, 2} and len(three.classes) == 3
    undeclared = read_table_records(str(tmp_path / "t.csv"), parse_preprocess({"table": {"label": "y"}}), root="/")
    assert set(undeclared.labels.tolist()) == {0, 1}  # numbered in sorted order, as scikit-learn's classes_
