"""``onnx:FILE`` — any classifier exported to ONNX (torch.onnx, skl2onnx for scikit-learn, onnxmltools for XGBoost
and LightGBM, tf2onnx), run by onnxruntime: a graph of operators, no code of the file's executes.

The input spec is read from the graph: its first input's rank says the records' kind (rank 2: a table, whose
columns are the declared ``[table] columns`` in the model's order; rank 4: images, by the declared image transform)
and its element type the dtype. The output read is a (N, m) tensor or a sequence of class → probability maps
(skl2onnx's default ZipMap), preferring an output named like ``prob``; rows that are probabilities (in [0, 1],
summing to 1) are taken as such, anything else as logits (the result says which). Probabilities are floored at
:data:`PROB_FLOOR` before the logarithm (a decision tree answers exact zeros). The graph cannot be retrained here:
the attacks that need references of its architecture run only from reference scores the user supplies.
"""
from __future__ import annotations

import numpy as np
import torch

from core.foundations.errors import ConfigError
from core.models.kinds.base import LoadedModel, ModelKind, read_model_file, register
from core.models.kinds.preprocess import Preprocess, RawRecords, TableSpec, table_features, transform_images
from core.models.kinds.vision_import import EXTRA

PROB_FLOOR = 1e-12
_DTYPES = {"tensor(float)": np.float32, "tensor(double)": np.float64, "tensor(int64)": np.int64,
           "tensor(int32)": np.int32, "tensor(float16)": np.float16}


def _session(payload: bytes, spec: str):
    try:
        import onnxruntime as ort  # noqa: PLC0415  (optional heavy)
    except ImportError:
        raise ConfigError(f"onnxruntime is not installed: {EXTRA}") from None
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1  # the records are few; the machine's cores belong to the bootstrap
    options.log_severity_level = 3
    try:
        return ort.InferenceSession(payload, options, providers=["CPUExecutionProvider"]), ort.__version__
    except Exception as exc:  # onnxruntime's own error types for a malformed graph
        raise ConfigError(f"{spec}: not an ONNX model onnxruntime can run ({' '.join(str(exc).split())[:160]})") from None


def _as_matrix(value) -> np.ndarray:
    if isinstance(value, list) and value and isinstance(value[0], dict):  # ZipMap: one {class: p} per record
        keys = sorted(value[0])
        return np.asarray([[row[k] for k in keys] for row in value], np.float64)
    return np.asarray(value, np.float64)


def _load(file: str, weights: str | None, n_classes: int | None, preprocess: Preprocess | None) -> LoadedModel:
    spec = f"onnx:{file}"
    session, version = _session(read_model_file(file, spec), spec)
    first = session.get_inputs()[0]
    if len(session.get_inputs()) != 1:
        names = ", ".join(i.name for i in session.get_inputs())
        raise ConfigError(f"{spec}: the graph takes {len(session.get_inputs())} inputs ({names}); one input tensor "
                          f"(the records' features or images) is supported")
    dtype = _DTYPES.get(first.type)
    if dtype is None:
        raise ConfigError(f"{spec}: input {first.name!r} is {first.type}; a float, double or integer tensor is needed")
    rank = len(first.shape)
    outputs = session.get_outputs()
    ranked = sorted(range(len(outputs)), key=lambda i: ("prob" not in outputs[i].name.lower(), i))
    usable = [i for i in ranked if outputs[i].type.startswith("seq(map") or
              (outputs[i].type in ("tensor(float)", "tensor(double)") and len(outputs[i].shape or ()) == 2)]
    if not usable:
        raise ConfigError(f"{spec}: no output is a (records × classes) score tensor or a class → probability map")
    out_index = usable[0]
    notes = [f"onnxruntime {version}; input {first.name!r} {first.type} of shape "
             f"{list(first.shape)}; output {outputs[out_index].name!r}"]
    if rank == 2:
        table = (preprocess.table if preprocess and preprocess.table else TableSpec())
        width = first.shape[1] if isinstance(first.shape[1], int) else None
        modality = "table"

        def prepare(records: RawRecords):
            x, cols = table_features(records, table)
            if width is not None and x.shape[1] != width:
                raise ConfigError(f"{spec}: the model takes {width} features, the declared columns are {x.shape[1]} "
                                  f"({', '.join(cols[:8])}): list them in [table] columns, in the model's order")
            return x.astype(dtype)
    elif rank == 4:
        t = (preprocess or Preprocess()).image_or_default
        modality = "image"

        def prepare(records: RawRecords):
            return transform_images(records, t).astype(dtype)
    else:
        raise ConfigError(f"{spec}: input of rank {rank} (shape {list(first.shape)}); a table (N, features) or images "
                          f"(N, C, H, W) are supported")
    kind_of_output: list[str] = []

    def run(inputs) -> np.ndarray:
        x = inputs.numpy() if isinstance(inputs, torch.Tensor) else np.asarray(inputs)
        out = []
        for i in range(0, len(x), 1024):
            res = session.run([outputs[out_index].name], {first.name: x[i:i + 1024]})[0]
            out.append(_as_matrix(res))
        p = np.concatenate(out) if out else np.zeros((0, n_classes or 2))
        probs = bool(len(p)) and bool((p >= -1e-6).all() and (p <= 1 + 1e-6).all()
                                      and np.allclose(p.sum(1), 1.0, atol=1e-4))
        if not kind_of_output:
            kind_of_output.append("probabilities" if probs else "logits")
            notes.append(f"the output is read as {kind_of_output[0]}")
        if kind_of_output[0] == "probabilities":
            return np.log(np.maximum(p, PROB_FLOOR))
        return np.asarray(torch.log_softmax(torch.as_tensor(p), -1).numpy(), np.float64)

    m = n_classes
    if m is None:
        raise ConfigError(f"{spec}: the number of classes is needed (num_classes in the preprocess file)")
    return LoadedModel(spec, "onnx", m, modality, prepare, None, None,
                       "an ONNX graph is run, not retrained: LiRA and RMIA need reference scores you supply "
                       "(references: a file of reference models' losses on the same records)", run, preprocess, notes)


KIND = register(ModelKind("onnx", "any classifier exported to ONNX, run by onnxruntime", _load, needs_weights=False,
                          extra="models"))
