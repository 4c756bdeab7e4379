"""Run configuration: the ``context_schema`` of every graph.

Each field can be overridden by an environment variable ``CODEFOREST_<FIELD>`` (upper case) when it
is left at its default, in the style of the LangGraph react-agent template. Nothing is read at
import time: the environment is consulted when a ``Context`` is created.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields

ENV_PREFIX = "CODEFOREST_"


@dataclass(kw_only=True)
class Context:
    """Model, sandbox, prompts and search settings for one run."""

    model: str = field(default="local", metadata={
        "description": "'local' (embedded Qwen2.5-Coder-1.5B), 'small' (embedded 0.5B), a path to a .gguf "
                       "file (served by the embedded llama.cpp server), or a model name at `base_url`."})
    base_url: str = field(default="", metadata={
        "description": "An OpenAI-compatible endpoint (OpenAI, vLLM, Ollama, llama.cpp). Empty: embedded model."})
    api_key_env: str = field(default="OPENAI_API_KEY", metadata={
        "description": "Name of the environment variable holding the endpoint's API key (never the key itself)."})
    temperature: float = field(default=0.0, metadata={"description": "Sampling temperature (papers: 0)."})
    max_tokens: int = field(default=1024, metadata={"description": "Completion token limit per model call."})
    request_timeout: float = field(default=600.0, metadata={"description": "Seconds to wait for one model call."})
    n_ctx: int = field(default=8192, metadata={"description": "Context window of the embedded model server."})
    structured_output: bool = field(default=True, metadata={
        "description": "Ask the endpoint for JSON-schema-constrained answers where an agent expects structure."})
    server_slots: int = field(default=1, metadata={
        "description": "Parallel request slots of the embedded model server (the bench sets its concurrency)."})
    cache_path: str = field(default="", metadata={
        "description": "SQLite file caching model responses; an identical rerun then costs no model calls."})
    sandbox: str = field(default="local", metadata={"description": "Sandbox backend: 'local' or 'e2b'."})
    test_timeout: float = field(default=5.0, metadata={"description": "Seconds per test during search."})
    prompts_dir: str = field(default="", metadata={
        "description": "A folder of prompt YAML files overriding the packaged ones, file by file."})
    kb_path: str = field(default="", metadata={"description": "Folder of the Chroma knowledge base."})

    # CodeTree (SPEC-codetree-bester-codeprm.md §1): the paper's and released code's defaults.
    codetree_max_programs: int = field(default=20, metadata={
        "description": "CodeTree budget: Solver + Debugger programs per problem (paper: 20)."})
    codetree_max_depth: int = field(default=3, metadata={"description": "CodeTree maximum tree depth (3)."})
    codetree_width: int = field(default=10, metadata={
        "description": "CodeTree cap on strategies / reflections per node (10); the exact count in the BFS/DFS "
                       "variants (codetree_critic=false; the paper's Table 3 uses 3)."})
    codetree_order: str = field(default="dfs", metadata={
        "description": "'dfs': last-in first-out, as the released agent_guide; 'bfs': level by level, children "
                       "of higher-valued nodes first (Table 3's CodeTree-BFS)."})
    codetree_critic: bool = field(default=True, metadata={
        "description": "False: Table 3's variants without the Critic (fixed width, stop at the first program "
                       "passing the visible tests, no value-based abort)."})
    codetree_final: str = field(default="best", metadata={
        "description": "Program returned when nothing is accepted: 'best' (highest value, as the paper says) or "
                       "'last_failing' (what the released code returns)."})

    # RethinkMCTS (SPEC-rethinkmcts-rpm-mcts.md Part 1): the paper's defaults; released-code values as options.
    rethink_rollouts: int = field(default=16, metadata={"description": "RethinkMCTS budget: rollouts (16)."})
    rethink_width: int = field(default=3, metadata={"description": "RethinkMCTS children per expansion (3)."})
    rethink_c_base: float = field(default=10.0, metadata={"description": "P-UCB c_base (10, from PG-TD)."})
    rethink_c: float = field(default=4.0, metadata={"description": "P-UCB exploration weight c (4)."})
    rethink_reward_a: float = field(default=0.8, metadata={"description": "Reward weight a of v_test (0.8)."})
    rethink_reward_b: float = field(default=0.2, metadata={"description": "Reward weight b of v_llm (0.2)."})
    rethink_gamma: float = field(default=1.0, metadata={
        "description": "Discount per level in backpropagation: 1.0 (the paper), 0.9 (the released code)."})
    rethink_max_rethinks: int = field(default=1, metadata={
        "description": "Rethinks per node (the released code: 1)."})
    rethink_concurrency: int = field(default=1, metadata={
        "description": "1: one rollout at a time (the paper). N > 1: after an expansion, up to N of the new "
                       "children are evaluated at once (Send), each counting as a rollout; set the endpoint's "
                       "parallel slots (server_slots) to match."})
    rethink_rethink: bool = field(default=True, metadata={"description": "Ablation: false = w/o rethink."})
    rethink_verbal_feedback: bool = field(default=True, metadata={
        "description": "Ablation: false = w/o verbal feedback (scalar reward only)."})
    rethink_block_info: bool = field(default=True, metadata={
        "description": "Ablation: false = verbal feedback without the block-level analysis."})
    rethink_self_eval: bool = field(default=True, metadata={
        "description": "Ablation: false = w/o self-evaluation (reward = v_test)."})

    # BESTER (SPEC-codetree-bester-codeprm.md §2): the paper's defaults.
    bester_depth: int = field(default=2, metadata={"description": "BESTER depth N: rounds of repairs (2)."})
    bester_width: int = field(default=5, metadata={
        "description": "BESTER k: self-reflections, each with one repair, per round (5)."})
    bester_reflection_temperature: float = field(default=0.8, metadata={
        "description": "Sampling temperature of the self-reflections (0.8); programs and repairs are greedy."})
    bester_loop: str = field(default="rounds", metadata={
        "description": "'rounds': the initial program, then N rounds of k reflections -> k repairs -> select "
                       "(1 + 2Nk = 21 calls, the paper's count; the SPEC's reading). 'literal': Algorithm 1 "
                       "as printed, N iterations of generate -> select -> reflect, so N-1 repair rounds (its "
                       "last reflections are never used and not requested: 11 calls)."})
    bester_selection: str = field(default="most_tests", metadata={
        "description": "Which repair a round keeps: 'most_tests' passed (the paper; ties: earliest) or "
                       "'random' (Table 5's ablation; seeded by the problem id and round)."})
    bester_final: str = field(default="best", metadata={
        "description": "Program returned when none passes every public test: 'best' over the whole search "
                       "(ties: earliest) or 'last_round' (the paper's pseudocode: the last round's choice)."})
    bester_concurrency: int = field(default=1, metadata={
        "description": "Reflections / repairs requested at once (LangGraph Send); results do not depend on "
                       "it. The embedded server gets as many parallel slots."})

    def __post_init__(self) -> None:
        for f in fields(self):
            env = os.environ.get(ENV_PREFIX + f.name.upper())
            if env is not None and getattr(self, f.name) == f.default:
                setattr(self, f.name, _convert(env, f.type, f.name))


def _convert(raw: str, type_name: object, name: str) -> object:
    kind = type_name if isinstance(type_name, str) else getattr(type_name, "__name__", "str")
    try:
        if kind == "bool":
            if raw.strip().lower() in ("1", "true", "yes", "on"):
                return True
            if raw.strip().lower() in ("0", "false", "no", "off", ""):
                return False
            raise ValueError(raw)
        if kind == "int":
            return int(raw)
        if kind == "float":
            return float(raw)
    except ValueError as exc:
        raise ValueError(f"{ENV_PREFIX}{name.upper()}={raw!r} is not a valid {kind}") from exc
    return raw
