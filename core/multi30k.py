"""Multi30K loader (Elliott et al. 2016) for the official raw layout of the Multi30K repository.

The repository's ``data/task1/raw/`` folder holds one sentence per line and one file per split
and language::

    train.en.gz  train.de.gz  train.fr.gz  train.cs.gz          (29,000 sentences)
    val.en.gz    val.de.gz    ...                               (1,014)
    test_2016_flickr.en.gz  test_2016_flickr.de.gz  ...          (1,000)

Line i of ``<split>.<src>`` translates to line i of ``<split>.<tgt>``. Files may be gzipped
(``.gz``) or plain; nothing is downloaded.
"""
from __future__ import annotations

import gzip
from pathlib import Path

from .errors import DatasetNotFoundError

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
    try:
        if path.suffix == ".gz":
            with gzip.open(path, "rt", encoding="utf-8") as fh:
                text = fh.read()
        else:
            text = path.read_text(encoding="utf-8")
    except (OSError, EOFError, UnicodeDecodeError) as exc:  # gzip.BadGzipFile is an OSError
        raise DatasetNotFoundError(f"Multi30K file {str(path)!r} is unreadable: {exc}") from None
    lines = text.split("\n")
    if lines and lines[-1] == "":  # the trailing newline
        lines.pop()
    return [line.strip() for line in lines]


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
    src = _read_lines(paths[src_lang])
    tgt = _read_lines(paths[tgt_lang])
    if len(src) != len(tgt):
        raise DatasetNotFoundError(
            f"Multi30K files {paths[src_lang].name} ({len(src)} lines) and {paths[tgt_lang].name} ({len(tgt)} lines) "
            f"in {str(folder)!r} do not align: line i of one must translate line i of the other"
        )
    return [(s, t) for s, t in zip(src, tgt) if s and t]
