"""The knowledge base: a real Chroma collection on disk with the offline default embeddings; the steps writer
against a scripted endpoint; the kb commands."""

from __future__ import annotations

import json
import logging
import types

import pytest
from langchain_core.embeddings import Embeddings

from codeforest.agents.thinker import parse_steps, parse_topic
from codeforest.cli import main
from codeforest.kb import interleaved, topic_source, write_steps
from codeforest.prompts import load_prompt
from codeforest.tools.kb_topics import TOPICS
from codeforest.tools.knowledge import (
    KnowledgeBase,
    KnowledgeError,
    embeddings_name,
    fingerprint,
    prefix_documents,
    read_steps,
)
from tests.fake_openai import FakeOpenAI

RECORDS = [
    {"id": "K/1", "source": "mine", "topic": "Sorting and Searching",
     "prompt": "Given a list of integers, return the k largest values in descending order.",
     "steps": ["Step 1: Sort the list in descending order.", "Step 2: Take the first k values.",
               "Step 3: Return them as a new list."]},
    {"id": "K/2", "source": "mine", "topic": "Dynamic Programming",
     "prompt": "Count the number of ways to climb a staircase of n steps taking 1 or 2 steps at a time.",
     "steps": ["Step 1: Let ways[0] = ways[1] = 1.", "Step 2: For i from 2 to n, ways[i] = ways[i-1] + ways[i-2].",
               "Step 3: Return ways[n]."]},
    {"id": "K/3", "source": "other", "topic": "String Processing",
     "prompt": "Return the string with its vowels removed.",
     "steps": ["Step 1: Walk over the characters.", "Step 2: Keep those not in 'aeiouAEIOU'.",
               "Step 3: Join the kept characters."]},
]
for record in RECORDS:
    record["fingerprint"] = fingerprint(record["prompt"])


class LetterCountEmbeddings(Embeddings):
    """A LangChain embedder of this test module, named by ``kb_embedder='tests.test_knowledge:letter_counts'``."""

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [[1.0 + t.lower().count(c) for c in "abcdefghijklmnopqrstuvwxyz"] for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]


def letter_counts() -> Embeddings:
    return LetterCountEmbeddings()


NOT_AN_EMBEDDER = 42


@pytest.fixture(scope="module")
def kb(tmp_path_factory):
    base = KnowledgeBase(tmp_path_factory.mktemp("kb"), create=True)
    assert base.add(RECORDS) == 3 and base.add(RECORDS) == 0  # a second add stores nothing twice
    return base


def test_every_step_prefix_is_a_document_with_its_metadata(kb):
    docs = prefix_documents(RECORDS[1])
    assert [d[2]["pre_steps_num"] for d in docs] == [1, 2, 3]
    assert docs[1][1] == RECORDS[1]["prompt"] + "\n" + "\n".join(RECORDS[1]["steps"][:2])
    assert docs[0][2] == {"problem_id": "K/2", "source": "mine", "topic": "Dynamic Programming", "pre_steps_num": 1}
    assert kb.collection.count() == 9 and kb.manifest["datasets"] == ["mine", "other"]
    assert kb.collection.metadata["hnsw:space"] == "cosine"


def test_reward_is_the_best_cosine_within_the_topic(kb):
    exact = RECORDS[0]["prompt"] + "\n" + "\n".join(RECORDS[0]["steps"][:2])
    assert kb.reward(exact, "Sorting and Searching") == pytest.approx(1.0, abs=1e-4)
    reworded = "Given a list of numbers, give back the k biggest values, largest first.\nStep 1: Sort descending."
    top = kb.search(reworded, k=1)[0]
    assert top["problem_id"] == "K/1" and 0 < top["similarity"] < 1
    assert kb.reward(reworded, "Dynamic Programming") < kb.reward(reworded, "Sorting and Searching")
    assert kb.reward(reworded, "Graph Theory") == 0.0  # no document of that topic


def test_sibling_similarities_and_membership(kb):
    sims = kb.similarities(["Sort the list in descending order.", "Sort the list in decreasing order.",
                            "Count the vowels of the string."])
    assert sims.shape == (3, 3) and sims[0, 1] > 0.85 > sims[0, 2]
    assert kb.holds(RECORDS[2]["fingerprint"]) == {"id": "K/3", "source": "other", "topic": "String Processing"}
    assert kb.holds(fingerprint("  Return the string   with its vowels removed. ")) is not None  # whitespace aside
    assert kb.holds(fingerprint("Another problem.")) is None


def test_langchain_retriever_over_the_collection(kb):
    docs = kb.as_retriever(k=2, topic="Dynamic Programming").invoke("ways to climb stairs, 1 or 2 at a time")
    assert len(docs) == 2 and {d.metadata["problem_id"] for d in docs} == {"K/2"}


def test_reopening_checks_the_embedder_and_existence(kb, tmp_path):
    class Other:
        name = "another-embedder"

    with pytest.raises(KnowledgeError, match="built with embeddings 'wordllama"):
        KnowledgeBase(kb.path, embeddings=Other())
    with pytest.raises(KnowledgeError, match="No knowledge base at .*codeforest kb build"):
        KnowledgeBase(tmp_path / "none")
    assert KnowledgeBase(kb.path).collection.count() == 9


def test_steps_and_topic_parsing():
    text = "<step>Step 1: Read it.</step>\n<step>Step 2:\n  Use ```python\nx = 1``` a set.</step>\n<topic>graph theory"
    assert parse_steps(text) == ["Step 1: Read it.", "Step 2: Use a set."] and parse_topic(text) == "Graph Theory"
    assert parse_steps("Step 1: a\n**Step 2:** b") == ["Step 1: a", "Step 2: b"] and parse_topic("none") is None
    assert len(TOPICS) == 14


def test_steps_writer_resumes_and_interleaves(tmp_path, fixtures):
    data = tmp_path / "data"
    data.mkdir()
    lines = (fixtures / "functions.jsonl").read_text().splitlines()
    (data / "one.jsonl").write_text("\n".join(lines[:2]) + "\n")
    (data / "two.jsonl").write_text(lines[2] + "\n")
    assert [(p["source"], p["id"]) for p in interleaved([str(data / "one.jsonl"), str(data / "two.jsonl")])] == [
        (str(data / "one.jsonl"), "Mini/1"), (str(data / "two.jsonl"), "Mini/3"), (str(data / "one.jsonl"), "Mini/2")]
    reply = "<step>Step 1: Take x.</step><step>Step 2: Add one.</step><step>Step 3: Return it.</step>" \
            "<topic>Mathematics and Number Theory</topic>"
    topic = "It adds numbers. <topic>Data Structures</topic>"
    api = FakeOpenAI([reply, topic, "I cannot.", "no idea", reply, topic])
    steps = tmp_path / "steps.jsonl"
    try:
        from codeforest.context import Context

        context = Context(base_url=api.url, model="fake")
        sources = [str(data / "one.jsonl"), str(data / "two.jsonl")]
        assert write_steps(sources, steps, context, limit=2) == 2
        with open(steps, "a") as f:
            f.write('{"id": "Mini/2", "sou')  # killed in the middle of a write
        assert write_steps(sources, steps, context) == 1 and len(api.requests) == 6
        assert write_steps(sources, steps, context) == 0  # resumed: nothing left
    finally:
        api.close()
    records = read_steps(steps)
    assert [r["id"] for r in records] == ["Mini/1", "Mini/3", "Mini/2"]
    # the topic is the search's own topic call's (on the problem alone); the steps call's is kept beside it
    assert records[0]["topic"] == "Data Structures" and records[0]["steps_topic"] == "Mathematics and Number Theory"
    assert records[0]["topic_from"] == topic_source(load_prompt("thinker_rpm")) and len(records[0]["steps"]) == 3
    assert records[1]["steps"] == [] and records[1]["topic"] == "Other"  # unreadable topic: the fallback
    assert records[0]["fingerprint"] == fingerprint(records[0]["prompt"])
    assert "Correct code" in api.requests[0]["messages"][0]["content"]  # the reference solution was shown
    topic_prompt = api.requests[1]["messages"][0]["content"]
    assert "select the most relevant topic" in topic_prompt and "Correct code" not in topic_prompt
    assert records[0]["prompt"] in topic_prompt


def test_retopic_reclassifies_old_records_resumably_and_the_kb_follows(tmp_path, capsys):
    """A steps file whose topics came from the steps call gets the search's topic call's; a rebuilt KB moves the
    stored prefixes to the new topic without embedding them again."""
    from codeforest.context import Context
    from codeforest.kb import retopic

    steps = tmp_path / "steps.jsonl"
    steps.write_text("".join(json.dumps(r) + "\n" for r in RECORDS))
    base = KnowledgeBase(tmp_path / "kb", create=True)
    base.add(read_steps(steps))
    api = FakeOpenAI(["<topic>Data Structures</topic>", "<topic>Dynamic Programming</topic>",
                      "<topic>Hashing Techniques</topic>", "<topic>Data Structures</topic>"])
    try:
        context = Context(base_url=api.url, model="fake")
        assert retopic(steps, context) == 3
        assert main(["kb", "retopic", "--steps", str(steps), "--base-url", api.url, "--model", "fake"]) == 0
        assert "reclassified 0 problems" in capsys.readouterr().err and len(api.requests) == 3  # all done
        # a record classified by another wording of the topic prompt is classified again
        records = read_steps(steps)
        records[2]["topic_from"] = "thinker_rpm.topic"
        steps.write_text("".join(json.dumps(r) + "\n" for r in records))
        assert retopic(steps, context) == 1 and len(api.requests) == 4
    finally:
        api.close()
    records = read_steps(steps)
    assert [r["topic"] for r in records] == ["Data Structures", "Dynamic Programming", "Data Structures"]
    assert [r["steps_topic"] for r in records] == [r["topic"] for r in RECORDS]
    assert records[0]["steps"] == RECORDS[0]["steps"]  # nothing else changed
    query = RECORDS[0]["prompt"] + "\n" + RECORDS[0]["steps"][0]
    assert base.reward(query, "Sorting and Searching") == pytest.approx(1.0, abs=1e-4)
    assert base.add(records) == 0  # nothing new to embed, two problems moved
    assert base.reward(query, "Sorting and Searching") == 0.0
    assert base.reward(query, "Data Structures") == pytest.approx(1.0, abs=1e-4)
    assert base.collection.count() == 9 and KnowledgeBase(base.path).holds(RECORDS[0]["fingerprint"])["topic"] == \
        "Data Structures"


def test_lines_that_are_not_step_records_are_skipped_with_a_warning_unless_a_kill_cut_the_last(tmp_path, caplog):
    steps = tmp_path / "steps.jsonl"
    good = json.dumps({"id": "A/1", "steps": ["Step 1: x."]})
    steps.write_text(f"{good}\n{{\"id\": \"A/2\", \"sou\n")
    with caplog.at_level(logging.WARNING, logger="codeforest.kb"):
        assert [r["id"] for r in read_steps(steps)] == ["A/1"]
    assert not caplog.records
    steps.write_text(f"\nnot json\n{good}\n[1]\n{{\"id\": \"A/3\"}}\n{good}\n")  # line numbers count blank lines
    with caplog.at_level(logging.WARNING, logger="codeforest.kb"):
        assert [r["id"] for r in read_steps(steps)] == ["A/1", "A/1"]
    assert "skipped 3 lines that are not step records" in caplog.text and "the first line 2" in caplog.text


def test_kb_commands_build_from_steps_and_query(tmp_path, capsys):
    steps = tmp_path / "steps.jsonl"
    steps.write_text("".join(json.dumps(r) + "\n" for r in RECORDS))
    out = tmp_path / "kb"
    assert main(["kb", "build", "--from-steps", str(steps), "--out", str(out)]) == 0
    assert "embedded 3 new problems" in capsys.readouterr().err
    assert main(["kb", "query", "climbing stairs with steps of one or two", "--kb", str(out), "-k", "1"]) == 0
    assert "K/2" in capsys.readouterr().out
    assert main(["kb", "build", "--out", str(out)]) == 2
    assert "give --from DATASET" in capsys.readouterr().err


def test_the_default_kb_is_built_from_the_packaged_steps_and_follows_them(tmp_path, monkeypatch):
    from codeforest.tools import knowledge as kb_module

    steps = tmp_path / "packaged.jsonl"
    steps.write_text(json.dumps(RECORDS[0]) + "\n")
    monkeypatch.setenv("CODEFOREST_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(kb_module, "PACKAGED_STEPS", steps)
    monkeypatch.setattr(kb_module, "_opened", {})
    first = kb_module.open_knowledge()
    assert first.path == tmp_path / "cache" / "kb" / "default" and first.collection.count() == 3
    steps.write_text("".join(json.dumps(r) + "\n" for r in RECORDS))  # a newer release ships more steps
    monkeypatch.setattr(kb_module, "_opened", {})
    assert kb_module.open_knowledge().collection.count() == 9
    steps.write_text("")
    monkeypatch.setattr(kb_module, "_opened", {})
    monkeypatch.setenv("CODEFOREST_CACHE", str(tmp_path / "empty"))
    with pytest.raises(KnowledgeError, match="codeforest kb build.*rpm_kb=false"):
        kb_module.open_knowledge()


def test_a_second_process_reopens_the_kb_with_no_network(kb):
    """Another process, in a network namespace of its own (no interface but loopback, which is down), reopens the
    collection from disk and queries it with the offline default embedder, leaving the root logger as it found it
    (wordllama's import configures it to INFO, which logged every HTTP request of a run)."""
    import subprocess
    import sys

    script = ("from codeforest.tools.knowledge import KnowledgeBase\n"
              f"hit = KnowledgeBase({str(kb.path)!r}).search('ways to climb a staircase one or two at a time', k=1)\n"
              "print(hit[0]['problem_id'], round(hit[0]['similarity'], 3))\n"
              "import logging\n"
              "print(len(logging.getLogger().handlers), logging.getLogger().level)")
    import os

    isolate = ["unshare", "--net"] + (["--map-root-user"] if os.getuid() != 0 else [])
    done = subprocess.run([*isolate, sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "HF_HUB_OFFLINE": "0"})
    assert done.returncode == 0, done.stderr[-2000:]
    problem_id, similarity, root_handlers, root_level = done.stdout.split()
    assert problem_id == "K/2" and 0 < float(similarity) <= 1
    assert (root_handlers, root_level) == ("0", str(logging.WARNING))


def test_retrieval_sanity_counts_reworded_problems_found_top1(kb, tmp_path, capsys):
    from codeforest.kb import retrieval_sanity, reworded

    assert reworded("One two three four five. Six seven.") == "Six seven. One three four five"  # 4th word dropped
    result = retrieval_sanity(kb, RECORDS)
    assert result["problems"] == 3 and result["top1_in_topic"] == 3 and 2 <= result["top1_any_topic"] <= 3
    steps = tmp_path / "steps.jsonl"
    steps.write_text("".join(json.dumps(r) + "\n" for r in RECORDS))
    assert main(["kb", "sanity", "--kb", str(kb.path), "--steps", str(steps)]) == 0
    assert json.loads(capsys.readouterr().out)["problems"] == 3


def test_the_guard_finds_a_stored_problem_by_text_by_id_or_reworded_but_not_a_sibling(kb):
    assert kb.duplicate_of(RECORDS[0]["prompt"])["why"] == "the same text"
    assert kb.duplicate_of("Find the k biggest numbers, biggest first.", "K/1")["why"] == "the same problem id"
    reworded = RECORDS[1]["prompt"].replace("n steps taking", "N steps, taking")  # text 0.994, cosine 0.995
    near = kb.duplicate_of(reworded, "X/9")
    assert (near["id"], near["why"][:16]) == ("K/2", "a near-duplicate")
    assert kb.duplicate_of("Return the string with its consonants removed.", "X/10") is None  # text 0.86
    assert kb.duplicate_of("Sum the digits of a number.", "X/11") is None


@pytest.mark.parametrize(("problem_id", "held", "why"), [
    ("APPS/3917", "CodeContests/1190", "a near-duplicate (text 0.956, cosine 0.98"),
    ("APPS/1726", "APPS/1726", "the same problem id"), ("APPS/334", "APPS/334", "the same problem id")])
def test_the_default_kb_refuses_the_apps_stdio_problems_it_holds_under_other_datasets(problem_id, held, why,
                                                                                      data_dir, tmp_path):
    """apps_stdio150's APPS/3917 is codecontests150's CodeContests/1190 reworded (text and cosine over both
    thresholds); APPS/1726 and APPS/334 are apps_interview150's, written as functions there."""
    from codeforest.loading import load_problem
    from codeforest.tools.knowledge import PACKAGED_STEPS

    base = KnowledgeBase(tmp_path / "kb", create=True)
    base.add(r for r in read_steps(PACKAGED_STEPS) if r["id"] in ("CodeContests/1190", "APPS/1726", "APPS/334",
                                                                  "MBPP/50", "APPS/2414"))
    problem = load_problem("apps_stdio150", problem_id, data_dir)
    found = base.duplicate_of(problem.problem["prompt"], problem.id)
    assert found["id"] == held and found["why"].startswith(why)
    sibling = load_problem("mbpp500", "MBPP/393", data_dir)  # max_length_list beside the KB's min_length_list
    assert base.duplicate_of(sibling.problem["prompt"], sibling.id) is None


def test_kb_embedder_builds_and_queries_through_an_openai_compatible_endpoint_and_no_other(tmp_path):
    """openai:MODEL embeds over HTTP (here the bundled WordLlama behind /v1/embeddings); the KB records that
    embedder and refuses WordLlama itself, and the default KB of another embedder lives in its own folder."""
    from codeforest.tools.knowledge import WordLlamaEmbeddings, default_kb_path, embedder, open_knowledge

    local = WordLlamaEmbeddings()
    with FakeOpenAI([], embed=local.embed_documents) as endpoint:
        remote = embedder("openai:wl-256", endpoint.url, "NO_SUCH_KEY_VARIABLE")
        base = KnowledgeBase(tmp_path / "kb", remote, create=True)
        assert base.add(RECORDS) == 3 and base.manifest["embeddings"] == "wl-256"
        hit = base.search(RECORDS[2]["prompt"], k=1)[0]
        assert hit["problem_id"] == "K/3" and endpoint.requests[-1]["model"] == "wl-256"
        reworded = RECORDS[1]["prompt"].replace("n steps taking", "N steps, taking")
        assert base.duplicate_of(reworded, "X/1")["id"] == "K/2"
        assert open_knowledge(tmp_path / "kb", remote).collection.count() == 9
        assert default_kb_path(remote).name == "default-wl-256" and default_kb_path(local).name == "default"
    with pytest.raises(KnowledgeError, match="built with embeddings 'wl-256'"):
        KnowledgeBase(tmp_path / "kb", local)
    with pytest.raises(KnowledgeError, match="use 'wordllama', 'openai:MODEL' or 'MODULE:NAME'"):
        embedder("bge")
    assert isinstance(embedder("codeforest.tools.knowledge:WordLlamaEmbeddings"), WordLlamaEmbeddings)
    # a sentence-transformers model is told apart by its model_name, one class serving many models
    assert embeddings_name(types.SimpleNamespace(model_name="BAAI/bge-base-en-v1.5")) == "BAAI/bge-base-en-v1.5"


def test_kb_embedder_takes_any_langchain_embeddings_by_module_and_name_and_refuses_anything_else(tmp_path):
    """MODULE:NAME: a function making an Embeddings (or the object itself) is the KB's embedder, which the KB
    records by class name and holds to; a name that is no Embeddings, or that cannot be imported, is refused."""
    from codeforest.tools.knowledge import WordLlamaEmbeddings, embedder

    made = embedder("tests.test_knowledge:letter_counts")
    assert type(made) is LetterCountEmbeddings and embedder("tests.test_knowledge:letter_counts") is made
    base = KnowledgeBase(tmp_path / "kb", made, create=True)
    assert base.add(RECORDS) == 3 and base.manifest["embeddings"] == "LetterCountEmbeddings"
    assert base.search(RECORDS[2]["prompt"], k=1)[0]["problem_id"] == "K/3"
    with pytest.raises(KnowledgeError, match="built with embeddings 'LetterCountEmbeddings'"):
        KnowledgeBase(tmp_path / "kb", WordLlamaEmbeddings())
    with pytest.raises(KnowledgeError, match="is a int, not a LangChain Embeddings"):
        embedder("tests.test_knowledge:NOT_AN_EMBEDDER")
    with pytest.raises(KnowledgeError, match="cannot import nothing from tests.test_knowledge"):
        embedder("tests.test_knowledge:nothing")
