"""The ``codeforest`` command line: one module per group of commands, each adding its own subparsers."""

from __future__ import annotations

import argparse
import os
import sys
from importlib.metadata import version

from rich.markup import escape

from codeforest.cli import bench, data, kb, mcp, prm, serve, solve, speed
from codeforest.cli.common import err

EXIT_INTERRUPTED = 130  # 128 + SIGINT, as a shell reports it
COMMAND_GROUPS = (solve, bench, data, speed, kb, prm, serve, mcp)  # the order of the commands in --help


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``codeforest`` command."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "command", None):
        parser.print_help()
        return 2
    from codeforest.registry import unknown_env_settings
    from codeforest.tools.redaction import redact

    for name in unknown_env_settings():  # the name only: a value may be a secret
        err.print(f"[yellow]note:[/yellow] {name} names no setting of any graph and is ignored (the settings: the "
                  "documentation's Settings page)")
    try:
        return args.func(args)
    except Exception as exc:
        if not isinstance(exc, user_errors()):
            raise
        err.print(f"[red]error:[/red] {escape(redact(one_line(exc)))}")
        return 2
    except KeyboardInterrupt:
        err.print("interrupted")
        return EXIT_INTERRUPTED


def user_errors() -> tuple[type[Exception], ...]:
    """The errors a command reports in one line (exit status 2), not as a traceback: a user's input, a model or
    service that fails, a file named on the command line, a full disk. Imported when an error happens, so the
    command line does not load every module to start."""
    from codeforest.agents.base import ModelFault
    from codeforest.bench import RunnerLost
    from codeforest.problems import DatasetError
    from codeforest.prompts import PromptError
    from codeforest.tools.knowledge import KnowledgeError
    from codeforest.tools.models import ModelError
    from codeforest.tools.sandbox_e2b import SandboxServiceError
    from codeforest.workers import InUse

    return (DatasetError, ModelError, ModelFault, PromptError, SandboxServiceError, InUse, KnowledgeError,
            RunnerLost, ValueError, OSError)


def entry() -> None:
    """The ``codeforest`` console script: ``main``, then its exit status. After Ctrl-C the process ends at once
    rather than wait for the problems still being searched on worker threads (their answered model calls are in
    the response cache, and a rerun of bench or collect-prm starts them again)."""
    code = main()
    if code == EXIT_INTERRUPTED:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)


def one_line(exc: BaseException) -> str:
    """An error for the user: a settings error as ``field: reason`` for each wrong field (not pydantic's dump of
    every input value, which may hold a secret), anything else as its text."""
    from pydantic import ValidationError

    if not isinstance(exc, ValidationError):
        return str(exc)
    reasons = []
    for error in exc.errors():
        field, reason = ".".join(map(str, error["loc"])), error["msg"].removeprefix("Value error, ")
        reasons.append(f"{field}: {reason}" if field else reason)
    return "; ".join(reasons)


class Parser(argparse.ArgumentParser):
    """argparse's parser, whose mistakes are the error and a pointer to ``--help`` rather than the whole usage
    block above the error (a command's usage runs to 20 lines)."""

    def error(self, message: str):
        """Print the error and where the options are, then exit with status 2."""
        self.exit(2, f"{self.prog}: error: {message}\nsee: {self.prog} --help\n")


def build_parser() -> argparse.ArgumentParser:
    """The ``codeforest`` argument parser with every command."""
    parser = Parser(prog="codeforest", description="Tree-search code-generation agents.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {version('codeforest')}")
    sub = parser.add_subparsers(dest="command")
    for group in COMMAND_GROUPS:
        group.register(sub)
    return parser
