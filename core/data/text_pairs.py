"""Parallel text in any folder: ``<name>.<src>`` / ``<name>.<tgt>`` files with one sentence a line.

Line i of ``<name>.<src>`` translates to line i of ``<name>.<tgt>``; files may be plain UTF-8 or gzipped
(``<name>.<lang>.gz``). Multi30K's raw layout (``train.en.gz``, ``val.en.gz``, ``test_2016_flickr.en.gz``, …)
is one case of it. Language codes are the files' last suffix (before ``.gz``), any letters, digits, ``_``
or ``-`` (``en``, ``de``, ``pt_BR``, ``src``).

Which pair is the data source (the explorer splits it itself, by the seed, into the victim's and the
attacker's halves and, within each, members and non-members, so no file plays "validation" or "test"):

1. ``pair_name`` when given (``--set pair_name=NAME``: the files ``NAME.<src>`` / ``NAME.<tgt>``);
2. else the pair named ``train`` when the folder has one (Multi30K: its 29,000-pair train split;
   ``val`` / ``test*`` pairs are then not read);
3. else the folder's only pair; several pairs and none named ``train`` → one line listing them.

Nothing read is trusted: the folder must lie under the data root
(:func:`core.foundations.paths.resolve_data_dir`, CLI included); a symbolic link among the pair's files
is refused (never followed), files are opened with ``O_NOFOLLOW | O_NONBLOCK`` and must be regular;
each file is read as a stream within :mod:`core.data.multi30k`'s caps (:data:`MAX_FILE_BYTES`
decompressed bytes, :data:`MAX_LINES` lines, :data:`MAX_LINE_BYTES` bytes per line: a gzip bomb is
refused, not inflated). Different line counts, binary content (not UTF-8, or NUL bytes),
an empty file, a missing language, an unreadable gzip → one :class:`DatasetNotFoundError` line.

Pairs where either side is an empty line are left out (as for Multi30K); a record's id is its line
number (1-based) in the pair's files.
"""
from __future__ import annotations

import gzip
import os
import re
import stat
import zlib
from dataclasses import dataclass
from pathlib import Path

from core.data.multi30k import MAX_FILE_BYTES, MAX_LINE_BYTES, MAX_LINES
from core.foundations.errors import DatasetNotFoundError
from core.foundations.paths import resolve_data_dir

#: what a language code (a file's last suffix) may be: also keeps paths built from it inside the folder
LANGUAGE_CODE = re.compile(r"[A-Za-z0-9_-]{1,32}")
#: the pair used when the folder has several and none is chosen
DEFAULT_PAIR = "train"
#: most entries of the folder looked at (a folder of a million files is refused, not listed)
MAX_ENTRIES = 10_000


@dataclass(frozen=True)
class TextPairs:
    """One pair of parallel files, read.

    Attributes:
        name: the pair's file stem (``train``).
        files: the two files' names (source, target).
        pairs: (source, target) lines where neither side is empty, in file order.
        line_numbers: each pair's line number (1-based) in the files: the record ids.
        dropped_empty: lines left out because a side was empty.
        names: every pair name found for these two languages (for the description).
    """

    name: str
    files: tuple[str, str]
    pairs: list[tuple[str, str]]
    line_numbers: list[int]
    dropped_empty: int
    names: tuple[str, ...]


def _language_files(folder: Path, shown: str) -> dict[tuple[str, str], os.DirEntry]:
    """(name, language) → the folder's entry ``name.language`` or ``name.language.gz`` (plain first)."""
    found: dict[tuple[str, str], os.DirEntry] = {}
    try:
        with os.scandir(folder) as it:
            entries = []
            for e in it:
                entries.append(e)
                if len(entries) > MAX_ENTRIES:
                    raise DatasetNotFoundError(f"text folder {shown!r} holds more than {MAX_ENTRIES:,} entries "
                                               f"(MAX_ENTRIES): point data_dir at the folder of the text files")
    except OSError as exc:
        raise DatasetNotFoundError(f"text folder {shown!r} cannot be read: {exc.strerror or exc}") from None
    for e in sorted(entries, key=lambda e: (e.name.endswith(".gz"), e.name)):
        stem = e.name[:-3] if e.name.endswith(".gz") else e.name
        name, dot, lang = stem.rpartition(".")
        if e.name.startswith(".") or not dot or not name or not LANGUAGE_CODE.fullmatch(lang):
            continue
        found.setdefault((name, lang), e)
    return found


def _open_regular(entry: os.DirEntry, shown: str):
    """The file opened for reading without following a link or blocking on a FIFO; a regular file only."""
    if entry.is_symlink():
        raise DatasetNotFoundError(f"{shown} is a symbolic link: links are not followed (one could lead out of the "
                                   f"data root); copy the file in instead")
    try:
        fd = os.open(entry.path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        raise DatasetNotFoundError(f"{shown} cannot be opened: {exc.strerror or exc}") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise DatasetNotFoundError(f"{shown} is not a regular file")
    return os.fdopen(fd, "rb")


def _read_text_lines(entry: os.DirEntry, shown: str) -> list[str]:
    """The file's lines (line ends and surrounding blanks stripped), within the caps.

    Raises:
        DatasetNotFoundError: empty, binary (not UTF-8, or a NUL byte), an unreadable gzip, or a cap passed.
    """
    lines: list[str] = []
    total = 0
    try:
        with _open_regular(entry, shown) as raw_fh:
            fh = gzip.GzipFile(fileobj=raw_fh) if entry.name.endswith(".gz") else raw_fh
            with fh:
                while True:
                    raw = fh.readline(MAX_LINE_BYTES + 1)
                    if not raw:
                        break
                    total += len(raw)
                    if total > MAX_FILE_BYTES:
                        raise DatasetNotFoundError(f"{shown} holds more than {MAX_FILE_BYTES // 2**20} MiB of text "
                                                   f"(MAX_FILE_BYTES; a compressed bomb?)")
                    if len(raw) > MAX_LINE_BYTES and not raw.endswith(b"\n"):
                        raise DatasetNotFoundError(f"{shown} has a line longer than {MAX_LINE_BYTES // 2**10} KiB at "
                                                   f"line {len(lines) + 1} (MAX_LINE_BYTES): not one sentence a line")
                    if len(lines) >= MAX_LINES:
                        raise DatasetNotFoundError(f"{shown} has more than {MAX_LINES:,} lines (MAX_LINES)")
                    if b"\x00" in raw:
                        raise DatasetNotFoundError(f"{shown} has binary content (a NUL byte at line {len(lines) + 1}): "
                                                   f"expected UTF-8 text, one sentence a line")
                    try:
                        # a byte-order mark (Windows editors) is no part of the first sentence
                        lines.append(raw.decode("utf-8-sig" if not lines else "utf-8").strip())
                    except UnicodeDecodeError:
                        raise DatasetNotFoundError(f"{shown} has binary content at line {len(lines) + 1} (not UTF-8): "
                                                   f"expected UTF-8 text, one sentence a line") from None
    except (OSError, EOFError, zlib.error) as exc:  # gzip.BadGzipFile is an OSError; a corrupt stream a zlib.error
        raise DatasetNotFoundError(f"{shown} is unreadable: {' '.join(str(exc).split()) or type(exc).__name__}") from None
    if not any(lines):
        raise DatasetNotFoundError(f"{shown} is empty: expected one sentence a line")
    return lines


def load_text_pairs(data_dir: str, src_lang: str, tgt_lang: str, pair_name: str = "") -> TextPairs:
    """The (source, target) lines of the data-source pair of ``data_dir`` (see the module's rules).

    Args:
        data_dir: the folder, absolute or relative to the data root.
        src_lang, tgt_lang: the two files' language suffixes.
        pair_name: the pair's file stem; "" = ``train`` if present, else the only pair.

    Raises:
        ConfigError: the folder lies outside the data root.
        DatasetNotFoundError: no such folder, a language or the named pair missing, several pairs and
            none chosen, different line counts, or a file that is empty, binary, linked or beyond a cap.
    """
    for lang in (src_lang, tgt_lang):
        if not LANGUAGE_CODE.fullmatch(lang):
            raise DatasetNotFoundError(f"language code {lang!r} must be 1–32 letters, digits, '_' or '-'")
    folder = resolve_data_dir(data_dir)
    if not folder.is_dir():
        raise DatasetNotFoundError(f"text folder {data_dir!r} not found: point data_dir at a folder holding "
                                   f"<name>.{src_lang} and <name>.{tgt_lang} (plain or .gz)")
    found = _language_files(folder, data_dir)
    by_lang = {lang: sorted({name for name, l in found if l == lang}) for lang in (src_lang, tgt_lang)}
    langs_found = sorted({l for _, l in found})
    for lang in (src_lang, tgt_lang):
        if not by_lang[lang]:
            raise DatasetNotFoundError(
                f"text folder {data_dir!r} has no file for language {lang!r} (<name>.{lang} or <name>.{lang}.gz); "
                f"languages found: {', '.join(langs_found) or 'none'}"
            )
    names = tuple(n for n in by_lang[src_lang] if n in by_lang[tgt_lang])
    if pair_name:
        if pair_name not in names:
            raise DatasetNotFoundError(
                f"text folder {data_dir!r} has no pair {pair_name}.{src_lang} / {pair_name}.{tgt_lang}; pairs found: "
                f"{', '.join(names) or 'none'}"
            )
        name = pair_name
    elif DEFAULT_PAIR in names:
        name = DEFAULT_PAIR
    elif len(names) == 1:
        name = names[0]
    else:
        lonely = sorted(set(by_lang[src_lang]) ^ set(by_lang[tgt_lang]))
        raise DatasetNotFoundError(
            f"text folder {data_dir!r} has no {src_lang}/{tgt_lang} pair of files with one name "
            f"(files without a partner: {', '.join(lonely)})" if not names else
            f"text folder {data_dir!r} has {len(names)} {src_lang}/{tgt_lang} pairs ({', '.join(names)}) and none named "
            f"{DEFAULT_PAIR!r}: choose one with --set pair_name=NAME"
        )
    src_entry, tgt_entry = found[(name, src_lang)], found[(name, tgt_lang)]
    src = _read_text_lines(src_entry, f"{data_dir}/{src_entry.name}")
    tgt = _read_text_lines(tgt_entry, f"{data_dir}/{tgt_entry.name}")
    if len(src) != len(tgt):
        raise DatasetNotFoundError(
            f"{src_entry.name} ({len(src):,} lines) and {tgt_entry.name} ({len(tgt):,} lines) in {data_dir!r} have "
            f"different line counts: line i of one must translate line i of the other"
        )
    kept = [(i + 1, s, t) for i, (s, t) in enumerate(zip(src, tgt)) if s and t]
    return TextPairs(name, (src_entry.name, tgt_entry.name), [(s, t) for _, s, t in kept], [i for i, _, _ in kept],
                     len(src) - len(kept), names)
