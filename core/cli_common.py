"""The CLI's reusable pieces (:mod:`core.cli`): the parser that refuses in one line
(:class:`OneLineErrorParser`), options given once (:class:`Once`), :func:`guarded` (every fixable
failure one ``error: ...`` line and exit status 2, Ctrl-C 130: :class:`CtrlC`), :func:`emit_json`,
:func:`parse_sets` / :func:`check_named_sets` (``--set key=value``), :func:`out_folder`.

Imports only the light floors (no torch), like :mod:`core.cli`: its subcommands import the library
inside their functions, after the arguments are checked."""
from __future__ import annotations

import argparse
import errno
import json
import os
import signal
import sys
import threading
from pathlib import Path
from typing import Any, Callable, NoReturn, Sequence

from core.foundations.errors import ConfigError, MIAError, OutputPathError
from core.foundations.fileio import show_path

#: printed (alone) when a run is interrupted with Ctrl-C
INTERRUPTED = "interrupted; cached models are kept"


#: exit status of an interrupted run (128 + SIGINT, as shells report it)
EXIT_INTERRUPTED = 130


#: exit status of every error the user can fix
EXIT_ERROR = 2


class OneLineErrorParser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one ``error: ...`` line (exit 2), like the library's.

    argparse prints its whole usage block before the message; for an unknown ``--task`` that
    buries the one line that matters. ``--help`` still shows the usage.
    """

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_ERROR, f"error: {message} (see {self.prog} --help)\n")


class Once(argparse.Action):
    """Store an option's value, refusing a second occurrence: with argparse's default the last of
    ``--task image --task translation`` wins silently, which hides a typo (as with ``--set``)."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        given = getattr(namespace, "_given", None)
        if given is None:
            given = set()
            setattr(namespace, "_given", given)
        if self.dest in given:
            parser.error(f"{option_string} given twice ({option_string} {getattr(namespace, self.dest)}, "
                         f"{option_string} {values}): give it once")
        given.add(self.dest)
        setattr(namespace, self.dest, values)


def positive_int(text: str) -> int:
    """argparse type: an integer ≥ 1 (``--workers 0`` used to be clamped to 1 silently)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def emit_json(obj: Any) -> None:
    """Print ``obj`` as JSON on stdout and flush, so that a full disk or a closed stdout is reported
    here (one line) rather than as "Exception ignored" when Python exits."""
    try:
        print(json.dumps(obj, indent=2))
        sys.stdout.flush()
    except BrokenPipeError:
        raise
    except OSError as exc:
        full = exc.errno in (errno.ENOSPC, errno.EDQUOT)
        reason = f"the disk is full ({exc.strerror})" if full else (exc.strerror or str(exc))
        raise OutputPathError(f"cannot write the JSON to stdout: {reason}") from None


def one_line(exc: BaseException) -> str:
    """The exception's message on one line (newlines would break the one-line contract)."""
    return " ".join(str(exc).split()) or type(exc).__name__


class CtrlC:
    """A Ctrl-C that cannot be lost. Python's default handler raises ``KeyboardInterrupt`` wherever
    the main thread is, and an exception raised inside a finalizer or inside code a library runs
    under a catch-all is dropped ("Exception ignored in …"), so a run could go on after Ctrl-C.
    This handler also remembers it, and every progress report (:meth:`check`) raises it again."""

    pending = False

    @classmethod
    def handler(cls, signum: int, frame: Any) -> None:
        cls.pending = True
        raise KeyboardInterrupt

    @classmethod
    def check(cls) -> None:
        if cls.pending:
            raise KeyboardInterrupt


def guarded(command: Callable[..., int], *args: Any, **kwargs: Any) -> int:
    """Run a CLI command and turn expected failures into an exit status.

    :class:`MIAError` → ``error: <message>`` and 2; Ctrl-C (KeyboardInterrupt) → the one line
    :data:`INTERRUPTED` and 130 (finished cache entries are committed atomically, so nothing
    half-written is left). Anything else is a bug and keeps its traceback.
    """
    previous = None
    # only where Ctrl-C would interrupt anyway: a parent that set SIGINT to be ignored keeps it so
    if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        previous = signal.signal(signal.SIGINT, CtrlC.handler)
    try:
        return command(*args, **kwargs)
    except KeyboardInterrupt:
        print(INTERRUPTED, file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # `python -m core run ... | head`: the reader left, nothing to report
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except MIAError as exc:
        print(f"error: {one_line(exc)}", file=sys.stderr)
        return EXIT_ERROR
    finally:
        CtrlC.pending = False
        if previous is not None:
            signal.signal(signal.SIGINT, previous)


def parse_sets(pairs: Sequence[str]) -> dict[str, str]:
    """``["k=v", ...]`` → ``{k: v}``; a pair without ``=``, an empty key or a key given twice is a
    :class:`ConfigError` (silently keeping the last of two values hides a typo)."""
    out: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ConfigError(f"--set expects key=value, got {pair!r}")
        if key in out:
            raise ConfigError(f"--set {key} given twice ({key}={out[key]}, {key}={value.strip()}): give each key once")
        out[key] = value.strip()
    return out


#: config keys that name what ``--task``/``--arch``/``--preset`` already chose
NAMED_BY_FLAGS = {"task": "--task", "arch": "--arch", "preset": "--preset"}


def check_named_sets(sets: dict[str, str], args: argparse.Namespace) -> dict[str, str]:
    """``sets`` without keys that repeat ``--task``/``--arch``/``--preset``; a key that
    contradicts its flag (``--task image --set task=translation``) is a :class:`ConfigError`."""
    out = dict(sets)
    for key, flag in NAMED_BY_FLAGS.items():
        if key in out:
            if out[key] != getattr(args, key):
                raise ConfigError(f"--set {key}={out[key]} contradicts {flag} {getattr(args, key)}: choose the {key} with {flag}")
            del out[key]
    return out


def out_folder(text: str, create: bool = True) -> Path:
    """The folder ``analyze --out DIR`` writes into, created (with its parents) if missing, as
    users expect of an output folder (``create=False``: only checked). A path that exists and is
    not a folder — a file, a device, or a symbolic link (even to a folder: the files would land
    where the link points) — is an :class:`OutputPathError`, as is one that cannot be created."""
    if not text or not text.strip() or "\x00" in text:
        raise OutputPathError(f"--out {show_path(text)} is not a valid folder name")
    try:
        folder = Path(text).expanduser().absolute()
    except RuntimeError:  # "~nosuchuser/dir"
        raise OutputPathError(f"cannot write into {show_path(text)}: no such user's home directory") from None
    try:
        if folder.is_symlink():
            raise OutputPathError(f"--out {show_path(text)} is a symbolic link; give a folder (links are not followed)")
        if folder.exists() and not folder.is_dir():
            raise OutputPathError(f"--out {show_path(text)} exists and is not a folder; give a folder (it is created if missing)")
    except OutputPathError:
        raise
    except OSError as exc:  # a name longer than the system allows, …
        raise OutputPathError(f"--out {show_path(text)}: {exc.strerror or exc}") from None
    if not create:
        return folder
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputPathError(f"cannot create the folder {show_path(text)}: {exc.strerror or exc}") from None
    return folder


def given(args: argparse.Namespace) -> set[str]:
    """The options given on the command line (recorded by :class:`Once`), by their ``dest``."""
    return set(getattr(args, "_given", set()))


# ---------------------------------------------------------------------------- the JSON the commands write
def write_result(out: Path | None, obj: Any, schema: str) -> None:
    """``obj`` with its envelope (:func:`core.foundations.version.stamped`: layout ``schema`` and the package
    version) written to ``out``, or printed on stdout where ``out`` is None."""
    from core.foundations.fileio import write_json_atomically
    from core.foundations.version import stamped

    stamped_obj = stamped(obj, schema)
    if out is not None:
        write_json_atomically(out, stamped_obj)
    else:
        emit_json(stamped_obj)


# ---------------------------------------------------------------------------- progress
class Progress:
    """The CLI's progress: a bar (tqdm) where stderr is a terminal, plain lines where it is not (CI, a pipe, a
    log file: a bar's carriage returns would fill it with partial lines), nothing with ``--quiet``. Each report
    also checks for a pending Ctrl-C (:meth:`CtrlC.check`). Call it with a
    :class:`core.foundations.progress.ProgressEvent` (``progress(ev)``), or :meth:`stage` with a stage's name and
    fraction; :meth:`say` prints a line without breaking the bar; :meth:`close` ends the bar."""

    def __init__(self, quiet: bool = False, stream: Any = None) -> None:
        self.quiet = quiet
        self.stream = stream if stream is not None else sys.stderr
        self._bar: Any = None
        self._last_stage: str | None = None
        isatty = getattr(self.stream, "isatty", None)
        self.tty = bool(isatty and isatty())

    #: the bar's resolution (steps of the whole run)
    STEPS = 1000

    def _update(self, overall: float, text: str) -> None:
        if self._bar is None:
            from tqdm import tqdm

            self._bar = tqdm(total=self.STEPS, file=self.stream, unit="‰", dynamic_ncols=True, leave=True,
                             bar_format="{l_bar}{bar}| {elapsed}<{remaining}")
        self._bar.set_description_str(text, refresh=False)
        self._bar.update(max(0, min(self.STEPS, round(overall * self.STEPS))) - self._bar.n)

    def __call__(self, ev: Any) -> None:
        CtrlC.check()
        if self.quiet:
            return
        if self.tty:
            self._update(ev.overall_fraction, f"{ev.stage}: {ev.stage_fraction:.0%}")
            return
        eta = f", ~{ev.eta_s:.0f}s left" if ev.eta_s is not None else ""
        print(f"[{ev.overall_fraction:6.1%}] {ev.stage}: {ev.stage_fraction:.0%}{eta}", file=self.stream)

    def stage(self, stage: str, fraction: float, prefix: str = "analyze") -> None:
        """A stage and its fraction (``analyze``): the bar follows the fraction; as lines, one per new stage."""
        CtrlC.check()
        if self.quiet:
            return
        if self.tty:
            self._update(fraction, stage)
        elif stage != self._last_stage or fraction >= 1.0:
            print(f"[{prefix}] {stage}", file=self.stream)
        self._last_stage = stage

    def say(self, text: str) -> None:
        if self.quiet:
            return
        if self._bar is not None:
            self._bar.write(text, file=self.stream)
        else:
            print(text, file=self.stream)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None


# ---------------------------------------------------------------------------- config files
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
    from core.foundations.version import stamped

    return stamped({"config": config.to_dict(), "config_hash": config.config_hash}, "config")


def write_config_file(path: Path, config: Any) -> None:
    """``config --out FILE``: the config as TOML, YAML or JSON (by the suffix), read back by ``--config FILE``."""
    from core.foundations.fileio import write_text_atomically

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
