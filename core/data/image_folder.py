"""Images in class folders (the torchvision ``ImageFolder`` layout), read with Pillow, no torchvision.

``DIR/<class>/<file>.png|jpg|jpeg``: every sub-folder of ``DIR`` is a class (classes sorted by name,
label = position), every PNG or JPEG under it (sub-folders included) an image of that class. Files with
other suffixes, hidden entries (``.DS_Store``, ``.ipynb_checkpoints``) and files lying directly in ``DIR``
are skipped and counted. Images may have any size and mode: each is cropped to its central square,
resized to ``image_size`` × ``image_size`` (bilinear, Pillow's antialiased resize) and converted to one
channel count for the whole folder: grey (1) when every image is grey, else colour (3; grey images
repeated on the three channels, alpha dropped), or the count asked for with ``channels``.

Nothing read is trusted (the folder may come from the app's text box):

* ``DIR`` must lie under the data root (:func:`core.foundations.paths.resolve_data_dir`, CLI included);
* symbolic links inside it are refused, not followed (a link could lead out of the root), and files are
  opened one path component at a time with ``O_NOFOLLOW`` (``O_NONBLOCK`` for the file) and checked to be
  regular files after opening, so a link swapped in after the listing is not followed either;
* hard caps, checked before anything big is read or allocated: :data:`MAX_FILES` images,
  :data:`MAX_CLASSES` classes, :data:`MAX_FILE_BYTES` per file, :data:`MAX_TOTAL_BYTES` in all,
  :data:`MAX_IMAGE_PIXELS` pixels per image (read from the header before decoding: the
  decompression-bomb guard, below Pillow's own ``Image.MAX_IMAGE_PIXELS``), and
  :data:`MAX_DECODED_BYTES` for the resized images as float32;
* an unreadable, truncated or non-PNG/JPEG image, one class only, a class with fewer than
  :data:`MIN_PER_CLASS` images (one for each of the victim's and the attacker's halves), or no image
  at all is one :class:`DatasetNotFoundError` line naming the file or class.

A record's id is its path relative to ``DIR`` (POSIX separators), e.g. ``cat/001.png``.
"""
from __future__ import annotations

import io
import os
import warnings
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import numpy as np
from PIL import Image

from core.foundations.errors import DatasetNotFoundError
from core.foundations.fileio import read_capped
from core.foundations.paths import resolve_data_dir

#: image file suffixes read (case-insensitive)
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg")
#: Pillow formats accepted once a file is opened (a .png that is really a GIF or TIFF is refused)
IMAGE_FORMATS = ("PNG", "JPEG", "MPO")  # MPO: multi-picture JPEG from cameras; its first frame is a JPEG
#: most images in one folder (CIFAR-10's training set: 50,000)
MAX_FILES = 200_000
#: most classes (sub-folders)
MAX_CLASSES = 1_000
#: most bytes of one image file
MAX_FILE_BYTES = 64 * 2**20
#: most bytes of all image files together
MAX_TOTAL_BYTES = 8 * 2**30
#: most pixels (width × height) of one image, read from its header before it is decoded: a PNG of
#: a few KiB may declare 50,000 × 50,000 pixels (a decompression bomb). Below Pillow's own guard
#: (``Image.MAX_IMAGE_PIXELS``, 89 M, which only warns up to twice that)
MAX_IMAGE_PIXELS = 40_000_000
#: most bytes of the resized images as float32 (N × channels × size × size × 4), checked before decoding
MAX_DECODED_BYTES = 4 * 2**30
#: fewest images per class: one for the victim's half and one for the attacker's
MIN_PER_CLASS = 2
#: deepest sub-folder below a class folder that is read
MAX_DEPTH = 16
#: Pillow modes read as grey (one channel)
GREY_MODES = ("1", "L", "LA", "La", "I", "I;16", "I;16B", "I;16L", "I;16N", "F")


@dataclass(frozen=True)
class FolderListing:
    """What a class folder holds, found without decoding an image.

    Attributes:
        folder: the resolved folder (under the data root).
        classes: class names (sub-folder names), sorted; label = position.
        paths: each image's path relative to ``folder`` (POSIX), sorted within its class: the record ids.
        labels: each image's class (N,) int64.
        total_bytes: the image files' bytes together.
        skipped: entries skipped (other suffixes, hidden entries, files lying directly in ``folder``).
    """

    folder: Path
    classes: tuple[str, ...]
    paths: tuple[str, ...]
    labels: np.ndarray
    total_bytes: int
    skipped: int

    def class_counts(self) -> dict[str, int]:
        """Images per class, in class order."""
        counts = np.bincount(self.labels, minlength=len(self.classes))
        return {name: int(n) for name, n in zip(self.classes, counts)}


def _entries(folder: Path, shown: str) -> list[os.DirEntry]:
    """The folder's entries sorted by name; symbolic links refused (never followed)."""
    try:
        with os.scandir(folder) as it:
            entries = sorted(it, key=lambda e: e.name)
    except OSError as exc:
        raise DatasetNotFoundError(f"image folder {shown!r} cannot be read: {exc.strerror or exc}") from None
    for e in entries:
        if e.is_symlink() and not e.name.startswith("."):
            raise DatasetNotFoundError(
                f"{shown}/{e.name} is a symbolic link: links inside an image folder are not followed (one could "
                f"lead out of the data root); copy the file or folder in instead"
            )
    return entries


def list_image_folder(data_dir: str, root: str | os.PathLike | None = None) -> FolderListing:
    """Find the classes and images of ``data_dir`` (nothing decoded yet).

    Args:
        data_dir: the folder, absolute or relative to the data root.
        root: the data root (default :func:`core.foundations.paths.data_root`).

    Raises:
        ConfigError: the folder lies outside the data root.
        DatasetNotFoundError: not a folder, a link inside it, beyond a cap, no images, one class only,
            or a class with fewer than :data:`MIN_PER_CLASS` images.
    """
    folder = resolve_data_dir(data_dir, root)
    if not folder.is_dir():
        raise DatasetNotFoundError(
            f"image folder {data_dir!r} not found: point data_dir at a folder holding one sub-folder per class "
            f"(DIR/<class>/<file>.png|jpg|jpeg)"
        )
    classes: list[str] = []
    paths: list[str] = []
    labels: list[int] = []
    total = skipped = 0
    for top in _entries(folder, data_dir):
        if top.name.startswith(".") or not top.is_dir(follow_symlinks=False):
            skipped += 1
            continue
        if len(classes) >= MAX_CLASSES:
            raise DatasetNotFoundError(f"image folder {data_dir!r} has more than {MAX_CLASSES:,} class folders "
                                       f"(the limit MAX_CLASSES)")
        label = len(classes)
        classes.append(top.name)
        stack = [(Path(top.path), top.name, 0)]
        while stack:
            current, rel, depth = stack.pop()
            for e in _entries(current, f"{data_dir}/{rel}"):
                if e.name.startswith("."):
                    skipped += 1
                elif e.is_dir(follow_symlinks=False):
                    if depth + 1 > MAX_DEPTH:
                        raise DatasetNotFoundError(f"{data_dir}/{rel}/{e.name} lies more than {MAX_DEPTH} folders "
                                                   f"below its class folder (the limit MAX_DEPTH)")
                    stack.append((Path(e.path), f"{rel}/{e.name}", depth + 1))
                elif e.is_file(follow_symlinks=False) and e.name.lower().endswith(IMAGE_SUFFIXES):
                    size = e.stat(follow_symlinks=False).st_size
                    if size > MAX_FILE_BYTES:
                        raise DatasetNotFoundError(f"image {data_dir}/{rel}/{e.name} has {size / 2**20:.0f} MiB; at "
                                                   f"most {MAX_FILE_BYTES // 2**20} MiB per file (MAX_FILE_BYTES)")
                    total += size
                    if total > MAX_TOTAL_BYTES:
                        raise DatasetNotFoundError(f"image folder {data_dir!r} holds more than "
                                                   f"{MAX_TOTAL_BYTES // 2**30} GiB of images (MAX_TOTAL_BYTES)")
                    if len(paths) >= MAX_FILES:
                        raise DatasetNotFoundError(f"image folder {data_dir!r} holds more than {MAX_FILES:,} images "
                                                   f"(the limit MAX_FILES)")
                    paths.append(f"{rel}/{e.name}")
                    labels.append(label)
                else:
                    skipped += 1  # another suffix, or not a regular file (a FIFO, a socket)
    if not paths:
        raise DatasetNotFoundError(
            f"image folder {data_dir!r} holds no PNG or JPEG image in a class folder: expected "
            f"DIR/<class>/<file>.png|jpg|jpeg ({len(classes)} class folders found)"
        )
    label_array = np.asarray(labels, np.int64)
    counts = np.bincount(label_array, minlength=len(classes))
    if int((counts > 0).sum()) < 2:
        raise DatasetNotFoundError(
            f"image folder {data_dir!r} has images of one class only ({classes[int(counts.argmax())]!r}): "
            f"membership inference on a classifier needs at least two class folders with images"
        )
    small = [(name, int(n)) for name, n in zip(classes, counts) if n < MIN_PER_CLASS]
    if small:
        listed = ", ".join(f"{name!r} ({n})" for name, n in small[:5]) + (" …" if len(small) > 5 else "")
        raise DatasetNotFoundError(
            f"image folder {data_dir!r}: {len(small)} class folder(s) hold fewer than {MIN_PER_CLASS} images, one "
            f"for the victim's half and one for the attacker's: {listed}; add images or remove the folder"
        )
    return FolderListing(folder, tuple(classes), tuple(paths), label_array, total, skipped)


def _open_below(folder: Path, rel: str) -> int:
    """A file descriptor of ``folder/rel`` opened one component at a time, none of them followed if it
    is a link (a folder or file swapped for a link after the listing included), without blocking on a FIFO."""
    parts = rel.split("/")
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for part in parts[:-1]:
            inner = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
            os.close(fd)
            fd = inner
        return os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=fd)
    finally:
        os.close(fd)


def _read_bytes(folder: Path, rel: str) -> bytes:
    """A regular file's bytes (``rel`` below ``folder``), no link followed on the way."""
    shown = rel
    try:
        fd = _open_below(folder, rel)
    except OSError as exc:
        raise DatasetNotFoundError(f"image {shown} cannot be opened ({exc.strerror or exc}); links are not "
                                   f"followed") from None
    return read_capped(fd, MAX_FILE_BYTES, DatasetNotFoundError, f"image {shown}")


@contextmanager
def _opened(raw: bytes) -> Iterator[Image.Image]:
    """The image opened lazily (header only). Pillow warns from 89 M pixels and refuses from 178 M
    while opening; the warning is silenced because our own, lower cap is checked on the header."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", Image.DecompressionBombWarning)
        with Image.open(io.BytesIO(raw)) as img:
            yield img


def _decode(raw: bytes, shown: str, size: int, grey: bool | None) -> np.ndarray:
    """One image as float32 in [0, 1], (size, size) when read as grey, else (size, size, 3).

    ``grey`` None: as the file is (grey modes stay grey); True / False: converted to that.
    """
    try:
        with _opened(raw) as img:
            if img.format not in IMAGE_FORMATS:
                raise DatasetNotFoundError(f"image {shown} is {img.format or 'of an unknown format'}, not a PNG or "
                                           f"JPEG")
            width, height = img.size
            if width * height > MAX_IMAGE_PIXELS:
                raise DatasetNotFoundError(
                    f"image {shown} declares {width:,} × {height:,} pixels, more than {MAX_IMAGE_PIXELS:,} "
                    f"(MAX_IMAGE_PIXELS): a decompression bomb, or an image far larger than needed; resize it first"
                )
            as_grey = img.mode in GREY_MODES if grey is None else grey
            if img.format == "JPEG":  # decode big JPEGs at a reduced scale directly (never below the target)
                img.draft("L" if as_grey else "RGB", (size, size))
            img.load()  # decodes; a truncated file raises here
            side = min(img.size)
            left, top = (img.size[0] - side) // 2, (img.size[1] - side) // 2
            img = img.crop((left, top, left + side, top + side))
            if img.mode.startswith("I"):  # 16-bit grey: scaled to [0, 1] in float, not clipped at 255
                pixels = np.asarray(img, np.float32)
                scale = 255.0 if img.mode == "I" and pixels.max() <= 255 else 65535.0
                img = Image.fromarray(pixels / scale)  # mode F
            if img.mode == "F":
                out = np.asarray(img.resize((size, size), Image.Resampling.BILINEAR), np.float32)
                out = np.clip(out, 0.0, 1.0)
                return out if as_grey else np.repeat(out[:, :, None], 3, axis=2)
            if img.mode == "P" and "transparency" in img.info:
                img = img.convert("RGBA")  # avoids Pillow's warning on palette transparency
            img = img.convert("L" if as_grey else "RGB").resize((size, size), Image.Resampling.BILINEAR)
            return np.asarray(img, np.float32) / 255.0
    except DatasetNotFoundError:
        raise
    except Image.DecompressionBombError as exc:  # refused by Pillow while opening, before our check
        raise DatasetNotFoundError(f"image {shown} is a decompression bomb ({' '.join(str(exc).split())[:160]}; "
                                   f"at most {MAX_IMAGE_PIXELS:,} pixels are read, MAX_IMAGE_PIXELS)") from None
    except MemoryError:
        raise DatasetNotFoundError(f"image {shown} does not fit in memory when decoded") from None
    except Image.UnidentifiedImageError:  # its message names an in-memory buffer at an address: say what it means
        raise DatasetNotFoundError(f"image {shown} is unreadable or truncated (not an image Pillow can "
                                   f"identify: no PNG or JPEG header)") from None
    except Exception as exc:  # a hostile file can raise anything from a decoder (OSError, SyntaxError, zlib.error…)
        reason = " ".join(str(exc).split())[:200] or type(exc).__name__
        raise DatasetNotFoundError(f"image {shown} is unreadable or truncated ({reason})") from None


def _header_is_grey(raw: bytes) -> bool | None:
    """Whether an image's header declares a grey mode (None when it cannot be read: decoding says why)."""
    try:
        with _opened(raw) as img:
            return img.mode in GREY_MODES
    except Exception:  # reported with the file's name by _decode
        return None


def read_image_folder(listing: FolderListing, image_size: int, channels: int = 0) -> tuple[np.ndarray, dict]:
    """Every image of ``listing`` as float32 (N, C, image_size, image_size) in [0, 1], and facts about them.

    Args:
        image_size: side of the square each image is resized to.
        channels: 1 (grey), 3 (colour) or 0 (grey when every image is grey, else colour).

    Raises:
        DatasetNotFoundError: an image unreadable, truncated, not PNG/JPEG, a decompression bomb, or the
            images too large together (:data:`MAX_DECODED_BYTES`); the message names the file.
    """
    if channels not in (0, 1, 3):
        raise ValueError(f"channels must be 0, 1 or 3, got {channels}")
    n = len(listing.paths)
    worst = n * (channels or 3) * image_size * image_size * 4
    if worst > MAX_DECODED_BYTES:
        raise DatasetNotFoundError(
            f"{n:,} images of {image_size}×{image_size} need {worst / 2**30:.1f} GiB as float32, more than "
            f"{MAX_DECODED_BYTES // 2**30} GiB (MAX_DECODED_BYTES): lower image_size or use fewer images"
        )
    # one pass over the headers counts grey images (the files are read again to decode: holding every
    # file's bytes at once could take MAX_TOTAL_BYTES of memory)
    grey_count = sum(bool(_header_is_grey(_read_bytes(listing.folder, rel))) for rel in listing.paths)
    if channels == 0:
        channels = 1 if grey_count == n else 3
    out = np.empty((n, channels, image_size, image_size), np.float32)
    for i, rel in enumerate(listing.paths):
        img = _decode(_read_bytes(listing.folder, rel), rel, image_size, grey=channels == 1)
        out[i] = img[None] if channels == 1 else img.transpose(2, 0, 1)
    facts = {"grey_images": grey_count, "colour_images": n - grey_count, "channels": channels,
             "converted": (n - grey_count) if channels == 1 else grey_count}
    return out, facts


def stratified_halves(labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Two disjoint halves of the records, each class split evenly (an odd one out alternating
    between the halves), shuffled with a fixed seed: the victim's and the attacker's pools. Each class
    with at least two images lies in both halves, so the shadows see every class the victim sees."""
    rng = np.random.default_rng(12345)
    first: list[np.ndarray] = []
    second: list[np.ndarray] = []
    odd = 0
    for c in np.unique(labels):
        members = rng.permutation(np.flatnonzero(labels == c))
        cut = len(members) // 2 + (len(members) % 2) * (odd % 2)
        odd += len(members) % 2
        first.append(members[:cut])
        second.append(members[cut:])
    return np.sort(np.concatenate(first)), np.sort(np.concatenate(second))
