import numpy as np
import torch

from core.cache import ArtifactCache
from core.responses import Responses


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


def test_foreign_value_is_not_unpickled():
    c = ArtifactCache()
    c._store.set("evil", {"pickled": "object"})  # diskcache would pickle this: we must refuse it
    assert c.get_bytes("evil") is None
    assert c.corrupted == ["evil"]


def test_valid_checksum_but_bad_content_is_rejected():
    c = ArtifactCache()
    c.put_bytes("t", b"not a safetensors blob")
    assert c.get_tensors("t") is None and c.corrupted == ["t"]
