import pickle
import sqlite3

import numpy as np
import pytest
import torch

from core.experiment.cache import ArtifactCache
from core.measurement.responses import Responses


def test_hit_and_miss(isolated_cache):
    c = ArtifactCache()
    assert c.directory == isolated_cache
    k = c.key("result", "abc")
    assert c.get_json(k) is None
    c.put_json(k, {"a": 1})
    assert c.get_json(k) == {"a": 1}
    assert ArtifactCache().get_json(k) == {"a": 1}  # persisted on disk


def test_tensors_and_responses_roundtrip():
    c = ArtifactCache()
    w = {"layer.weight": torch.randn(3, 4), "layer.bias": torch.zeros(3)}
    c.put_tensors("w", w)
    back = c.get_tensors("w")
    assert set(back) == set(w) and torch.equal(back["layer.weight"], w["layer.weight"])
    r = Responses.from_probs(torch.softmax(torch.randn(4, 3), 1), [1, 3], torch.tensor([0, 1, 2, 0]))
    c.put_responses("r", r)
    np.testing.assert_array_equal(c.get_responses("r").cross_entropy, r.cross_entropy)


def test_corrupted_entry_is_detected_discarded_and_reported():
    c = ArtifactCache()
    c.put_json("k", {"a": 1})
    blob = bytearray(c._store.get("k"))
    blob[-2] ^= 0xFF  # flip bits in the payload
    c._store.set("k", bytes(blob))
    assert c.get_json("k") is None
    assert c.corrupted == ["k"]
    assert "k" not in c


class _Planted:
    """Unpickling this creates the file ``marker``."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


def test_foreign_pickled_value_is_never_unpickled(isolated_cache, tmp_path):
    """A row planted in diskcache's "pickle" mode (4) is refused before it is deserialised
    (tests/test_hardening.py plants more: files, pickled keys, other modes)."""
    c = ArtifactCache()
    with pytest.raises(TypeError):
        c._store.set("evil", {"pickled": "object"})  # diskcache would pickle this: refused on the way in
    marker = tmp_path / "marker"
    con = sqlite3.connect(isolated_cache / "cache.db")
    con.execute("INSERT INTO Cache (key, raw, store_time, access_time, size, mode, filename, value)"
                " VALUES ('evil', 1, 0, 0, 0, 4, NULL, ?)", (sqlite3.Binary(pickle.dumps(_Planted(marker))),))
    con.commit()
    con.close()
    assert c.get_bytes("evil") is None
    assert not marker.exists()
    assert c.corrupted == ["evil"] and "evil" not in c


def test_valid_checksum_but_bad_content_is_rejected():
    c = ArtifactCache()
    c.put_bytes("t", b"not a safetensors blob")
    assert c.get_tensors("t") is None and c.corrupted == ["t"]
