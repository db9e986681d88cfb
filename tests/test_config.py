import json
import subprocess
import sys

import pytest

from core.foundations.config import ExperimentConfig
from core.foundations.errors import ConfigError
from core.tasks import get_task


def cfg(**kw):
    return get_task("image").make_config("rnn", "quick", kw)


def test_hash_is_stable_across_processes():
    code = "from core.tasks import get_task; print(get_task('image').make_config('rnn','quick').config_hash)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == cfg().config_hash
    assert len(out) == 20


def test_hash_changes_with_any_numeric_field_but_not_with_preset_label():
    base = cfg()
    assert cfg(epochs=base.epochs + 1).config_hash != base.config_hash
    assert cfg(cnn_width=8).config_hash != base.config_hash  # task option
    assert cfg(preset="whatever").config_hash == base.config_hash


def test_attack_only_fields_keep_training_hash():
    base = cfg()
    other = cfg(n_shadows=2, attack_hidden=16)
    assert other.training_hash == base.training_hash
    assert other.config_hash != base.config_hash
    assert cfg(lr=0.02).training_hash != base.training_hash


def test_config_is_frozen_and_json_serialisable():
    c = cfg()
    with pytest.raises(Exception):
        c.epochs = 3  # type: ignore[misc]
    json.dumps(c.to_dict())


def test_string_values_are_parsed():
    c = cfg(epochs="7", lr="0.01", attack_epochs="2,4", augment="true")
    assert c.epochs == 7 and c.lr == 0.01 and c.attack_epochs == (2, 4) and c.options.augment is True
    assert c.checkpoint_epochs == (2, 4, 7)


@pytest.mark.parametrize(
    "updates,message",
    [
        ({"lr": -1}, "lr must be a positive"),
        ({"epochs": 0}, "epochs must be a positive integer"),
        ({"nope": 1}, "unknown config key 'nope'"),
        ({"epochs": "ten"}, "invalid value for epochs"),
        ({"attack_epochs": "99"}, "attack_epochs must lie in"),
        ({"weight_decay": -0.1}, r"weight_decay must be a finite number in \[0, 10\]"),
        ({"lr": "inf"}, r"lr must be a positive number in \(0, 10\], got inf"),
        ({"seed": -1}, r"seed must be an integer in \[0, 2\*\*32\)"),
        ({"epochs": 10**12}, r"epochs must be a positive integer in \[1, 10000\]"),
        ({"arch": "cnn"}, "arch must be one of"),
    ],
)
def test_invalid_values_raise_precise_errors(updates, message):
    with pytest.raises(ConfigError, match=message):
        cfg(**updates)


def test_unknown_preset_and_task():
    with pytest.raises(ConfigError, match="unknown preset"):
        get_task("image").make_config("rnn", "huge")
    with pytest.raises(ConfigError, match="unknown task"):
        get_task("audio")
    with pytest.raises(ConfigError):
        ExperimentConfig(task="audio").validate()


def test_default_precision_keeps_the_hashes_of_configs_made_before_the_field():
    # the quick presets' hashes as written by the version without `precision` (cached runs stay valid)
    image = get_task("image").make_config("rnn", "quick")
    assert (image.config_hash, image.training_hash) == ("5138b927c106302a6c88", "f2d5065eb5aa917a4d3e")
    translation = get_task("translation").make_config("ffnn", "quick")
    assert (translation.config_hash, translation.training_hash) == ("9b83ee45660ef4bc7e5c", "961d5268c21b656a4787")
    bf16 = cfg(precision="bf16")
    assert bf16.training_hash != image.training_hash and bf16.config_hash != image.config_hash


@pytest.mark.parametrize("task, updates, message", [
    ("image", {"precision": "fp8"}, "precision must be one of float32, bf16"),
    ("image", {"precision": "bf16", "dp": "sigma"}, "cannot be combined with DP-SGD"),
    ("navigation", {"precision": "bf16"}, "does not apply to navigation: it trains in float32 only"),
])
def test_precision_is_checked(task, updates, message):
    with pytest.raises(ConfigError, match=message):
        get_task(task).make_config("ffnn", "quick", updates)
