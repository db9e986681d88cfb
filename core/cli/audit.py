"""``python -m core audit``: audit a model you already have (:func:`core.audit.audit`, the same numbers as the
notebook and the Your model page).

    python -m core audit --model torchvision:resnet18 --weights model.safetensors --data ~/pets \\
        --members members.txt --preprocess preprocess.toml --recipe recipe.toml --out result.json --report report.html
    python -m core audit --model onnx:model.onnx --data table.csv --members members.txt --preprocess pre.toml \\
        --reference-losses refs.csv --out result.json

Every refusal is one line ``error: ...`` with exit status 2, before anything trains: the options, the spec, the
files, the preprocessing and the recipe, the member list against the records, the roles' sizes, and the model's fit
on its own members under the declared preprocessing.
"""
from __future__ import annotations

import argparse
import math
from typing import Any, cast

from core.cli.common import Once, positive_int
from core.cli.output import out_path, write_result
from core.foundations.errors import ConfigError

KINDS = ("torchvision", "timm", "hf", "onnx")


def add_audit_command(sub: Any) -> None:
    p = sub.add_parser("audit", help="audit a model you already have (torchvision:NAME, timm:NAME, hf:DIR, "
                                     "onnx:FILE) on its own preprocessing: every attack with 95 %% intervals, the blind "
                                     "baseline, the risk figures (docs/your_data.md)")
    p.add_argument("--model", required=True, action=Once, metavar="SPEC",
                   help="torchvision:NAME, timm:NAME (with --weights), hf:DIR (a save_pretrained folder) or onnx:FILE")
    p.add_argument("--weights", action=Once, metavar="FILE.safetensors", help="the state dict (torchvision, timm)")
    p.add_argument("--data", required=True, action=Once, metavar="DIR|FILE.csv",
                   help="a folder of class folders (DIR/<class>/<image>) or a CSV with a header row")
    p.add_argument("--members", required=True, action=Once, metavar="FILE",
                   help="the records the model trained on, one id a line (image: path relative to DIR; CSV: the id "
                        "column, else the 0-based row)")
    p.add_argument("--non-members", dest="non_members", action=Once, metavar="FILE",
                   help="the non-members to audit (default: as many as the members, drawn from the other records)")
    p.add_argument("--preprocess", action=Once, metavar="FILE.toml|json", help="the model's preprocessing, as data")
    p.add_argument("--recipe", action=Once, metavar="FILE.toml|json",
                   help="how the model was trained: references are trained by it (not for onnx)")
    p.add_argument("--reference-losses", dest="reference_losses", action=Once, metavar="FILE.csv",
                   help="reference models' losses on the records: columns id, ref_loss_0…, optional ref_in_0…")
    p.add_argument("--stated-accuracy", dest="stated_accuracy", type=float, action=Once, metavar="A",
                   help="the training accuracy you measured, shown beside the audit's")
    p.add_argument("--prior", type=float, action=Once, help="membership prior of the risk figures (default "
                                                           "members / records)")
    p.add_argument("--fpr", type=float, default=0.01, action=Once, help="FPR of the risk figures (default 0.01)")
    p.add_argument("--dirichlet", action=Once, metavar="K[,K…]", help="what-ifs: the Dirichlet mechanism at each k")
    p.add_argument("--gaussian", action=Once, metavar="S[,S…]", help="what-ifs: Gaussian weight noise at each σ")
    p.add_argument("--out", action=Once, help="write the JSON here (default: stdout)")
    p.add_argument("--report", action=Once, metavar="FILE.html", help="also write the HTML report here")
    p.add_argument("--bootstrap", type=positive_int, default=None, action=Once, metavar="N",
                   help="resamples per interval, 100..10000 (default 1000, fewer on many records)")
    p.add_argument("--seed", type=int, default=0, action=Once, help="seed of roles, references, halves, bootstrap")


def _values(text: str | None, what: str) -> list[float]:
    if text is None:
        return []
    out = []
    for part in text.split(","):
        try:
            v = float(part)
        except ValueError:
            raise ConfigError(f"--{what}: {part.strip()!r} is not a number") from None
        if not math.isfinite(v) or v < 0 or (what == "dirichlet" and v == 0):
            raise ConfigError(f"--{what}: {part.strip()!r} must be a finite number {'> 0' if what == 'dirichlet' else '≥ 0'}")
        out.append(v)
    return out


def _reference_losses(path: str, ids: list[str]):
    """(records × K) losses and IN masks for ``ids`` from a CSV with ``id``, ``ref_loss_<k>``, ``ref_in_<k>``."""
    import numpy as np  # noqa: PLC0415  (after the checks)

    from core.data.csv_table import LIMITS, parse_csv, read_csv_bytes  # noqa: PLC0415
    header, columns = parse_csv(read_csv_bytes(path, LIMITS, "/"), path, LIMITS)
    by = dict(zip(header, columns))
    losses = sorted((int(h[9:]), h) for h in header if h.startswith("ref_loss_") and h[9:].isdigit())
    if "id" not in by or len(losses) < 2:
        raise ConfigError(f"--reference-losses {path!r}: needs an id column and ref_loss_0, ref_loss_1, … (two or more)")
    row = {r.strip(): i for i, r in enumerate(by["id"])}
    missing = [i for i in ids if i not in row]
    if missing:
        raise ConfigError(f"--reference-losses {path!r}: no row for record {missing[0][:60]!r}")
    pick = [row[i] for i in ids]
    try:
        loss = np.array([[float(by[h][r]) for _, h in losses] for r in pick])
        ins = [f"ref_in_{k}" for k, _ in losses]
        ref_in = (np.array([[float(by[h][r]) for h in ins] for r in pick]) > 0.5) if all(h in by for h in ins) else None
    except ValueError:
        raise ConfigError(f"--reference-losses {path!r}: a cell is not a number") from None
    return loss, ref_in


def audit_command(args: argparse.Namespace) -> int:
    """``audit`` (module docstring)."""
    kind = args.model.partition(":")[0]
    if kind not in KINDS or not args.model.partition(":")[2].strip():
        raise ConfigError(f"--model {args.model!r} is not KIND:NAME with KIND one of {', '.join(KINDS)}")
    if kind in ("torchvision", "timm") and not args.weights:
        raise ConfigError(f"--model {args.model}: --weights FILE.safetensors is needed")
    if kind == "onnx" and args.recipe:
        raise ConfigError("--recipe: an ONNX graph is run, not retrained; give --reference-losses for LiRA and RMIA")
    if args.bootstrap is not None and not 100 <= args.bootstrap <= 10_000:
        raise ConfigError(f"--bootstrap must lie in 100..10000, got {args.bootstrap}")
    if not 0 < args.fpr < 1 or (args.prior is not None and not 0 < args.prior < 1):
        raise ConfigError("--fpr and --prior must lie in (0, 1)")
    ks, sigmas = _values(args.dirichlet, "dirichlet"), _values(args.gaussian, "gaussian")
    out, report = out_path(args.out), out_path(args.report)
    if out is not None and report is not None and out == report:
        raise ConfigError("--out and --report name the same file")
    # after the checks: refused arguments answer at once
    from core.analyses.user_audit import assign_roles  # noqa: PLC0415
    from core.audit import audit, load_preprocess, read_ids  # noqa: PLC0415
    from core.data.user_records import read_records  # noqa: PLC0415
    references = None
    if args.reference_losses:  # the rows of the audited records, in the audit's order (members, then non-members)
        records = read_records(args.data, load_preprocess(args.preprocess), root="/")
        roles = assign_roles(records, cast("tuple[str, ...]", read_ids(args.members, "members")),
                             read_ids(args.non_members, "non-members"),
                             args.seed)
        order = [records.ids[i] for i in list(roles.members) + list(roles.nonmembers)]
        references = _reference_losses(args.reference_losses, order)
    result = audit(args.model, args.members, args.non_members, data=args.data, weights=args.weights,
                   preprocess=args.preprocess, recipe=args.recipe,
                   reference_losses=None if references is None else references[0],
                   reference_in=None if references is None else references[1], stated_accuracy=args.stated_accuracy,
                   prior=args.prior, fpr=args.fpr, seed=args.seed, n_boot=args.bootstrap)
    doc = result.to_dict()
    whatifs = [result.dirichlet(k) for k in ks] + [result.gaussian(s) for s in sigmas]
    if whatifs:
        doc["what_if"] = [w.to_dict() for w in whatifs]
    if report is not None:
        result.report(report)
    write_result(out, doc, "model_audit")
    return 0
