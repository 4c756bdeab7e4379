"""A LangGraph API server for every codeforest graph on PostgreSQL and Redis, without Docker.

    python -m codeforest.pg_server --port 2024 --database-uri postgres://... --redis-uri redis://...

Start as many processes as you like (on one machine or several) against the same database and Redis: they
share the threads, runs and queue, each runs ``--jobs`` runs at once, and runs of a process that dies are
taken over by the others once its heartbeat expires. It needs the ``server-pg`` extra
(``langgraph-runtime-pg``, beta, which pins its own ``langgraph-api``) in an environment of its own, since
``langgraph-cli[inmem]`` wants another ``langgraph-api``.
"""

from __future__ import annotations

import argparse


def registered_graphs() -> dict[str, str]:
    """Graph name -> ``module:attribute``, as in langgraph.json (the registry is the source of both)."""
    from codeforest.registry import GRAPHS

    return {name: f"{module}:graph" for name, module in GRAPHS.items()}


def main(argv: list[str] | None = None) -> None:
    """Run one server process in the foreground."""
    parser = argparse.ArgumentParser(prog="python -m codeforest.pg_server", description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=2024)
    parser.add_argument("--database-uri", required=True, help="postgres://user@host:port/db?sslmode=disable")
    parser.add_argument("--redis-uri", required=True, help="redis://host:port")
    parser.add_argument("--jobs", type=int, default=4, help="runs this process executes at once (default 4)")
    parser.add_argument("--log-level", default="WARNING")
    args = parser.parse_args(argv)
    try:
        from langgraph_api.cli import run_server
    except ImportError as exc:
        from codeforest.tools import install_hint

        raise SystemExit("codeforest.pg_server needs the server-pg extra in its own environment: "
                         f"{install_hint('server-pg')}") from exc
    run_server(host=args.host, port=args.port, graphs=registered_graphs(), n_jobs_per_worker=args.jobs,
               runtime_edition="pg", __redis_uri__=args.redis_uri, __database_uri__=args.database_uri,
               __migrations_path__="", server_level=args.log_level)


if __name__ == "__main__":
    main()
