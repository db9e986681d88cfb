"""One capped reader: every reader of a file it must not trust (a user's weights or member list, a
scores file, a CSV table, a CIFAR-10 batch, an image of a class folder, the cache's value files) reads through
:func:`core.foundations.fileio.read_capped` and says "not a regular file" and "over the cap" in the same words,
each as its own error class (what its callers catch)."""
from __future__ import annotations

import errno
import os
from dataclasses import replace
from pathlib import Path

import pytest

from core.analyses import scores_file
from core.data import csv_table, image_folder, image_sources
from core.experiment import cache_store
from core.foundations import fileio, user_files
from core.foundations.errors import ConfigError, DatasetNotFoundError, UnsafeCacheEntryError

VALUE_NAME = "ab/cd/" + "0" * 28 + ".val"


def _user_file(path: Path, limit: int) -> bytes:
    return user_files.read_user_file(str(path), "members", limit)


def _scores(path: Path, limit: int, monkeypatch) -> bytes:
    monkeypatch.setattr(scores_file, "MAX_FILE_BYTES", limit)
    return scores_file.read_bytes(path)[1]


def _cifar(path: Path, limit: int, monkeypatch) -> bytes:
    monkeypatch.setattr(image_sources, "MAX_BATCH_BYTES", limit)
    return image_sources.read_cifar10_batch(path)


def _image(path: Path, limit: int, monkeypatch) -> bytes:
    monkeypatch.setattr(image_folder, "MAX_FILE_BYTES", limit)
    return image_folder._read_bytes(path.parent, path.name)


def _csv(path: Path, limit: int) -> bytes:
    return csv_table.read_csv_bytes(path.name, replace(csv_table.LIMITS, max_bytes=limit), root=path.parent)


def _value(path: Path, limit: int) -> bytes:
    return cache_store.read_value_file(str(path.parents[2]), VALUE_NAME, limit)


#: reader name → (read(path, limit, monkeypatch), the error its callers catch, the file's name, its words for the file)
READERS = {
    "user file": (lambda p, n, mp: _user_file(p, n), ConfigError, "members.txt", "members '"),
    "scores file": (_scores, scores_file.ScoresFileError, "scores.csv", "scores.csv"),
    "CIFAR-10 batch": (_cifar, DatasetNotFoundError, "data_batch_1", "CIFAR-10 batch data_batch_1"),
    "CSV table": (lambda p, n, mp: _csv(p, n), DatasetNotFoundError, "t.csv", "CSV file 't.csv'"),
    "class-folder image": (_image, DatasetNotFoundError, "00.png", "image 00.png"),
    "cache value file": (lambda p, n, mp: _value(p, n), UnsafeCacheEntryError, VALUE_NAME, "cache value file"),
}


@pytest.fixture
def root(tmp_path, monkeypatch):
    monkeypatch.setenv("MIA_DATA_ROOT", str(tmp_path))
    return tmp_path


@pytest.mark.parametrize("reader", list(READERS))
def test_each_reader_reads_up_to_its_cap_and_refuses_a_byte_more_in_its_own_class(root, monkeypatch, reader):
    read, error, name, words = READERS[reader]
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"0123456789")
    if reader == "CIFAR-10 batch":  # the bytes are read, then refused as no pickle: past the capped read
        with pytest.raises(DatasetNotFoundError, match="malformed"):
            read(path, 10, monkeypatch)
    else:
        assert read(path, 10, monkeypatch) == b"0123456789"
    path.write_bytes(b"01234567890")
    with pytest.raises(error, match="holds 11 bytes; at most 10 are read") as exc:
        read(path, 10, monkeypatch)
    assert words in str(exc.value) and "\n" not in str(exc.value)


@pytest.mark.parametrize("reader", list(READERS))
def test_each_reader_refuses_a_folder_in_its_own_class(root, monkeypatch, reader):
    read, error, name, words = READERS[reader]
    (root / name).mkdir(parents=True)
    with pytest.raises(error, match="is not a regular file") as exc:
        read(root / name, 10, monkeypatch)
    assert words in str(exc.value)


def test_a_file_that_grew_while_read_and_a_failed_read(monkeypatch, tmp_path):
    (tmp_path / "f").write_bytes(b"x")

    def grew(fd: int, limit: int) -> bytes:
        os.close(fd)  # as the real one does
        raise fileio.FileTooLargeError(None)

    monkeypatch.setattr(fileio, "read_opened_file", grew)
    with pytest.raises(ConfigError, match="'f' holds more bytes; at most 10 are read"):
        fileio.read_named_file(tmp_path / "f", 10, ConfigError, "'f'")

    def failed(fd: int, limit: int) -> bytes:
        os.close(fd)
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(fileio, "read_opened_file", failed)
    with pytest.raises(ConfigError, match="'f' cannot be read: Input/output error"):
        fileio.read_named_file(tmp_path / "f", 10, ConfigError, "'f'")
    # the cache's reader lets a failed read through as it is: diskcache takes an OSError as a vanished value
    with pytest.raises(OSError) as exc:
        fileio.read_capped(os.open(tmp_path / "f", os.O_RDONLY), 10, UnsafeCacheEntryError, "v", read_errors=False)
    assert type(exc.value) is OSError and exc.value.errno == errno.EIO
