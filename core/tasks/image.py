"""Image classification task (paper 000 §4.2): residual CNN vs ReNet-style LSTM.

Data sources:
* ``digits`` (built-in default): scikit-learn's bundled 8×8 handwritten digits, 1,797 images.
* ``cifar10``: CIFAR-10 from a local folder in the official "python version" layout
  (``data_batch_1`` … ``data_batch_5``; ``test_batch`` is not used: like the study we take the
  50,000 training images as the data source).
* ``folder``: the user's images in class folders (``data_dir/<class>/<file>.png|jpg|jpeg``, the torchvision
  ImageFolder layout; :mod:`core.data.image_folder`), resized to ``image_size``; record ids are the paths
  relative to ``data_dir``. Its halves are split class by class (every class lies in both).

Half of the data source goes to the victim, the other half to the attacker (paper 000 §3.2).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, ClassVar, Sequence

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from core.data.image_folder import FolderListing, list_image_folder, read_image_folder, stratified_halves
from core.data.image_sources import cifar10_folder_problem, load_cifar10, load_digits_images
from core.foundations.config import ExperimentConfig, bounded, check_fields
from core.foundations.device import default_device
from core.foundations.errors import ConfigError, DatasetNotFoundError
from core.foundations.memory import (
    FLOAT_BYTES,
    attack_training_bytes,
    cnn_param_count,
    responses_bytes,
    training_state_bytes,
)
from core.models import count_params
from core.models.image import JointReNet, ReNet, ResidualCNN, match_renet, renet_param_count
from core.tasks.base import (
    PRESET_TIMES,
    EpochCallback,
    FractionCallback,
    LogitClassifier,
    OutputTransform,
    RecordView,
    Task,
    TaskData,
    VictimLoader,
    apply_each,
    fixed_halves,
    named_record_indices,
)
from core.training.ensemble import member_generator, train_ensemble_epochs, train_joint_epochs
from core.training.loop import (
    BatchCallback,
    PrivacySettings,
    TrainingRecord,
    autocast_dtype,
    build_optimizer,
    seeded_generator,
    train_epochs,
)


@dataclass(frozen=True)
class ImageOptions:
    """Options of the image task (ranges in brackets, checked by :meth:`validate`).

    Attributes:
        cnn_width: channels of the CNN's first stage (doubles at each further stage). [1, 512];
            every stage's channel count must divide into GroupNorm's min(8, channels) groups,
            so a width of 8 or more must be a multiple of 8 (and below 8, with several
            stages, a power of two).
        cnn_stages: residual stages of the CNN. [1, 6]
        cnn_fc: width of the CNN's hidden fully connected layer. [1, 4096]
        renet_patch: side of the non-overlapping patches the ReNet reads. [1, 32]; it must
            also divide the image's height and width (8 for digits, 32 for CIFAR-10), checked
            when the data is known (:meth:`ImageTask.memory_estimate`).
        renet_layers: ReNet layers (each = a horizontal and a vertical bidirectional LSTM). [1, 8]
        augment: random horizontal flips during training (CIFAR-10 only makes sense).
        image_size: ``dataset=folder`` only: each image's central square is resized to this side. [4, 256];
            ``renet_patch`` must divide it.
        channels: ``dataset=folder`` only: 1 (grey), 3 (colour) or 0 (grey when every image is grey, else
            colour). [0, 3], and not 2.
    """

    cnn_width: int = bounded(16, 1, 512)
    cnn_stages: int = bounded(2, 1, 6)
    cnn_fc: int = bounded(64, 1, 4096)
    renet_patch: int = bounded(2, 1, 32)
    renet_layers: int = bounded(1, 1, 8)
    augment: bool = False
    image_size: int = bounded(32, 4, 256)
    channels: int = bounded(0, 0, 3)

    #: fields added after cached runs existed: left out of the hashes at their default, so that every
    #: config made before them keeps its hash and its cache
    OMIT_AT_DEFAULT: ClassVar[tuple[str, ...]] = ("image_size", "channels")

    def validate(self) -> None:
        """Ranges of every field, then GroupNorm's divisibility at every CNN stage (a width of
        12 would otherwise fail inside PyTorch when the model is built)."""
        check_fields(self)
        if self.channels == 2:
            raise ConfigError("channels must be 0 (as the images are), 1 (grey) or 3 (colour), got 2")
        for stage in range(self.cnn_stages):
            channels = self.cnn_width * 2**stage
            if channels % min(8, channels):
                raise ConfigError(
                    f"cnn_width={self.cnn_width} gives {channels} channels at stage {stage + 1}, which GroupNorm "
                    f"cannot split into {min(8, channels)} groups: use a multiple of 8 (or 1, 2, 4)"
                )

    def check_image(self, height: int, width: int) -> None:
        """Raise :class:`ConfigError` unless ``renet_patch`` tiles a ``height``×``width`` image."""
        if height % self.renet_patch or width % self.renet_patch:
            sides = sorted({d for d in range(1, min(height, width) + 1) if height % d == 0 and width % d == 0})
            raise ConfigError(
                f"renet_patch={self.renet_patch} does not tile {height}×{width} images: "
                f"choose one of {', '.join(map(str, sides))}"
            )


@dataclass
class ImageRecords:
    """All images of the data source as one tensor (N, C, H, W), standardised, and labels (N,)."""

    images: torch.Tensor
    labels: torch.Tensor
    n_classes: int
    #: each record's id (``folder``: its path relative to data_dir); None for the built-in sources
    record_ids: tuple[str, ...] | None = None
    #: the classes' names (``folder``: the class folders); None: classes are numbered
    class_names: tuple[str, ...] | None = None


#: the label-only attack's queries, (horizontal flip, shift down, shift right) in pixels: the image,
#: its flip, four one-pixel shifts, the flip with each shift (Choquette-Choo et al. 2021, §4)
LABEL_AUGMENTATIONS = ((False, 0, 0), (True, 0, 0), (False, 1, 0), (False, -1, 0), (False, 0, 1), (False, 0, -1),
                       (True, 1, 0), (True, -1, 0), (True, 0, 1), (True, 0, -1))


def augment_image(x: torch.Tensor, flip: bool, dy: int, dx: int) -> torch.Tensor:
    """(B, C, H, W) images flipped left-right and shifted by (dy, dx) pixels; the uncovered border
    is 0 (the standardised mean), not wrapped around."""
    if flip:
        x = x.flip(3)
    if dy or dx:
        h, w = x.shape[2], x.shape[3]
        padded = F.pad(x, (abs(dx), abs(dx), abs(dy), abs(dy)))
        top, left = abs(dy) - dy, abs(dx) - dx
        x = padded[:, :, top : top + h, left : left + w]
    return x


def _standardised(x: np.ndarray) -> torch.Tensor:
    """(N, C, H, W) images standardised per channel over the whole data source."""
    mean = x.mean(axis=(0, 2, 3), keepdims=True)
    std = x.std(axis=(0, 2, 3), keepdims=True) + 1e-6
    return torch.from_numpy((x - mean) / std)


def _check_queries(n: int, what: str) -> None:
    if not 1 <= n <= len(LABEL_AUGMENTATIONS):
        raise ConfigError(f"{what}: n must lie in 1..{len(LABEL_AUGMENTATIONS)}, got {n}")


def _phi(logp: torch.Tensor, at: torch.Tensor) -> torch.Tensor:
    """log c − log(1 − c) of the class ``at`` (indices along the last axis, trailing 1) from log-probabilities:
    log(1 − c) is the log-sum-exp of the other classes, exact where c rounds to 1."""
    own = logp.gather(-1, at)[..., 0]
    return own - torch.logsumexp(logp.scatter(-1, at, float("-inf")), -1)


class ImageTask(LogitClassifier, Task):
    name = "image"
    utility_metric = "accuracy"
    options_cls = ImageOptions
    label = "Image classification"
    record_names = ("image", "images")
    width_knob = "cnn_width"
    privacy_unit = "one image"
    sensitivity_samples = 10
    datasets = ("digits", "cifar10", "folder")
    about = ("A record is an image. Each model answers with its softmax vector; the reference is the one-hot "
             "label. The shadow-model attack is an MLP on (confidence vector, label), as in Shokri et al.; LiRA and "
             "RMIA compare the victim's confidence on each image with the shadows' on the same image. The study "
             "(paper 000, CIFAR-10, ResNet101 vs ReNet) found about equal validation accuracy and yet a higher "
             "attack accuracy against the RNN, although the CNN had the larger generalisation gap. The default "
             "digits run is far smaller (8×8 images, 200 members), so the study's trend need not reproduce at "
             "this size: whether it does is computed from the run shown (the studies' finding beside this run's "
             "numbers, under the results). The cifar_cpu preset runs real CIFAR-10 sized for 2 CPU cores "
             "(docs/results.md), the paper preset the study's layout.")
    real_datasets = ("cifar10", "folder")
    record_id_meaning = ("folder: the image's path relative to data_dir (cat/0001.png); digits and cifar10: the "
                         "image's 0-based index in the data source (scikit-learn's load_digits order; data_batch_1 … "
                         "data_batch_5 in file order)")
    presets = {
        # the study trains ResNet with lr 1e-3 and ReNet with lr 1e-2 (paper 000 §4.2)
        "quick": dict(dataset="digits", n_train=200, n_eval=200, epochs=40, batch_size=32, lr=1e-3,
                      n_shadows=4, attack_epochs=(2, 5, 10, 20, 30), attack_train_epochs=80, rnn=dict(lr=1e-2)),
        # real CIFAR-10 sized for 2 CPU cores: small CNN (33k parameters) vs ReNet on 4×4 patches (35k), both
        # at lr 3e-3: the ReNet at the study's 1e-2 peaked early, then memorised (docs/results.md, "Image: cifar_cpu")
        "cifar_cpu": dict(dataset="cifar10", n_train=4000, n_eval=1000, epochs=24, batch_size=64, lr=3e-3,
                          n_shadows=2, attack_epochs=(6, 12, 18), attack_train_epochs=40, cnn_width=8, cnn_stages=3,
                          cnn_fc=64, renet_patch=4, renet_layers=1),
        # the user's class folders at a quick size, with cifar_cpu's matched pair
        "folder_quick": dict(dataset="folder", image_size=32, n_train=500, n_eval=200, epochs=20, batch_size=64,
                             lr=3e-3, n_shadows=2, attack_epochs=(10,), attack_train_epochs=40, cnn_width=8,
                             cnn_stages=3, cnn_fc=64, renet_patch=4, renet_layers=1),
        # the study's layout (25,000 images per side, 5 shadows), models scaled to CPU/GPU budgets
        "paper": dict(dataset="cifar10", n_train=10000, n_eval=2500, epochs=50, batch_size=128, lr=1e-3,
                      n_shadows=5, attack_epochs=(5, 10, 20, 30, 40), cnn_width=32, cnn_stages=3, cnn_fc=256,
                      renet_patch=2, renet_layers=2, attack_train_epochs=40, rnn=dict(lr=1e-2)),
    }

    preset_notes = {
        "quick": "built-in 8×8 digits, no data folder; 200 members, 4 shadows, 40 epochs: the default, a first look "
                 f"that runs on a laptop. Measured times: {PRESET_TIMES}.",
        "cifar_cpu": "CIFAR-10 in data_dir (the 'python version' folder: data_batch_1 … data_batch_5); 4,000 members, "
                     "2 shadows, 24 epochs, a CNN and a ReNet of about 34k parameters each: real images sized for 2 CPU "
                     f"cores. Measured times: {PRESET_TIMES}.",
        "folder_quick": "your images in class folders in data_dir (DIR/<class>/<file>.png|jpg|jpeg; "
                        "docs/your_data.md), resized to image_size 32; 500 members, 2 shadows, 20 epochs. Larger "
                        "images need a larger renet_patch for matched models (image_size 64: renet_patch 8). "
                        f"Measured times: {PRESET_TIMES}.",
        "paper": "CIFAR-10 in data_dir; the study's layout (10,000 members, 5 shadows, 50 epochs): a GPU recommended. "
                 f"Measured times: {PRESET_TIMES}.",
    }

    def __init__(self) -> None:
        self._loaded: dict[tuple[str, str], TaskData] = {}

    # ------------------------------------------------------------------ data
    def data_problem(self, cfg: ExperimentConfig) -> str | None:
        if cfg.dataset != "cifar10":
            return None
        if not cfg.data_dir:
            return "dataset cifar10 needs data_dir: the folder holding data_batch_1 … data_batch_5"
        return cifar10_folder_problem(cfg.data_dir)

    def load(self, cfg: ExperimentConfig) -> TaskData:
        key: tuple = (cfg.dataset, cfg.data_dir)
        if cfg.dataset == "folder":
            listing = self._list_folder(cfg)
            # the same folder at another size or channel count is other data; so is another folder of that name
            # (another data root) or one whose files changed since it was read: the key holds the resolved
            # folder and what its listing found (names and total bytes), not the name typed
            key += (cfg.options.image_size, cfg.options.channels, str(listing.folder), listing.paths,
                    listing.total_bytes)
            if key not in self._loaded:
                self._loaded[key] = self._load_folder(cfg, listing)
            return self._loaded[key]
        if key in self._loaded:
            return self._loaded[key]
        if cfg.dataset == "digits":
            x, y = load_digits_images()
            description = f"digits: {len(x):,} 8×8 grey images, 10 classes (scikit-learn)"
        elif cfg.dataset == "cifar10":
            if not cfg.data_dir:
                raise DatasetNotFoundError("dataset cifar10 needs data_dir: the folder holding data_batch_1 … data_batch_5")
            raw, y = load_cifar10(cfg.data_dir)
            x = raw.astype(np.float32) / 255.0
            description = f"cifar10: {len(x):,} 32×32 colour images, 10 classes ({cfg.data_dir})"
        else:
            raise ConfigError(f"unknown image dataset {cfg.dataset!r}; choose digits, cifar10 or folder")
        images = _standardised(x)
        records = ImageRecords(images, torch.from_numpy(y), int(y.max()) + 1)
        data = TaskData(records, *fixed_halves(len(x)), description,
                        {"n_records": int(len(x)), "image_shape": list(images.shape[1:]), "n_classes": records.n_classes})
        self._loaded[key] = data
        return data

    @staticmethod
    def _list_folder(cfg: ExperimentConfig) -> FolderListing:
        """The class folder's listing (nothing decoded), after the options are checked."""
        if not cfg.data_dir:
            raise DatasetNotFoundError("dataset folder needs data_dir: a folder holding one sub-folder of PNG or JPEG "
                                       "images per class (DIR/<class>/<file>.png)")
        o: ImageOptions = cfg.options
        o.check_image(o.image_size, o.image_size)  # before a single image is decoded
        return list_image_folder(cfg.data_dir)

    def _load_folder(self, cfg: ExperimentConfig, listing: FolderListing) -> TaskData:
        """The user's class folders (:mod:`core.data.image_folder`), standardised per channel like the
        built-in sources, split into halves class by class."""
        o: ImageOptions = cfg.options
        x, facts = read_image_folder(listing, o.image_size, o.channels)
        records = ImageRecords(_standardised(x), torch.from_numpy(listing.labels),
                               len(listing.classes), listing.paths, listing.classes)
        victim, attacker = stratified_halves(listing.labels)
        kind = "grey" if facts["channels"] == 1 else "colour"
        converted = f", {facts['converted']:,} converted to {kind}" if facts["converted"] else ""
        description = (f"folder: {len(x):,} images, {len(listing.classes)} classes, resized to "
                       f"{o.image_size}×{o.image_size} {kind}{converted} ({listing.folder})")
        info = {"n_records": len(x), "image_shape": list(records.images.shape[1:]), "n_classes": records.n_classes,
                "classes": dict(list(listing.class_counts().items())[:100]), "total_bytes": listing.total_bytes,
                "skipped_entries": listing.skipped, **facts}
        return TaskData(records, victim, attacker, description, info)

    def _check_matched(self, cfg: ExperimentConfig, data: TaskData) -> None:
        """``folder`` only (its sizes are the user's): refuse, before training, a ReNet that cannot come
        within 5 % of the CNN's parameter count at this image size (its dense layer grows with the
        number of patches: a larger ``renet_patch`` shrinks it)."""
        rec: ImageRecords = data.records
        c, h, w = (int(v) for v in rec.images.shape[1:])
        o: ImageOptions = cfg.options
        o.check_image(h, w)
        cnn = cnn_param_count(c, rec.n_classes, o.cnn_width, o.cnn_stages, o.cnn_fc)
        hidden, fc = match_renet(cnn, c, h, w, rec.n_classes, o.renet_patch, o.renet_layers)
        renet = renet_param_count(c, h, w, rec.n_classes, hidden, fc, o.renet_patch, o.renet_layers)
        if abs(renet - cnn) > 0.05 * cnn:
            raise ConfigError(
                f"the ReNet on {h}×{w} images with renet_patch={o.renet_patch} has at best {renet:,} parameters against "
                f"the CNN's {cnn:,} (more than 5 % apart): raise renet_patch (fewer patches), or cnn_width / cnn_fc"
            )

    # ------------------------------------------------------------------ models
    def build_model(self, cfg: ExperimentConfig, data: TaskData) -> nn.Module:
        o: ImageOptions = cfg.options
        rec: ImageRecords = data.records
        c, h, w = rec.images.shape[1:]
        if cfg.dataset == "folder":
            self._check_matched(cfg, data)
        cnn = ResidualCNN(c, rec.n_classes, o.cnn_width, o.cnn_stages, o.cnn_fc)  # GroupNorm: DP-compatible
        if cfg.arch == "ffnn":
            return cnn
        hidden, fc = match_renet(count_params(cnn), c, h, w, rec.n_classes, o.renet_patch, o.renet_layers)
        return ReNet(c, h, w, rec.n_classes, hidden, fc, o.renet_patch, o.renet_layers, dp=cfg.private)

    def memory_estimate(self, cfg: ExperimentConfig, data: TaskData) -> int:
        """Peak bytes of one experiment, computed from the config alone (nothing is built, so a
        huge config is refused before it allocates): the training copy of the images, weights
        with gradients and Adam state, activations of one batch, the attack classifier's
        training and the Responses every model keeps.

        ReNet activations dominate: every LSTM keeps (4 gates + state) × hidden per cell of the
        grid for backpropagation; the CNN keeps a few feature maps per block.

        Raises:
            ConfigError: ``renet_patch`` does not tile the images (known only once loaded).
        """
        if cfg.dataset == "folder":
            self._check_matched(cfg, data)
        rec: ImageRecords = data.records
        c, h, w = (int(v) for v in rec.images.shape[1:])
        o: ImageOptions = cfg.options
        cnn_params = cnn_param_count(c, rec.n_classes, o.cnn_width, o.cnn_stages, o.cnn_fc)
        images = cfg.n_train * c * h * w * FLOAT_BYTES
        if cfg.arch == "rnn":
            o.check_image(h, w)
            hidden, fc = match_renet(cnn_params, c, h, w, rec.n_classes, o.renet_patch, o.renet_layers)
            params = renet_param_count(c, h, w, rec.n_classes, hidden, fc, o.renet_patch, o.renet_layers)
            cells = (h // o.renet_patch) * (w // o.renet_patch)
            act = cells * hidden * 2 * 6 * 2 * o.renet_layers
        else:
            params = cnn_params
            act = 3 * h * w * o.cnn_width + sum(
                8 * -(-h // 2**k) * -(-w // 2**k) * o.cnn_width * 2**k for k in range(o.cnn_stages)
            )
        train = training_state_bytes(params) + images + cfg.batch_size * act * FLOAT_BYTES * 2
        attack = attack_training_bytes(cfg, n_features=2 * rec.n_classes + 2, max_steps=1)
        kept = responses_bytes(cfg, steps_per_record=1, floats_per_step=2 * rec.n_classes + 6)
        return int(max(train, attack) + kept)

    # ------------------------------------------------------------------ training
    def train(self, cfg: ExperimentConfig, model: nn.Module, data: TaskData, train_index: np.ndarray,
              on_epoch: EpochCallback, on_progress: FractionCallback,
              on_batch: BatchCallback | None = None) -> TrainingRecord:
        """Cross-entropy through the shared loop (:func:`core.training.loop.train_epochs`): Adam with L2
        on weight matrices, seeded batches, DP-SGD when ``cfg.dp`` is on (a sample = one image)."""
        device = default_device()
        rec: ImageRecords = data.records
        x = rec.images[train_index].to(device)
        y = rec.labels[train_index].to(device)
        g = seeded_generator()

        def batch_loss(index: torch.Tensor) -> torch.Tensor:
            idx = index.to(device)
            xb = x[idx]
            if cfg.options.augment:
                flip = torch.rand(len(idx), generator=g).to(device) < 0.5
                xb = torch.where(flip[:, None, None, None], xb.flip(3), xb)
            return F.cross_entropy(model(xb), y[idx])

        return train_epochs(model, len(train_index), batch_loss, epochs=cfg.epochs, batch_size=cfg.batch_size,
                            optimizer=build_optimizer(model, cfg.lr, cfg.weight_decay), generator=g,
                            privacy=PrivacySettings.from_config(cfg), autocast=autocast_dtype(cfg),
                            unit="one image (a training record)",
                            on_batch=on_batch, on_epoch=on_epoch, on_progress=on_progress)

    def supports_ensemble(self, cfg: ExperimentConfig) -> bool:
        """Both models in float32 without DP-SGD or augmentation: the CNN through ``vmap``, the
        ReNet (whose ``nn.LSTM`` has no ``vmap`` rule) as one block-structured joint ReNet."""
        return not cfg.private and not cfg.options.augment and cfg.precision == "float32"

    def train_ensemble(self, cfg: ExperimentConfig, models: list[nn.Module], data: TaskData,
                       train_indices: list[np.ndarray], seeds: list[int], on_epoch) -> float:
        """Cross-entropy, Adam with L2 on weight matrices, each member's own data order: the
        sequential :meth:`train`'s recipe for all members at once (:mod:`core.training.ensemble`)."""

        if len({len(i) for i in train_indices}) != 1:
            raise ValueError("ensemble members must have training sets of one size")
        device = default_device()
        rec: ImageRecords = data.records
        x = torch.stack([rec.images[torch.as_tensor(i)] for i in train_indices]).to(device)  # (M, n, C, H, W)
        y = torch.stack([rec.labels[torch.as_tensor(i)] for i in train_indices]).to(device)
        rows = torch.arange(len(models), device=device)[:, None]

        def member_batches(positions: list[torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
            pos = torch.stack(positions).to(device)  # (M, B)
            return x[rows, pos], y[rows, pos]

        recipe = dict(epochs=cfg.epochs, batch_size=cfg.batch_size, lr=cfg.lr, weight_decay=cfg.weight_decay,
                      generators=[member_generator(s) for s in seeds], on_epoch=on_epoch)
        if isinstance(models[0], ReNet):  # nn.LSTM: no vmap rule; one block-structured joint ReNet instead
            renets = [m for m in models if isinstance(m, ReNet)]
            if len(renets) != len(models):
                raise ValueError("an ensemble whose first member is a ReNet must be all ReNets")
            joint = JointReNet(renets).to(device)

            def joint_loss(net: nn.Module, inputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
                m, b = inputs.shape[:2]  # the members' images side by side along channels
                logits = net(inputs.transpose(0, 1).reshape(b, m * inputs.shape[2], *inputs.shape[3:]))  # (B, M, K)
                loss = sum(F.cross_entropy(logits[:, e], targets[e]) for e in range(m))
                assert isinstance(loss, torch.Tensor)  # m ≥ 1 members
                return loss

            return train_joint_epochs(joint, joint.places, models, len(train_indices[0]), member_batches, joint_loss,
                                      **recipe)
        return train_ensemble_epochs(models, len(train_indices[0]), member_batches, F.cross_entropy, **recipe)

    # ------------------------------------------------------------------ audit canaries
    canary_design = ("mislabeled images: unused images of the victim's half, each given a seeded wrong label "
                     "(uniform over the other classes); the model fits one only by memorising it, and the auditor's "
                     "score is minus its loss on that wrong label")

    def canary_data(self, cfg: ExperimentConfig, data: TaskData, index: np.ndarray,
                    rng: np.random.Generator) -> TaskData:
        """Mislabeled images (:meth:`LogitClassifier.mislabeled`), the images kept."""
        rec: ImageRecords = data.records
        canaries = ImageRecords(rec.images, self.mislabeled(data, index, rng), rec.n_classes)
        return TaskData(canaries, data.victim_pool, data.attacker_pool, data.description, data.info)

    # ------------------------------------------------------------------ one record, for the app
    def record_ids(self, cfg: ExperimentConfig, data: TaskData, index: np.ndarray) -> list[str]:
        """``folder``: each image's path relative to data_dir; the built-in sources: the index."""
        names = getattr(data.records, "record_ids", None)
        return [names[int(i)] for i in index] if names else super().record_ids(cfg, data, index)

    def record_indices(self, cfg: ExperimentConfig, data: TaskData, ids: Sequence[str]) -> np.ndarray:
        """``folder``: a member list names images by their path relative to data_dir (as the reader lists them)."""
        names = getattr(data.records, "record_ids", None)
        if not names:
            return super().record_indices(cfg, data, ids)
        return named_record_indices(names, ids, data.description, self.record_id_meaning)

    def describe_record(self, cfg: ExperimentConfig, data: TaskData, index: int, victim: VictimLoader | None = None,
                        role: str = "member") -> RecordView:
        """The image (min–max scaled to [0, 1] for display: the stored image is standardised) and its
        label; the victim's answer is not shown (its scores are beside the record on the page)."""
        rec: ImageRecords = data.records
        img = rec.images[int(index)].numpy().astype(np.float32)
        img = (img - img.min()) / max(float(img.max() - img.min()), 1e-9)
        img = np.transpose(img, (1, 2, 0)) if img.shape[0] == 3 else img[0]
        label = int(rec.labels[int(index)])
        ids, classes = rec.record_ids, rec.class_names  # a folder source names both, the built-in ones neither
        name = f"{ids[int(index)]}, class {classes[label]!r}" if ids and classes is not None else f"label {label}"
        return RecordView("image", f"{name} ({role})", image=img)

    def slice_labels(self, cfg: ExperimentConfig, data: TaskData, records: np.ndarray,
                     summary: dict[str, Any]) -> dict[str, list[str]]:
        """One slice per class."""
        return {"class": [f"class {int(data.records.labels[i])}" for i in records]}

    # ------------------------------------------------------------------ queries
    @torch.no_grad()
    def _logits(self, model: nn.Module, data: TaskData, index: np.ndarray) -> torch.Tensor:
        device = next(model.parameters()).device
        rec: ImageRecords = data.records
        out = [model(rec.images[index[i : i + 1024]].to(device)).cpu() for i in range(0, len(index), 1024)]
        return torch.cat(out) if out else torch.zeros(0, rec.n_classes)

    def label_queries(self, cfg: ExperimentConfig, model: nn.Module, data: TaskData, index: np.ndarray, n: int,
                      output_transform: OutputTransform | None = None) -> np.ndarray:
        """Correctness of the argmax under the first ``n`` of :data:`LABEL_AUGMENTATIONS` (the
        identity, a horizontal flip, one-pixel shifts with zero fill, the flip with each shift):
        Choquette-Choo et al.'s data-augmentation queries. ``output_transform`` (a defense's noise)
        acts on the log-softmax before the argmax."""
        return self.label_queries_under(cfg, model, data, index, n, [output_transform])[0]

    def label_queries_under(self, cfg: ExperimentConfig, model: nn.Module, data: TaskData, index: np.ndarray, n: int,
                            output_transforms: Sequence[OutputTransform | None]) -> np.ndarray:
        """:meth:`label_queries` under each transform (a defense's draws), the model run once per augmented
        batch for all of them (not once per draw); each transform sees its batches in
        :meth:`label_queries`' order, so each draw's noise, and its answers, are the ones it gave alone."""
        def answer(logits: torch.Tensor, y: torch.Tensor) -> np.ndarray:
            scores = logits.float().cpu()
            given = [t for t in output_transforms if t is not None]
            if len(given) == len(output_transforms):  # every draw's noise at once: (T, B, m)
                noisy = apply_each(given, torch.log_softmax(scores.double(), 1))
                return (noisy.argmax(-1) == y).numpy()
            rows, logp = [], None
            for transform in output_transforms:
                noisy = scores
                if transform is not None:
                    logp = torch.log_softmax(scores.double(), 1) if logp is None else logp
                    noisy = transform(logp)
                rows.append((noisy.argmax(1) == y).numpy())
            return np.stack(rows)

        return self._augmented(model, data, index, n, "label queries", len(output_transforms), bool, answer)

    def augmented_confidences(self, cfg: ExperimentConfig, model: nn.Module, data: TaskData, index: np.ndarray,
                              n: int, output_transform: OutputTransform | None = None) -> np.ndarray:
        """LiRA's φ = log c − log(1 − c) of the label (:func:`_phi`, float64) under the first ``n`` of
        :data:`LABEL_AUGMENTATIONS` (the label-only attack's queries)."""
        return self.augmented_confidences_under(cfg, model, data, index, n, [output_transform])[0]

    def augmented_confidences_under(self, cfg: ExperimentConfig, model: nn.Module, data: TaskData, index: np.ndarray,
                                    n: int, output_transforms: Sequence[OutputTransform | None]) -> np.ndarray:
        """:meth:`augmented_confidences` under each transform, the model run once for all of them (as
        :meth:`label_queries_under`)."""
        def answer(logits: torch.Tensor, labels: torch.Tensor) -> np.ndarray:
            y = labels.long()
            clean = torch.log_softmax(logits.double().cpu(), 1)
            given = [t for t in output_transforms if t is not None]
            if len(given) == len(output_transforms):  # every draw's noise at once: (T, B, m)
                logp = torch.log_softmax(apply_each(given, clean).double(), -1)
                return _phi(logp, y[None, :, None].expand(len(output_transforms), -1, 1)).numpy()
            rows = []
            for transform in output_transforms:
                logp = clean if transform is None else torch.log_softmax(transform(clean).double(), 1)
                rows.append(_phi(logp, y[:, None]).numpy())
            return np.stack(rows)

        return self._augmented(model, data, index, n, "augmented queries", len(output_transforms), np.float64, answer)

    augmented_in_one_pass = True

    def augmented_answers(self, cfg: ExperimentConfig, model: nn.Module, data: TaskData, index: np.ndarray,
                          n: int) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`label_queries` and :meth:`augmented_confidences` from one forward pass per augmented
        query: the argmax of the logits and φ of their float64 log-softmax, as the two compute them."""
        def answer(logits: torch.Tensor, y: torch.Tensor) -> np.ndarray:
            logits = logits.cpu()
            correct = (logits.float().argmax(1) == y).numpy()
            return np.stack([correct, _phi(torch.log_softmax(logits.double(), 1), y.long()[:, None]).numpy()])

        both = self._augmented(model, data, index, n, "augmented queries", 2, np.float64, answer)
        return both[0].astype(bool), both[1]

    @staticmethod
    def _augmented(model: nn.Module, data: TaskData, index: np.ndarray, n: int, what: str, rows: int, dtype: Any,
                   answer: Callable[[torch.Tensor, torch.Tensor], np.ndarray]) -> np.ndarray:
        """(rows, N, n): ``answer(logits, labels)`` → (rows, B) of each batch of 1,024 images under each of the
        first ``n`` of :data:`LABEL_AUGMENTATIONS`, the model run once per augmented batch."""
        _check_queries(n, what)
        index = np.asarray(index, np.int64)
        rec: ImageRecords = data.records
        device = next(model.parameters()).device
        out = np.zeros((rows, len(index), n), dtype)
        with torch.no_grad():
            for start in range(0, len(index), 1024):
                x = rec.images[index[start : start + 1024]]
                y = rec.labels[index[start : start + 1024]]
                for j, (flip, dy, dx) in enumerate(LABEL_AUGMENTATIONS[:n]):
                    out[:, start : start + len(x), j] = answer(model(augment_image(x, flip, dy, dx).to(device)), y)
        return out

    def attack_features(self, cfg: ExperimentConfig, data: TaskData, index: np.ndarray) -> np.ndarray:
        """The image's standardised pixels and its one-hot label (no model involved)."""
        rec: ImageRecords = data.records
        index = np.asarray(index, np.int64)
        pixels = rec.images[index].reshape(len(index), -1).numpy()
        return np.concatenate([pixels, np.eye(rec.n_classes, dtype=np.float32)[rec.labels[index].numpy()]], 1)
