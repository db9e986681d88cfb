"""``hf:DIR`` — a Hugging Face model folder written by ``save_pretrained``: ``config.json`` + ``model.safetensors``,
an image classifier (``AutoModelForImageClassification``) or a text classifier
(``AutoModelForSequenceClassification``), read offline (``local_files_only``), from safetensors only
(``use_safetensors``), never with the folder's own code (``trust_remote_code`` off). Its inputs come from the
folder's own image processor (``preprocessor_config.json``) or tokenizer (``tokenizer.json`` …) when it holds one,
else from the declared preprocessing. Rebuilt untrained from its config for references and shadows."""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import torch
from PIL import Image

from core.foundations.errors import ConfigError
from core.models.kinds.base import LoadedModel, ModelKind, register
from core.models.kinds.preprocess import Preprocess, RawRecords, transform_images
from core.models.kinds.vision_import import EXTRA, import_torchvision, vision_notes

TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "vocab.txt")


def _transformers():
    try:
        import_torchvision()  # transformers imports torchvision where it is installed
    except ConfigError:
        pass  # not installed: transformers runs without it
    try:
        import transformers  # noqa: PLC0415  (optional heavy)
    except ImportError:
        raise ConfigError(f"transformers is not installed: {EXTRA}") from None
    return transformers


def _load(folder: str, weights: str | None, n_classes: int | None, preprocess: Preprocess | None) -> LoadedModel:
    path = Path(os.path.expanduser(folder))
    if not path.is_dir() or path.is_symlink():
        raise ConfigError(f"hf:{folder}: not a folder (a save_pretrained folder with config.json and model.safetensors)")
    names = {p.name for p in path.iterdir()}
    if "config.json" not in names:
        raise ConfigError(f"hf:{folder}: no config.json (write the folder with model.save_pretrained(DIR))")
    if "model.safetensors" not in names and "model.safetensors.index.json" not in names:
        pickles = sorted(n for n in names if n.endswith((".bin", ".pt", ".pth", ".ckpt")))
        raise ConfigError(f"hf:{folder}: no model.safetensors" + (f" ({pickles[0]} is a pickle and is never opened)"
                          if pickles else "") + ": save with model.save_pretrained(DIR, safe_serialization=True)")
    tf = _transformers()
    try:
        config = tf.AutoConfig.from_pretrained(str(path), local_files_only=True, trust_remote_code=False)
    except Exception as exc:  # transformers' own error types for a malformed config
        raise ConfigError(f"hf:{folder}: config.json cannot be read ({' '.join(str(exc).split())[:120]})") from None
    arch = " ".join(config.architectures or [])
    text = "SequenceClassification" in arch or (
        "ImageClassification" not in arch and any(n in names for n in TOKENIZER_FILES))
    auto = tf.AutoModelForSequenceClassification if text else tf.AutoModelForImageClassification
    try:
        module = auto.from_pretrained(str(path), local_files_only=True, use_safetensors=True, trust_remote_code=False)
    except Exception as exc:  # transformers' own error types
        raise ConfigError(f"hf:{folder}: the model cannot be loaded as an {'text' if text else 'image'} classifier "
                          f"({' '.join(str(exc).split())[:160]})") from None
    module.float()
    m = int(config.num_labels)
    if n_classes is not None and n_classes != m:
        raise ConfigError(f"hf:{folder}: the model has {m} labels, the data {n_classes} classes")
    notes = list(vision_notes())
    if text:
        if not any(n in names for n in TOKENIZER_FILES):
            raise ConfigError(f"hf:{folder}: a text classifier needs its tokenizer in the folder "
                              f"(tokenizer.save_pretrained(DIR))")
        tokenizer = tf.AutoTokenizer.from_pretrained(str(path), local_files_only=True, trust_remote_code=False)
        max_length = (preprocess.text.max_length if preprocess and preprocess.text else 128)
        notes.append(f"inputs: the folder's tokenizer ({type(tokenizer).__name__}, max_length {max_length})")

        def prepare(records: RawRecords):
            if records.texts is None:
                raise ConfigError(f"hf:{folder} is a text classifier: give a CSV with a [text] section in --preprocess")
            enc = tokenizer(list(records.texts), padding="max_length", truncation=True, max_length=max_length,
                            return_tensors="pt")
            return {k: v for k, v in enc.items() if k in ("input_ids", "attention_mask", "token_type_ids")}
        modality = "text"
    elif "preprocessor_config.json" in names:
        processor = tf.AutoImageProcessor.from_pretrained(str(path), local_files_only=True, trust_remote_code=False)
        notes.append(f"inputs: the folder's image processor ({type(processor).__name__}); the declared image "
                     f"transform is not used")

        def prepare(records: RawRecords):
            if records.images is None:
                raise ConfigError(f"hf:{folder} is an image classifier: give an image folder")
            images = [Image.fromarray(p).convert("RGB") for p in records.images]
            return torch.as_tensor(np.asarray(processor(images=images, return_tensors="np")["pixel_values"],
                                              np.float32))
        modality = "image"
    else:
        t = (preprocess or Preprocess()).image_or_default
        notes.append("inputs: the declared image transform (the folder holds no preprocessor_config.json)")

        def prepare(records: RawRecords):
            return torch.from_numpy(transform_images(records, t))
        modality = "image"

    def fresh():
        return auto.from_config(config).float()

    return LoadedModel(f"hf:{folder}", "hf", m, modality, prepare, module, fresh, preprocess=preprocess, notes=notes)


KIND = register(ModelKind("hf", "a Hugging Face save_pretrained folder (image or text classification)", _load,
                          needs_weights=False, extra="models"))
