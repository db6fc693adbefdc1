"""The `bisect` command line: one subcommand per module in `heisenbisect.commands`.

A subcommand is named after its module (``heisenbisect.commands.run`` is ``bisect run``), so
only the module of the command asked for is imported: ``bisect validate`` and ``bisect
--version`` never pay for scipy, statsmodels, matplotlib, rich or Ray. ``bisect --help``
(or an unknown command) imports them all to list them.
"""

from __future__ import annotations

import argparse
import errno
import logging
import os
import sys

from heisenbisect import __version__, signals
from heisenbisect.errors import DiskFullError, HeisenbisectError, SpecError
from heisenbisect.exit_codes import ExitCode, signal_exit_code
from heisenbisect.redaction import RedactingStream, Redactor, env_secrets, remember, remembered

# each module defines register(subparsers); its parser sets handler=fn(args) -> exit code
COMMANDS = (
    "heisenbisect.commands.run",
    "heisenbisect.commands.report",
    "heisenbisect.commands.validate",
    "heisenbisect.commands.stress",
    "heisenbisect.commands.factors",
    "heisenbisect.commands.suspects",
    "heisenbisect.commands.commits",
    "heisenbisect.commands.versions",
    "heisenbisect.commands.trial",
    "heisenbisect.commands.amplify",
    "heisenbisect.commands.watch",
)

EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, what a shell reports for `yes | head -1`


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Shows ``(default: X)`` unless the help already names its default, or there is none to show."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        nothing = (
            action.default is None
            or action.default is False
            or action.default == []
            or isinstance(action, argparse._CountAction)
        )
        if "(default" in text or nothing or action.default == argparse.SUPPRESS:
            return text
        return super()._get_help_string(action) or text


def command_name(module: str) -> str:
    return module.rsplit(".", 1)[-1]


def _add_common_options(parser: argparse.ArgumentParser, top: bool) -> None:
    """``--debug``, ``-q`` and ``-v``, accepted before the command and after it alike.

    On a subcommand their default is SUPPRESS, so an option given before the command is not
    reset by the subparser's defaults.
    """
    default = (lambda value: value) if top else (lambda value: argparse.SUPPRESS)
    present = set(parser._option_string_actions)
    if "--debug" not in present:
        parser.add_argument(
            "--debug", action="store_true", default=default(False), help="show tracebacks"
        )
    if "-q" not in present and "--quiet" not in present:
        parser.add_argument(
            "-q",
            "--quiet",
            dest="quiet",
            action="count",
            default=default(0),
            help="print less: results only",
        )
    if "-v" not in present and "--verbose" not in present:
        parser.add_argument(
            "-v",
            "--verbose",
            dest="verbose",
            action="count",
            default=default(0),
            help="print more (repeat for more)",
        )


def _requested_command(argv: list[str]) -> str | None:
    """The subcommand named on the line: the first word that is not an option (globals take no value)."""
    for word in argv:
        if word == "--":
            return None
        if not word.startswith("-"):
            return word
    return None


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The parser; given ``argv`` naming a known command, only that command's module is imported."""
    import importlib

    parser = argparse.ArgumentParser(
        prog="bisect",
        description="Find what drives a nondeterministic failure to zero.",
        formatter_class=HelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"heisenbisect {__version__}")
    _add_common_options(parser, top=True)
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    wanted = _requested_command(argv) if argv is not None else None
    modules = [m for m in COMMANDS if command_name(m) == wanted] or list(COMMANDS)
    if wanted is None and argv is not None and "--version" in argv:
        modules = []  # argparse prints the version and exits before it needs a command
    for name in modules:
        importlib.import_module(name).register(subparsers)
    for sub in subparsers.choices.values():
        sub.formatter_class = HelpFormatter
        _add_common_options(sub, top=False)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        return _main(argv)
    except BrokenPipeError:
        return _quiet_broken_pipe()


def parse(argv: list[str]) -> argparse.Namespace:
    """The parsed line, with ``verbosity``: the -v count minus the -q count."""
    args = build_parser(argv).parse_args(argv)
    args.verbosity = int(getattr(args, "verbose", 0) or 0) - int(getattr(args, "quiet", 0) or 0)
    return args


def _main(argv: list[str]) -> int:
    # every line printed masks the secrets of the environment and of any spec loaded (`redaction`)
    remember(Redactor().with_known(env_secrets(os.environ)))
    out, err = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = RedactingStream(out, remembered), RedactingStream(err, remembered)
    try:
        return _run(argv)
    finally:
        sys.stdout, sys.stderr = out, err


def _run(argv: list[str]) -> int:
    args = parse(argv)
    levels = (logging.ERROR, logging.WARNING, logging.INFO, logging.DEBUG)  # -q, plain, -v, -vv
    logging.basicConfig(
        format="%(levelname)s %(name)s: %(message)s",
        level=levels[max(-1, min(2, args.verbosity)) + 1],
    )
    try:
        with signals.stopping_on_signals():  # SIGTERM and SIGHUP stop a command as Ctrl-C does
            return args.handler(args)
    except BrokenPipeError:
        raise
    except HeisenbisectError as exc:
        if args.debug:
            raise
        if isinstance(exc, DiskFullError):
            from heisenbisect.commands.common import rerun_command

            exc = DiskFullError(f"{exc}; free space, then resume with: {rerun_command()}")
        print(str(exc) if isinstance(exc, SpecError) else f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt as exc:
        print("interrupted", file=sys.stderr)
        return signal_exit_code(signals.signal_of(exc))
    except OSError as exc:
        # SIGHUP: the terminal is gone, and its output
        if exc.errno == errno.EIO and (received := signals.received()) is not None:
            return signal_exit_code(received)
        if exc.errno not in DISK_ERRORS or args.debug:
            raise
        print(
            f"error: {exc.filename or 'writing'}: {exc.strerror}; free space or pick another --out",
            file=sys.stderr,
        )
        return ExitCode.USAGE


DISK_ERRORS = {
    errno.ENOSPC,
    errno.EDQUOT,
    errno.EROFS,
}  # the disk, not the program: one line, exit 2


def _quiet_broken_pipe() -> int:
    """The reader went away (``| head``): stop without a traceback, and without one at exit.

    Python flushes stdout again at exit; pointing it at /dev/null keeps that flush from
    raising a second BrokenPipeError (the recipe in the `signal` module's documentation).
    """
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    return EXIT_BROKEN_PIPE
