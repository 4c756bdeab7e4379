"""``codeforest data``: the benchmarks codeforest knows, downloaded into the user cache and checked."""

from __future__ import annotations

import argparse
import json

from rich.markup import escape

from codeforest.cli.common import err


def register(sub) -> None:
    """Add ``data list``, ``data fetch`` and ``data verify`` to the ``codeforest`` subparsers."""
    data = sub.add_parser("data", help="benchmark datasets: list them, fetch them from their pinned sources, verify")
    data_sub = data.add_subparsers(dest="data_command", required=True)
    listing = data_sub.add_parser("list", help="every dataset: problems, style, pinned source, licence, where cached")
    listing.add_argument("--json", action="store_true", help="one JSON object per dataset on stdout")
    listing.add_argument("--data-dir", help="a data folder of your own, which wins over the cache")
    listing.set_defaults(func=cmd_list)
    fetch = data_sub.add_parser("fetch", help="download datasets into the user cache, checked by sha256")
    fetch.add_argument("names", nargs="+", metavar="NAME", help="dataset names (see `codeforest data list`)")
    fetch.set_defaults(func=cmd_fetch)
    verify = data_sub.add_parser("verify", help="re-hash the cached files against their pinned or recorded sha256")
    verify.add_argument("names", nargs="*", metavar="NAME", help="only these datasets (default: every cached one)")
    verify.set_defaults(func=cmd_verify)


def cmd_list(args: argparse.Namespace) -> int:
    """Print every dataset with its source, licence and where it is on this machine."""
    from codeforest.datasets import DATASETS, locate, pins
    from codeforest.loading import find_data_dir

    folder = find_data_dir(args.data_dir)
    recorded = pins()
    rows = []
    for info in DATASETS.values():
        where = [locate(file, folder) for file in info.files]
        rows.append({"name": info.name, "problems": info.problems, "style": info.style,
                     "sources": [file.origin for file in info.files],
                     "sha256": [file.sha256 or recorded.get(file.local, {}).get("sha256") for file in info.files],
                     "recorded_at_first_fetch": {file.local: recorded[file.local] for file in info.files
                                                 if not file.sha256 and file.local in recorded},
                     "licence": info.licence,
                     "bytes": [p.stat().st_size if p else file.size for file, p in zip(info.files, where, strict=True)],
                     "cached": all(where), "paths": [str(p) if p else None for p in where], "note": info.note})
    if args.json:
        for row in rows:
            print(json.dumps(row))
        return 0
    for row in rows:
        print(f"{row['name']}  {row['problems']} problems, {row['style']}")
        for source in row["sources"]:
            print(f"  source   {source}")
        for local, pin in row["recorded_at_first_fetch"].items():
            print(f"  pinned   {local} at its first fetch: revision {pin['revision']}, sha256 {pin['sha256']}")
        print(f"  licence  {row['licence']}")
        if None not in row["bytes"]:
            print(f"  size     {sum(row['bytes']):,} bytes")
        found = [p for p in row["paths"] if p]
        if row["cached"]:
            print(f"  here     {found[0]}" + (f" (+{len(found) - 1} files)" if len(found) > 1 else ""))
        else:
            print(f"  here     not yet: codeforest data fetch {row['name']}")
    return 0


def cmd_fetch(args: argparse.Namespace) -> int:
    """Download the named datasets' files that are not cached yet, then prepare what a format needs."""
    from rich.progress import BarColumn, DownloadColumn, Progress, TransferSpeedColumn

    from codeforest.fetch import fetch_dataset, resolve_names

    infos = resolve_names(args.names)
    with Progress("{task.description}", BarColumn(), DownloadColumn(), TransferSpeedColumn(), console=err,
                  transient=True) as bar:
        tasks: dict[str, int] = {}

        def progress(name: str, done: int, total: int | None) -> None:
            if name not in tasks:
                tasks[name] = bar.add_task(name, total=total)
            bar.update(tasks[name], completed=done, total=total)

        for info in infos:
            for fetched in fetch_dataset(info, progress=progress):
                state = "downloaded" if fetched.downloaded else "already cached"
                err.print(f"{info.name}: {fetched.file.local} {state}, sha256 {fetched.sha256} ({fetched.path})")
                if fetched.recorded:
                    err.print(f"  first fetch: no hash is pinned for {escape(fetched.file.origin)}; this sha256 (and "
                              "the revision it came from) is recorded and checked from now on")
    for info in infos:
        prepare(info)
    return 0


def prepare(info) -> None:
    """What a dataset needs beyond its files: EvalPlus's expected outputs, computed once in the sandbox."""
    if info.format in ("humaneval_plus", "mbpp_plus"):
        from codeforest.loading import load_dataset

        tasks = load_dataset(info.name)
        err.print(f"{info.name}: {len(tasks)} problems ready (expected outputs from the reference solutions)")


def cmd_verify(args: argparse.Namespace) -> int:
    """Re-hash what is cached; exit 1 when a file differs from its pinned or recorded hash."""
    from codeforest.fetch import resolve_names, verify

    results = verify(resolve_names(args.names) if args.names else None)
    if not results:
        err.print("nothing is cached yet: codeforest data fetch NAME")
        return 0
    changed = 0
    for result in results:
        if result.status == "changed":
            changed += 1
            err.print(f"[red]changed[/red] {result.path}: sha256 {result.sha256}, expected {result.expected} "
                      f"({escape(result.file.origin)}); `codeforest data fetch {result.dataset}` downloads it again")
        else:
            print(f"{result.status:9} {result.sha256}  {result.path}")
    return 1 if changed else 0
