"""``codeforest kb``: build the RPM-MCTS knowledge base, reclassify its topics, look into it."""

from __future__ import annotations

import argparse
import json
import os
import textwrap
import time
from pathlib import Path

from rich.console import Console

from codeforest.cli.common import add_cache_arg, add_context_args, context_from_args, err, positive_int
from codeforest.problems import DatasetError
from codeforest.tools.kb_topics import TOPICS


def register(sub) -> None:
    """Add the kb command and its build, retopic, query and sanity subcommands to the ``codeforest`` subparsers."""
    kb = sub.add_parser("kb", help="the RPM-MCTS knowledge base: build it, look into it")
    kb_sub = kb.add_subparsers(dest="kb_command", required=True)
    build = kb_sub.add_parser("build", help="steps of reference solutions (model calls, resumable), then embeddings")
    build.add_argument("--from", dest="sources", action="append", default=[], metavar="DATASET",
                       help="a function-style dataset with reference solutions, e.g. mbpp500 (repeat for several)")
    build.add_argument("--from-steps", nargs="?", const="", metavar="FILE",
                       help="embed a steps JSONL written earlier, no model calls (no FILE: the packaged steps)")
    build.add_argument("--out", help="the knowledge-base folder (default: the user cache's default KB)")
    build.add_argument("--steps", help="the steps JSONL to write and resume (default: <out>/steps.jsonl)")
    build.add_argument("--limit", type=positive_int, help="write the steps of at most N more problems")
    add_cache_arg(build, "<out>/responses.sqlite")
    add_embedder_args(build)
    add_context_args(build, search=False)
    build.set_defaults(func=cmd_kb_build)
    retopic = kb_sub.add_parser("retopic", help="reclassify a steps file's topics with RPM-MCTS's own topic call "
                                                 "(model calls, resumable); then `kb build --from-steps FILE`")
    retopic.add_argument("--steps", required=True, help="the steps JSONL to rewrite")
    add_context_args(retopic, search=False, data=False)
    retopic.set_defaults(func=cmd_kb_retopic)
    query = kb_sub.add_parser("query", help="the stored step prefixes nearest to a text")
    query.add_argument("text", help="a problem, optionally followed by steps")
    query.add_argument("--kb", help="the knowledge-base folder (default: the default KB)")
    query.add_argument("--topic", choices=TOPICS, metavar="TOPIC",
                       help=f"only documents of this topic: {', '.join(TOPICS)}")
    query.add_argument("-k", type=positive_int, default=3, help="how many prefixes to show (default 3)")
    add_embedder_args(query)
    query.set_defaults(func=cmd_kb_query)
    sanity = kb_sub.add_parser("sanity", help="how often a reworded stored problem finds itself top-1")
    sanity.add_argument("--kb", help="the knowledge-base folder (default: the default KB)")
    sanity.add_argument("--steps", help="the steps JSONL it was built from (default: the packaged steps)")
    sanity.add_argument("--limit", type=positive_int, default=50, help="problems to reword (default 50)")
    add_embedder_args(sanity)
    sanity.set_defaults(func=cmd_kb_sanity)


def add_embedder_args(parser: argparse.ArgumentParser) -> None:
    """The embedder options (the kb_embedder settings)."""
    parser.add_argument("--embedder", default="wordllama", metavar="SPEC",
                        help="'wordllama' (bundled, offline; the default), 'openai:MODEL' (an OpenAI-compatible "
                             "/v1/embeddings) or 'MODULE:NAME' (a LangChain Embeddings)")
    parser.add_argument("--embedder-base-url", default="", metavar="URL", help="the /v1 endpoint of openai:MODEL")
    parser.add_argument("--embedder-api-key-env", default="OPENAI_API_KEY", metavar="VAR",
                        help="the variable holding its API key (default OPENAI_API_KEY)")


def embedder_from_args(args: argparse.Namespace):
    """The embedder the options name."""
    from codeforest.tools.knowledge import embedder

    return embedder(args.embedder, args.embedder_base_url, args.embedder_api_key_env)


def existing_steps(path: str | os.PathLike) -> Path:
    """A steps file named on the command line, which must exist (a steps file that is written and resumed need
    not)."""
    path = Path(path)
    if not path.is_file():
        raise DatasetError(f"No steps file {path}")
    return path


def cmd_kb_build(args: argparse.Namespace) -> int:
    """Write steps with the model (resumable) and embed them, or embed a steps file; report what the KB holds."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from codeforest.kb import write_steps
    from codeforest.tools.knowledge import PACKAGED_STEPS, KnowledgeBase, default_kb_path, read_steps

    if not args.sources and args.from_steps is None:
        raise ValueError("give --from DATASET (model calls) or --from-steps [FILE] (embeddings only)")
    embeddings = embedder_from_args(args)
    out = Path(args.out) if args.out else default_kb_path(embeddings)
    steps = Path(args.from_steps or PACKAGED_STEPS) if args.from_steps is not None else \
        Path(args.steps or out / "steps.jsonl")
    if args.from_steps:
        existing_steps(steps)
    if args.sources:
        context = context_from_args(args)
        if args.cache is not None:
            context.cache_path = args.cache or str(out / "responses.sqlite")
        started = time.monotonic()
        with Progress(TextColumn("steps"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                      TextColumn("{task.fields[last]}"), console=err) as bar:
            task = bar.add_task("steps", total=None, last="")

            def on_step(record: dict, i: int, total: int) -> None:
                line = f"{record['source']} {record['id']}: {len(record['steps'])} steps, {record['topic']}"
                bar.update(task, total=total, completed=i, last=line)
                err.print(f"{line}, {record['tokens']} tokens, {time.monotonic() - started:.0f} s  [{i}/{total}]")

            written = write_steps(args.sources, steps, context, data_dir=args.data_dir, limit=args.limit,
                                  on_step=on_step)
        err.print(f"wrote the steps of {written} problems to {steps} in {time.monotonic() - started:.0f} s")
    records = read_steps(steps)
    started = time.monotonic()
    kb = KnowledgeBase(out, embeddings, create=True)
    added = kb.add(records)
    err.print(f"embedded {added} new problems in {time.monotonic() - started:.1f} s; {out} holds "
              f"{len(kb.manifest.get('problems', {}))} problems ({kb.manifest.get('documents', 0)} step prefixes) "
              f"from {', '.join(kb.manifest.get('datasets', [])) or 'nothing yet'}")
    return 0


def cmd_kb_retopic(args: argparse.Namespace) -> int:
    """Give every record of a steps file the topic the search's own classifier picks (resumable)."""
    from codeforest.kb import retopic

    existing_steps(args.steps)
    context = context_from_args(args)
    started = time.monotonic()

    def on_record(record: dict, i: int, total: int) -> None:
        err.print(f"{record['source']} {record['id']}: {record['topic']} (steps call: {record['steps_topic']}), "
                  f"{time.monotonic() - started:.0f} s  [{i}/{total}]")

    done = retopic(args.steps, context, on_record=on_record)
    err.print(f"reclassified {done} problems of {args.steps} in {time.monotonic() - started:.0f} s")
    return 0


def cmd_kb_query(args: argparse.Namespace) -> int:
    """Print the nearest stored step prefixes with their similarity and metadata."""
    from codeforest.tools.knowledge import open_knowledge

    kb = open_knowledge(args.kb, embedder_from_args(args))  # the default KB: built from the packaged steps at first
    out = Console(highlight=False)
    for hit in kb.search(args.text, k=args.k, topic=args.topic):
        out.print(f"[bold]{hit['similarity']:.3f}[/bold]  {hit['source']} {hit['problem_id']} "
                  f"({hit['topic']}, {hit['pre_steps_num']} steps)")
        out.print(textwrap.indent(hit["document"][-400:], "    "), markup=False)
    return 0


def cmd_kb_sanity(args: argparse.Namespace) -> int:
    """Print the retrieval sanity of a knowledge base (reworded problems finding themselves top-1)."""
    from codeforest.kb import retrieval_sanity
    from codeforest.tools.knowledge import PACKAGED_STEPS, open_knowledge, read_steps

    steps = existing_steps(args.steps) if args.steps else PACKAGED_STEPS
    # the default KB follows the packaged steps first (their topics may have moved)
    kb = open_knowledge(args.kb, embedder_from_args(args))
    result = retrieval_sanity(kb, read_steps(steps), limit=args.limit)
    print(json.dumps(result))
    return 0
