"""Config files of the CLI: ``--config FILE`` (TOML, YAML or JSON, by the suffix) read into the options
(:func:`apply_config_file`), and ``config [--out FILE]`` written (:func:`write_config`), which ``--config`` reads
back to the same ``config_hash``. Light: the YAML reader loads when a YAML file is read."""
from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

from core.cli.common import NAMED_BY_FLAGS, given, one_line, parse_sets
from core.cli.output import emit_json
from core.foundations.errors import ConfigError
from core.foundations.fileio import show_path, write_text_atomically
from core.foundations.version import stamped

#: the largest config file read (a config is a few hundred bytes; a wrong file must not be read whole)
MAX_CONFIG_BYTES = 1 << 20
#: config file formats by suffix
CONFIG_FORMATS = {".toml": "toml", ".yaml": "yaml", ".yml": "yaml", ".json": "json"}
#: fields that a config file may carry at their defaults without asking anything (``config --out`` writes every
#: field; these, at these values, mean "not repeated, not matched, no model of your own")
SILENT_DEFAULTS = {"repeats": 1, "match_utility": "off", "target_weights_sha256": "", "members_sha256": ""}


def config_format(path: str | os.PathLike) -> str:
    """``toml``, ``yaml`` or ``json`` by the file's suffix (a :class:`ConfigError` for any other)."""
    kind = CONFIG_FORMATS.get(Path(path).suffix.lower())
    if kind is None:
        raise ConfigError(f"config file {show_path(path)}: the name must end in {', '.join(CONFIG_FORMATS)}")
    return kind


def read_config_file(path: str) -> dict[str, Any]:
    """The config fields a ``--config`` file sets, flat (the task options' beside the shared ones).

    The file is TOML, YAML (read with ``yaml.safe_load``: no tags, no objects) or JSON, by its suffix; it holds
    either the fields (``task = "image"``, ``epochs = 10``, an ``options`` table for the task's options) or what
    ``config --out`` writes (the same under ``config``, with the envelope and ``config_hash``, which are not read:
    the hash is recomputed). A missing or unreadable file, bad syntax, a value that is not a number, string, true /
    false or a list of them, or a table where a value belongs: one :class:`ConfigError` line. Unknown keys are
    refused as ``--set`` refuses them, when the config is made."""
    kind = config_format(path)
    try:
        with open(os.path.expanduser(path), "rb") as f:
            data = f.read(MAX_CONFIG_BYTES + 1)
    except OSError as exc:
        raise ConfigError(f"config file {show_path(path)}: {exc.strerror or exc}") from None
    if len(data) > MAX_CONFIG_BYTES:
        raise ConfigError(f"config file {show_path(path)} holds more than {MAX_CONFIG_BYTES:,} bytes: not a config")
    try:
        text = data.decode("utf-8")
        if kind == "toml":
            import tomllib

            doc: Any = tomllib.loads(text)
        elif kind == "yaml":
            import yaml

            doc = yaml.safe_load(text)
        else:
            doc = json.loads(text)
    except Exception as exc:  # noqa: BLE001 - every parser's own error type: one line naming the file
        raise ConfigError(f"config file {show_path(path)} is not valid {kind.upper()}: {one_line(exc)}") from None
    if not isinstance(doc, dict):
        raise ConfigError(f"config file {show_path(path)} must hold a table of config fields")
    if isinstance(doc.get("config"), dict):  # what `config --out` writes
        doc = doc["config"]
    flat: dict[str, Any] = {}
    for key, value in doc.items():
        if key == "options" and isinstance(value, dict):
            items = list(value.items())
        elif key in ("schema", "mia_explorer_version", "config_hash"):  # the envelope of `config --out`'s JSON
            continue
        else:
            items = [(key, value)]
        for name, v in items:
            if name in flat:
                raise ConfigError(f"config file {show_path(path)} sets {name} twice")
            flat[str(name)] = _config_value(path, name, v)
    return flat


def _config_value(path: str, name: str, value: Any) -> Any:
    scalar = (str, int, float, bool)
    if isinstance(value, scalar) or isinstance(value, list) and all(isinstance(v, scalar) for v in value):
        return value
    what = "nothing (null)" if value is None else "a table" if isinstance(value, dict) else type(value).__name__
    raise ConfigError(f"config file {show_path(path)}: {name} must be a number, string, true / false or a list, "
                      f"got {what}")


def _as_set_value(value: Any) -> str:
    """A config file's value as ``--set`` would spell it (what the config's own parser reads)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return ",".join(_as_set_value(v) for v in value)
    return str(value) if not isinstance(value, float) else repr(value)


def apply_config_file(args: argparse.Namespace) -> argparse.Namespace:
    """``--config FILE``: its fields join ``--set`` (each ``--set`` wins over the file's value) and its ``task``,
    ``arch`` and ``preset`` stand where the options were not given (an option that contradicts the file: one
    line). ``compare`` runs both architectures, so a file's ``arch`` is not read there."""
    path = getattr(args, "config", None)
    if path is None:
        return args
    fields = read_config_file(path)
    given_now = given(args)
    for key, flag in NAMED_BY_FLAGS.items():
        if key not in fields:
            continue
        value = str(fields.pop(key))
        if key == "arch" and args.command == "compare":
            continue
        if key in given_now and getattr(args, key) != value:
            raise ConfigError(f"{flag} {getattr(args, key)} contradicts the config file's {key} = {value}: give it "
                              f"in one place")
        setattr(args, key, value)
        if key == "arch":  # as if given: a plugin's single architecture is not substituted for it
            args._given = given_now | {"arch"}
    typed = parse_sets(args.sets)
    pairs = [f"{k}={_as_set_value(v)}" for k, v in fields.items()
             if k not in typed and not (k in SILENT_DEFAULTS and v == SILENT_DEFAULTS[k])]
    args.sets = pairs + list(args.sets)
    return args


def config_document(config: Any) -> dict[str, Any]:
    """What ``config`` prints and ``config --out FILE`` writes: the envelope, the config and its hash."""
    return stamped({"config": config.to_dict(), "config_hash": config.config_hash}, "config")


def write_config(out: Path | None, config: Any) -> None:
    """``config``: the config written to ``out`` in its suffix's format (:func:`write_config_file`), or printed on
    stdout as JSON (:func:`config_document`) where ``out`` is None."""
    if out is not None:
        write_config_file(out, config)
    else:
        emit_json(config_document(config))


def write_config_file(path: Path, config: Any) -> None:
    """``config --out FILE``: the config as TOML, YAML or JSON (by the suffix), read back by ``--config FILE``."""
    doc = config_document(config)
    kind = config_format(path)
    if kind == "json":
        text = json.dumps(doc, indent=2) + "\n"
    elif kind == "yaml":
        import yaml

        text = yaml.safe_dump(doc, sort_keys=False, allow_unicode=True)
    else:
        text = toml_text(doc)
    write_text_atomically(path, text)


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)  # a JSON string is a TOML basic string
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    raise ConfigError(f"cannot write {type(value).__name__} to TOML")


def toml_text(doc: dict[str, Any], prefix: str = "") -> str:
    """``doc`` (nested tables of strings, numbers, booleans and lists of them) as TOML: its values, then each
    table under its dotted name (the standard library reads TOML but does not write it)."""
    scalars = [f"{k} = {_toml_value(v)}" for k, v in doc.items() if not isinstance(v, dict)]
    parts = ["\n".join(scalars)] if scalars else []
    for key, value in doc.items():
        if isinstance(value, dict):
            name = f"{prefix}{key}"
            parts.append(f"[{name}]\n" + toml_text(value, name + ".").rstrip("\n"))
    return "\n\n".join(parts) + "\n"
