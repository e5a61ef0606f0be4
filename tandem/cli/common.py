"""Shared set-up of tandem's Hydra entry points."""

from __future__ import annotations

import argparse
import signal
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn, override

from tandem.core.errors import ConfigError, TandemError, did_you_mean
from tandem.core.output_folders import check_output_folder, remove_created_output_folders
from tandem.runtime.environment import prepare_runtime

#: The Hydra config tree shipped with the repository (``configs/``).
CONFIG_DIR = str(Path(__file__).resolve().parents[2] / "configs")


def to_container(cfg: Any) -> Any:
    """OmegaConf config -> plain JSON-safe dict (resolved)."""
    from omegaconf import OmegaConf

    return OmegaConf.to_container(cfg, resolve=True)


def fail(error: BaseException) -> None:
    """Print one clear line naming the problem and exit with status 2 (tandem errors) or 1 (anything else).

    A tandem error is refused input: the output folders this command made (:func:`make_output_folder`) are removed
    first, so that refused input leaves nothing behind.
    """
    from tandem.core.errors import TandemError

    if isinstance(error, TandemError):
        remove_created_output_folders()
        print(f"error: {error}", file=sys.stderr)
        sys.exit(2)
    raise error


#: The Hydra config of the running entry point (:func:`hydra_main`), written to ``<output folder>/.hydra``.
_HYDRA_CONFIG: list[Any] = []


def make_output_folder(path: str | Path, key: str | None = None) -> Path:
    """Create the output folder ``path`` once all input is validated
    (:func:`tandem.core.output_folders.create_output_folder`: removed again if the command then refuses its input,
    :func:`fail`), and write the Hydra config of the running entry point to ``<path>/.hydra`` and its log to
    ``<path>/<job>.log``, as Hydra would have.

    Args:
        path: the folder.
        key: the config key that names it (``out_dir``), for the one-line error.

    Raises:
        OutputFolderError: it cannot be created or a file cannot be written in it.
    """
    from tandem.core.output_folders import create_output_folder

    p = create_output_folder(path, key)
    _keep_hydra_record(p)
    return p


def _keep_hydra_record(folder: Path) -> None:
    """Write what Hydra writes into its run folder (``.hydra/{config,hydra,overrides}.yaml`` and the job's log
    file) into ``folder``, for an entry point of :func:`hydra_main`; nothing otherwise."""
    import logging

    from hydra.core.hydra_config import HydraConfig
    from omegaconf import OmegaConf

    if not _HYDRA_CONFIG or not HydraConfig.initialized():
        return
    hydra_cfg = HydraConfig.get()
    record = folder / ".hydra"
    record.mkdir(exist_ok=True)
    OmegaConf.save(_HYDRA_CONFIG[-1], record / "config.yaml")
    OmegaConf.save(OmegaConf.create({"hydra": hydra_cfg}), record / "hydra.yaml")
    OmegaConf.save(hydra_cfg.overrides.task, record / "overrides.yaml")
    log = logging.FileHandler(folder / f"{hydra_cfg.job.name}.log")
    log.setFormatter(logging.Formatter("[%(asctime)s][%(name)s][%(levelname)s] - %(message)s"))
    logging.getLogger().addHandler(log)


def load_config(schema: type, cfg: Any) -> Any:
    """The composed Hydra config as a checked instance of ``schema`` (every value validated before anything runs).

    Raises:
        ConfigError: an unknown key, a wrong type or a refused value, naming the full key.
    """
    from tandem.runtime.config import load

    return load(schema, cfg)


def synthetic_on(section: Any) -> bool:
    """Whether a ``dataset.synthetic`` section asks for a generated dataset: set, with ``episodes`` > 0.

    The training CLIs default the section to ``episodes: 0`` rather than null: OmegaConf cannot merge command-line keys
    (``dataset.synthetic.episodes=4``) into a null structured node, and failed with a traceback.

    Raises:
        FieldError: negative ``episodes`` (field ``synthetic.episodes``), so that a dataset section's check names it
            before anything else.
    """
    from tandem.runtime.config import FieldError

    if section is None:
        return False
    if int(section.episodes) < 0:
        raise FieldError("synthetic.episodes", f"must be >= 0 (0: no synthetic dataset), got {section.episodes}")
    return int(section.episodes) > 0


def one_dataset_source(given: dict[str, bool], missing: str) -> None:
    """Check that exactly one of a training CLI's dataset sources is set (``{"root": ..., "synthetic": ...}``, in
    the order the message lists them).

    Args:
        given: source name (a key of ``dataset``) -> whether the command line set it (:func:`synthetic_on` for
            ``synthetic``).
        missing: what ``dataset.root`` should name, for the message when none is set.

    Raises:
        FieldError: none set (field ``root``), or two (the second, naming the first; how to turn the synthetic
            dataset off).
    """
    from tandem.runtime.config import FieldError

    on = [name for name, is_set in given.items() if is_set]
    if not on:
        raise FieldError("root", f"is not set: pass dataset.root=<{missing}> (or a synthetic dataset: "
                                 "dataset.synthetic.episodes=N)")
    if len(on) > 1:
        raise FieldError(on[1], f"set together with dataset.{on[0]}: give one of {', '.join(given)} "
                                "(dataset.synthetic.episodes=0 turns the synthetic dataset off)")


def synthetic_dataset(root: str | Path, episodes: int, image_size: Any, make: Callable[[], Any]) -> str:
    """``root`` holding the synthetic dataset asked for: written by ``make()`` unless ``root`` already holds one (a
    run resumed in its ``output_dir``), which must then have ``episodes`` episodes of ``image_size`` [H, W] px images.

    Raises:
        ConfigError: ``root`` holds another synthetic dataset (named, with what it holds), instead of training on it
            silently. DatasetSchemaError: its ``meta/info.json`` is not JSON.
    """
    from executor_vla.dataset_writer import read_info
    from tandem.core.errors import ConfigError

    if not (Path(root) / "meta" / "info.json").is_file():
        make()
        return str(root)
    meta = read_info(root)
    sizes = sorted({tuple(f["shape"][:2]) for f in meta.get("features", {}).values()
                    if f.get("dtype") in ("image", "video")})
    want = tuple(int(v) for v in image_size)
    if meta.get("total_episodes") != int(episodes) or (sizes and sizes != [want]):
        raise ConfigError(f"{root} already holds a synthetic dataset of {meta.get('total_episodes')} episodes at "
                          f"{[list(s) for s in sizes]} px, not the {episodes} at {list(want)} asked for: use another "
                          "output_dir")
    return str(root)


def register_configs() -> None:
    """Store every config schema in Hydra's ConfigStore (the YAML files under ``configs/`` name them)."""
    from tandem.evaluation.config import register_configs as register_eval
    from tandem.runtime.config import register_configs as register_runtime

    register_runtime()
    register_eval()


def compose_config(config_name: str, overrides: list[str] | tuple[str, ...] = ()) -> Any:
    """Compose ``configs/<config_name>.yaml`` with ``overrides`` as the entry point would (schemas registered),
    outside a Hydra app: for tests, benchmarks and notebooks. Returns the OmegaConf config (not yet validated:
    pass it to :func:`load_config`).

    Raises:
        hydra.errors.ConfigCompositionException / omegaconf errors: a command line Hydra cannot compose.
    """
    from hydra import compose, initialize_config_dir

    register_configs()
    with initialize_config_dir(config_dir=CONFIG_DIR, version_base="1.3"):
        return compose(config_name=config_name, overrides=list(overrides))


def quiet_broken_pipe(main: Callable[..., None]) -> Callable[..., None]:
    """Wrap a command's ``main`` so that a reader closing its standard output early (``tandem-dataset inspect ... |
    head -1``) ends it quietly with status 0, as Unix tools do, instead of a ``BrokenPipeError`` traceback (the
    recipe of Python's ``signal`` docs: stdout is pointed at ``/dev/null`` so that the final flush cannot fail)."""
    import functools
    import os

    def flushed() -> None:
        try:
            sys.stdout.flush()
        except BrokenPipeError:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            sys.exit(0)

    @functools.wraps(main)
    def wrapped(*args: Any, **kwargs: Any) -> None:
        try:
            main(*args, **kwargs)
        except BrokenPipeError:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            sys.exit(0)
        except SystemExit:
            flushed()  # the exit status stands; only a closed reader's flush is quieted
            raise
        flushed()

    return wrapped


#: Keys whose values are free text (an instruction): quoted for Hydra, so that commas, brackets or quotes in the words
#: are read as words, not as Hydra's list or sweep syntax.
FREE_TEXT_KEYS: tuple[str, ...] = ("instruction",)


def quote_free_text(arg: str) -> str:
    """``instruction=put a, then b`` -> ``instruction="put a, then b"`` (Hydra's quoted string: ``"`` escaped, and the
    backslashes before a quote or the end doubled, as Hydra reads them); any other argument, or a value already quoted,
    is returned as it is."""
    import re

    key, sep, value = arg.partition("=")
    if not sep or key.lstrip("+~") not in FREE_TEXT_KEYS or value[:1] in ("'", '"'):
        return arg
    value = re.sub(r'(\\+)(?="|$)', lambda m: m.group(1) * 2, value)
    return f'{key}="' + value.replace('"', '\\"') + '"'


#: The suffix of the config-group entries that hold a schema (``planner/vlm_schema``): internal, never an option.
SCHEMA_SUFFIX = "_schema"


def group_options(group: str) -> list[str]:
    """The options of config group ``group`` (``planner`` -> ``instruction, learned, oracle, vlm``): its YAML files
    under ``configs/`` and its ConfigStore entries, without the internal ``*_schema`` entries; empty for a name that
    is no group."""
    from hydra.core.config_store import ConfigStore

    folder = Path(CONFIG_DIR) / group
    files = {f.stem for f in folder.glob("*.yaml")} if folder.is_dir() else set()
    node: Any = ConfigStore.instance().repo
    for part in group.split("/"):
        node = node.get(part) if isinstance(node, dict) else None
    stored = {name.removesuffix(".yaml") for name, v in node.items() if not isinstance(v, dict)} if isinstance(
        node, dict) else set()
    return sorted(o for o in files | stored if not o.endswith(SCHEMA_SUFFIX))


def unknown_option(group: str, option: str) -> ConfigError:
    """The one-line error for ``<group>=<option>`` where ``option`` is not one of the group's options (a schema
    entry such as ``learned_schema`` included)."""
    options = group_options(group)
    return ConfigError(f"{group}={option}: no such {group} option; options: {', '.join(options)}"
                       f"{did_you_mean(option, options)}")


def refuse_schema_options(overrides: list[str]) -> None:
    """Refuse a command line that picks an internal schema entry as a group option (``planner=learned_schema``):
    it would compose, and run a component with none of its option file's settings.

    Raises:
        ConfigError: naming the group, the option, the group's options and the closest one.
    """
    from hydra.core.override_parser.overrides_parser import OverridesParser

    for parsed in OverridesParser.create().parse_overrides(overrides):
        value = parsed.value()
        if isinstance(value, str) and value.endswith(SCHEMA_SUFFIX) and group_options(parsed.key_or_group):
            raise unknown_option(parsed.key_or_group, value)


def config_keys(node: Any, prefix: str = "") -> list[str]:
    """Every dotted key of an OmegaConf config (sections and leaves), e.g. ``["dart", "dart.sigma", ...]``."""
    from omegaconf import DictConfig

    keys = []
    if isinstance(node, DictConfig):
        for k in node:
            key = f"{prefix}.{k}" if prefix else str(k)
            keys.append(key)
            keys.extend(config_keys(node._get_node(k), key))
    return keys


def unknown_key(config_name: str, overrides: list[str], key: str) -> ConfigError:
    """The one-line error for an override of ``key``, which the config has not, with the closest key it has (of the
    config composed with the other overrides, else the bare config)."""
    from hydra.errors import HydraException

    others = [o for o in overrides if o.partition("=")[0].lstrip("+~") != key]
    try:
        known = config_keys(compose_config(config_name, others))
    except HydraException:
        known = config_keys(compose_config(config_name))
    parent, _, leaf = key.rpartition(".")
    if parent in known:  # a section the config has: the closest of its own keys
        siblings = [k.rpartition(".")[2] for k in known if k.rpartition(".")[0] == parent]
        return ConfigError(f"unknown config key {key}; known keys of {parent}: {', '.join(siblings)}"
                           f"{did_you_mean(leaf, siblings)}")
    return ConfigError(f"unknown config key {key}{did_you_mean(key, known)}")


def unreadable_override(overrides: list[str], error: Exception) -> ConfigError:
    """The one-line error for a command line Hydra's override grammar cannot read, naming the first override it
    cannot read (``seed=[1``) and why."""
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import OverrideParseException

    parser = OverridesParser.create()
    for arg in overrides:
        try:
            parser.parse_overrides([arg])
        except OverrideParseException as e:
            return ConfigError(f"cannot read {arg!r} (key=value): {str(e).strip().splitlines()[0]}")
    return ConfigError(str(error).strip().splitlines()[0])


def composition_error(config_name: str, overrides: list[str], error: Exception) -> ConfigError:
    """Hydra's composition error for ``overrides`` as one line: an unknown group option (the group, the option,
    the options and the closest one), an unknown key (the closest key), or the key and what was wrong with it."""
    import re

    from hydra.errors import MissingConfigException, OverrideParseException

    if isinstance(error, OverrideParseException):
        return unreadable_override(overrides, error)
    if isinstance(error, MissingConfigException) and error.missing_cfg_file and "/" in error.missing_cfg_file:
        group, _, option = error.missing_cfg_file.rpartition("/")
        return unknown_option(group, option)
    missing = re.match(r"Could not override '([^']+)'|Could not delete from config\. '([^']+)' does not exist",
                       str(error))
    if missing:
        return unknown_key(config_name, overrides, missing.group(1) or missing.group(2))
    inner = error.__cause__ if error.__cause__ is not None else error
    key = getattr(inner, "full_key", None)
    message = (str(inner).strip().splitlines() or [type(inner).__name__])[0]
    return ConfigError(f"config key {key}: {message}" if key else message)


def compose_command_line(config_name: str, overrides: list[str]) -> Any:
    """:func:`compose_config`, with every reason Hydra cannot compose a command line as one line.

    Raises:
        ConfigError: an internal schema picked as an option, an unknown group option or key (with the closest one),
            a value of the wrong type, an override Hydra cannot parse.
    """
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    try:
        refuse_schema_options(overrides)
        return compose_config(config_name, overrides)
    except (HydraException, OmegaConfBaseException) as e:
        raise composition_error(config_name, overrides, e) from None


def refuse_bad_command_line(config_name: str, overrides: list[str], check: Callable[[Any], Any] | None) -> None:
    """Compose and check the command line's config before Hydra runs the command (Hydra creates the run's output
    folder, its ``.hydra`` copy of the config and its log before the command starts): bad input exits with status 2
    and one line naming the key, and nothing is written. Command lines with Hydra's own flags (``--help``, ``--cfg``,
    ``-m``) are left to Hydra."""
    if any(a.startswith("-") for a in overrides):
        return
    try:
        cfg = compose_command_line(config_name, overrides)
        if check is not None:
            check(cfg)
    except TandemError as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)


def hydra_main(config_name: str, check: Callable[[Any], Any] | None = None
               ) -> Callable[[Callable[[Any], None]], Callable[[], None]]:
    """``hydra.main`` bound to the repository's ``configs/`` folder, over the registered schemas.

    Args:
        config_name: the primary config (``demo``, ``bridge/sim_loopback``).
        check: validates the composed config as the command does (e.g. ``load_config`` with its schema), raising
            a :class:`~tandem.core.errors.TandemError` on bad input; None: composition alone is checked.

    A command line that Hydra cannot compose (an unknown key, a value of the wrong type, an unknown config group
    option or an internal ``*_schema`` entry), or whose config ``check`` refuses, is bad input: the entry point
    prints one line (``error: ...``, with the closest key or option), exits with status 2 and writes nothing
    (:func:`refuse_bad_command_line`).

    Where a config sets ``hydra.run.dir: .``, ``hydra.output_subdir: null`` and no log file, Hydra itself writes
    nothing: the command makes its output folder with :func:`make_output_folder` once its input is validated, which
    writes Hydra's record of the run there.
    """
    import functools

    import hydra

    register_configs()

    def deco(fn: Callable[[Any], None]) -> Callable[[], None]:
        entered = []

        @functools.wraps(fn)
        def task(cfg: Any) -> None:
            entered.append(True)
            _HYDRA_CONFIG.append(cfg)
            fn(cfg)

        hydra_task = hydra.main(config_path=CONFIG_DIR, config_name=config_name, version_base="1.3")(task)

        @functools.wraps(fn)
        def main() -> None:
            sys.argv[1:] = [quote_free_text(a) for a in sys.argv[1:]]
            refuse_bad_command_line(config_name, sys.argv[1:], check)
            try:
                hydra_task()
            except SystemExit as e:
                if e.code == 1 and not entered:  # Hydra could not compose the config: bad input
                    sys.exit(2)
                raise

        return main

    return deco


class ArgumentParser(argparse.ArgumentParser):
    """``argparse.ArgumentParser`` whose refusals follow the bad-input rule of every tandem command: ONE line on
    stderr (``error: <prog>: <what>``, with the closest option to a mistyped one), exit status 2, no usage block.
    ``--help`` still prints the usage. Sub-parsers (``add_subparsers``) are of this class too."""

    @override
    def error(self, message: str) -> NoReturn:  # type: ignore[override]
        import re

        unknown = re.match(r"unrecognized arguments: (\S+)", message)
        hint = ""
        if unknown and unknown.group(1).startswith("-"):
            options = [o for a in self._actions for o in a.option_strings if o.startswith("--")]
            hint = did_you_mean(unknown.group(1), options)
        print(f"error: {self.prog}: {' '.join(message.split())}{hint}", file=sys.stderr)
        sys.exit(2)


def int_at_least(low: int) -> Callable[[str], int]:
    """An argparse ``type``: an integer >= ``low`` (``--max-rows -1`` is refused naming the option)."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer >= {low}, got {text!r}") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"expected an integer >= {low}, got {value}")
        return value

    parse.__name__ = f"integer >= {low}"
    return parse


def exit_with(run: Callable[[Sequence[str]], int], argv: Sequence[str] | None = None) -> None:
    """Run a ``key=value`` command's ``run`` on ``argv`` (``sys.argv[1:]`` by default) and exit with the status it
    returns; a :class:`~tandem.core.errors.TandemError` is bad input: one line, exit 2, nothing written (:func:`fail`)."""
    from tandem.core.errors import TandemError

    try:
        code = run(sys.argv[1:] if argv is None else argv)
    except TandemError as e:
        fail(e)
    sys.exit(code)


def stop_on_signals() -> None:
    """Make SIGTERM (``kill``, a job scheduler's pre-emption) and SIGINT raise KeyboardInterrupt in the main thread,
    so that a collection, an evaluation or a merge keeps what it finished (or leaves nothing half-written) and stops
    as on Ctrl-C (exit status 130).

    SIGINT is re-armed too: a non-interactive shell starts background jobs (``cmd &``) with SIGINT ignored, and
    Python keeps that disposition, so ``kill -INT`` would otherwise do nothing.
    """
    def _interrupt(signum: int, _frame: object) -> None:
        raise KeyboardInterrupt(signal.Signals(signum).name)

    signal.signal(signal.SIGTERM, _interrupt)
    signal.signal(signal.SIGINT, _interrupt)


__all__ = ["CONFIG_DIR", "ArgumentParser", "check_output_folder", "compose_command_line", "compose_config", "exit_with", "fail",
           "hydra_main", "int_at_least", "load_config", "make_output_folder", "prepare_runtime", "refuse_bad_command_line", "register_configs",
           "remove_created_output_folders", "stop_on_signals", "to_container"]
