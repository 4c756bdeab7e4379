"""``codeforest mcp``: every graph as a tool of an MCP server on stdin/stdout."""

from __future__ import annotations

import argparse

from rich.markup import escape

from codeforest.cli.common import SETTINGS_EPILOG, add_context_args, context_from_args, err

MISSING_SDK = 'codeforest mcp needs the MCP SDK: pip install -e ".[mcp]" (from a clone)'


def register(sub) -> None:
    """Add the mcp command to the ``codeforest`` subparsers."""
    mcp = sub.add_parser("mcp", help="serve every graph as a tool to an MCP client over stdio",
                         description="An MCP server on stdin/stdout, started by an MCP client: one tool per graph. "
                                     "The flags are the settings every call starts from; a call's own settings "
                                     "override them.", epilog=SETTINGS_EPILOG)
    add_context_args(mcp, data=False)
    mcp.set_defaults(func=cmd_mcp)


def cmd_mcp(args: argparse.Namespace) -> int:
    """Serve the tools until the client closes stdin."""
    defaults = context_from_args(args).model_dump(exclude_unset=True)  # a wrong flag fails before serving
    try:
        from codeforest.mcp_server import build_server
    except ModuleNotFoundError as exc:
        if (exc.name or "").split(".")[0] not in ("mcp", "mcp_types"):
            raise
        err.print(f"[red]error:[/red] {escape(MISSING_SDK)}")
        return 2
    build_server(defaults).run("stdio")
    return 0
