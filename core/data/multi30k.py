"""Multi30K loader (Elliott et al. 2016) for the official raw layout of the Multi30K repository.

The repository's ``data/task1/raw/`` folder holds one sentence per line and one file per split
and language::

    train.en.gz  train.de.gz  train.fr.gz  train.cs.gz          (29,000 sentences)
    val.en.gz    val.de.gz    ...                               (1,014)
    test_2016_flickr.en.gz  test_2016_flickr.de.gz  ...          (1,000)

Line i of ``<split>.<src>`` translates to line i of ``<split>.<tgt>``. Files may be gzipped
(``.gz``) or plain. Nothing is downloaded unless a user asks for it explicitly
(:func:`download_multi30k`, behind the app's download button); loading never touches the network.

Files are read as a stream with hard caps, so a hostile or mistaken file (a gzip bomb, a file of
newlines) is refused with a clear error instead of exhausting memory: at most :data:`MAX_FILE_BYTES`
decompressed bytes per file, :data:`MAX_LINES` lines and :data:`MAX_LINE_BYTES` bytes per line,
far above the real files. A download is capped at
:data:`MAX_DOWNLOAD_BYTES` compressed bytes and must decompress within the same caps.
"""
from __future__ import annotations

import gzip
import io
import os
import tempfile
import urllib.error
import urllib.request
from pathlib import Path
from typing import Callable

from core.foundations.errors import DatasetNotFoundError, MIAError
from core.foundations.paths import resolve_data_dir

#: most decompressed bytes read from one Multi30K file (the largest real one: about 2.5 MB)
MAX_FILE_BYTES = 64 * 2**20
#: most lines read from one Multi30K file (the largest real split: 29,000)
MAX_LINES = 1_000_000
#: most bytes in one line (real captions: a few hundred)
MAX_LINE_BYTES = 64 * 2**10
#: most compressed bytes accepted from the server for one file (the largest real one: < 1 MB)
MAX_DOWNLOAD_BYTES = 16 * 2**20

#: split name -> file stem in the raw layout
SPLITS = {"train": "train", "val": "val", "test": "test_2016_flickr"}
#: languages of Multi30K task 1
LANGUAGES = ("en", "de", "fr", "cs")


def _find(folder: Path, stem: str, lang: str) -> Path | None:
    for name in (f"{stem}.{lang}.gz", f"{stem}.{lang}"):
        if (folder / name).is_file():
            return folder / name
    return None


def _read_lines(path: Path) -> list[str]:
    """The stripped lines of a plain or gzipped text file, read as a stream within the caps.

    Raises:
        DatasetNotFoundError: unreadable, not UTF-8, or beyond :data:`MAX_FILE_BYTES`,
            :data:`MAX_LINES` or :data:`MAX_LINE_BYTES` (the message names the cap).
    """
    try:
        with (gzip.open(path, "rb") if path.suffix == ".gz" else open(path, "rb")) as fh:
            return _capped_lines(fh, f"Multi30K file {str(path)!r}")
    except (OSError, EOFError, UnicodeDecodeError) as exc:  # gzip.BadGzipFile is an OSError
        raise DatasetNotFoundError(f"Multi30K file {str(path)!r} is unreadable: {exc}") from None


def _capped_lines(fh: io.BufferedIOBase, what: str) -> list[str]:
    """Stripped UTF-8 lines of a binary stream; never holds more than the caps in memory."""
    lines: list[str] = []
    total = 0
    while True:
        raw = fh.readline(MAX_LINE_BYTES + 1)
        if not raw:
            return lines
        total += len(raw)
        if total > MAX_FILE_BYTES:
            raise DatasetNotFoundError(
                f"{what} holds more than {MAX_FILE_BYTES // 2**20} MiB of text (the limit MAX_FILE_BYTES; the real "
                f"Multi30K files hold about 2 MB): it is not a Multi30K file, or a compressed bomb"
            )
        if len(raw) > MAX_LINE_BYTES and not raw.endswith(b"\n"):
            raise DatasetNotFoundError(
                f"{what} has a line longer than {MAX_LINE_BYTES // 2**10} KiB at line {len(lines) + 1} (the limit "
                f"MAX_LINE_BYTES): it is not a Multi30K file"
            )
        if len(lines) >= MAX_LINES:
            raise DatasetNotFoundError(
                f"{what} has more than {MAX_LINES:,} lines (the limit MAX_LINES; the real train split has 29,000)"
            )
        lines.append(raw.decode("utf-8").strip())


#: where the official raw files live (the Multi30K repository's data/task1/raw/ folder)
RAW_URL = "https://raw.githubusercontent.com/multi30k/dataset/master/data/task1/raw/{name}"


class DownloadError(MIAError):
    """The Multi30K files could not be fetched (offline, or the server refused)."""


def missing_files(folder: str | Path, langs: tuple[str, ...]) -> list[str]:
    """Names of the raw files (``<split>.<lang>.gz``) of ``langs`` that ``folder`` lacks."""
    folder = Path(folder)
    return [f"{stem}.{lang}.gz" for stem in SPLITS.values() for lang in langs if _find(folder, stem, lang) is None]


def download_multi30k(
    folder: str | Path,
    langs: tuple[str, ...] = ("en", "de"),
    timeout: float = 20.0,
    on_file: Callable[[str, int, int], None] | None = None,
    root: str | Path | None = None,
) -> list[str]:
    """Fetch the missing raw files of ``langs`` into ``folder``; return the names fetched.

    Each file is written to a temporary name in ``folder`` and renamed into place only once it
    is complete and decompresses within the caps (:data:`MAX_DOWNLOAD_BYTES` compressed, then
    those of :func:`load_multi30k`), so an interrupted or oversized download never leaves a
    file behind.

    Args:
        root: when given (the app passes its data root), ``folder`` must lie under it
            (:func:`core.foundations.paths.resolve_data_dir`); nothing is created outside it.

    Raises:
        DownloadError: the machine is offline or the server did not deliver a file; the message
            says so plainly and where to put the files by hand.
        ConfigError: ``folder`` lies outside ``root``.
    """
    if root is not None:
        folder = resolve_data_dir(str(folder), root)
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    todo = missing_files(folder, langs)
    for k, name in enumerate(todo):
        if on_file:
            on_file(name, k, len(todo))
        url = RAW_URL.format(name=name)
        try:
            with urllib.request.urlopen(url, timeout=timeout) as response:
                data = response.read(MAX_DOWNLOAD_BYTES + 1)
        except (urllib.error.URLError, OSError, TimeoutError) as exc:
            raise DownloadError(
                f"could not download {name} ({exc}): this machine seems to be offline or cannot reach "
                f"{url.split('/')[2]}. Copy {', '.join(todo[k:])} from data/task1/raw/ of the Multi30K repository "
                f"into {str(folder)!r} by hand"
            ) from None
        if len(data) > MAX_DOWNLOAD_BYTES:
            raise DownloadError(f"the server sent more than {MAX_DOWNLOAD_BYTES // 2**20} MiB for {name}; nothing was saved")
        try:
            with gzip.GzipFile(fileobj=io.BytesIO(data)) as fh:
                _capped_lines(fh, f"downloaded {name}")
        except (OSError, EOFError, UnicodeDecodeError, DatasetNotFoundError) as exc:
            raise DownloadError(f"the server sent a broken {name} ({exc}); nothing was saved") from None
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{name}.", suffix=".part")
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, folder / name)
    return todo


def load_multi30k(folder: str | Path, src_lang: str = "en", tgt_lang: str = "de", split: str = "train") -> list[tuple[str, str]]:
    """(source, target) sentence pairs of one Multi30K split, in file order.

    Pairs where either side is empty are dropped.

    Raises:
        DatasetNotFoundError: folder or a file missing (the message names the exact files
            expected and where), unreadable, or the two sides have different line counts.
    """
    if split not in SPLITS:
        raise ValueError(f"unknown Multi30K split {split!r}; choose one of {sorted(SPLITS)}")
    for lang in (src_lang, tgt_lang):
        if lang not in LANGUAGES:
            raise DatasetNotFoundError(f"Multi30K has no language {lang!r}; choose among {', '.join(LANGUAGES)}")
    stem = SPLITS[split]
    wanted = f"{stem}.{src_lang}.gz and {stem}.{tgt_lang}.gz (or the same files unzipped)"
    folder = Path(folder)
    if not folder.is_dir():
        raise DatasetNotFoundError(
            f"Multi30K folder {str(folder)!r} not found: create it and put {wanted} there, "
            f"taken from data/task1/raw/ of the Multi30K repository (github.com/multi30k/dataset)"
        )
    paths = {lang: _find(folder, stem, lang) for lang in (src_lang, tgt_lang)}
    missing = [f"{stem}.{lang}.gz" for lang, p in paths.items() if p is None]
    if missing:
        raise DatasetNotFoundError(
            f"Multi30K folder {str(folder)!r} lacks {' and '.join(missing)} (gzipped or plain): put {wanted} "
            f"from data/task1/raw/ of the Multi30K repository into {str(folder)!r}"
        )
    src_path, tgt_path = paths[src_lang], paths[tgt_lang]
    assert src_path is not None and tgt_path is not None  # none missing
    src = _read_lines(src_path)
    tgt = _read_lines(tgt_path)
    if len(src) != len(tgt):
        raise DatasetNotFoundError(
            f"Multi30K files {src_path.name} ({len(src)} lines) and {tgt_path.name} ({len(tgt)} lines) "
            f"in {str(folder)!r} do not align: line i of one must translate line i of the other"
        )
    return [(s, t) for s, t in zip(src, tgt) if s and t]
