"""Run configuration: a shared base ``Context`` and one subclass per search method.

Each graph's ``context_schema`` is its own class (``CodeTreeContext`` in ``graphs/codetree.py`` ...), so
LangGraph Studio shows only the settings that apply to it. Every field is validated when a context is
built: a bad value fails with the field's name and what it accepts, before any model call. Each field
can be set by an environment variable ``CODEFOREST_<FIELD>`` (upper case) when it is not given, in the
style of the LangGraph react-agent template. Nothing is read at import time.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, field_validator, model_validator

from codeforest.model_names import counted_name
from codeforest.roles import ROLE_NAMES

ENV_PREFIX = "CODEFOREST_"
C = TypeVar("C", bound="Context")


def shown_model(model: str) -> str:
    """A model as records and labels show it: a .gguf path by its file name, never its path."""
    return os.path.basename(model) if model.endswith(".gguf") else model


def environment_roles() -> dict[str, RoleModel] | None:
    """The ``roles`` the environment gives every run (``CODEFOREST_ROLES``), or None (unset or unreadable: a run
    that reads it says why)."""
    raw = os.environ.get(ENV_PREFIX + "ROLES")
    try:
        return None if raw is None else TypeAdapter(dict[str, RoleModel]).validate_json(raw)
    except ValidationError:
        return None


class RoleModel(BaseModel):
    """The model one role talks to: a model name at an endpoint (embedded when ``base_url`` is empty)."""

    model_config = ConfigDict(extra="forbid")

    model: str = Field(min_length=1, description=(
        "A model name at `base_url`, or embedded ('local', 'small', a .gguf path) when that is empty."))
    base_url: str = Field(default="", description="Its OpenAI-compatible endpoint (empty: embedded).")
    api_key_env: str = Field(default="", description=(
        "Name of the environment variable holding the endpoint's key (empty: the run's `api_key_env`)."))
    temperature: float | None = Field(default=None, ge=0.0, le=2.0, description=(
        "Its sampling temperature (none: what the calling graph asks for)."))
    max_tokens: int | None = Field(default=None, ge=-1, description=(
        "Its completion token limit (none: the run's `max_tokens`)."))

    @model_validator(mode="after")
    def _url(self) -> RoleModel:
        if self.base_url and not self.base_url.startswith(("http://", "https://")):
            raise ValueError(f"base_url must be an http:// or https:// URL, not {self.base_url!r}")
        return self


class Context(BaseModel):
    """Model, endpoint, sandbox, prompts and cache: the settings every graph shares."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    model: str = Field(default="local", min_length=1, description=(
        "'local' (embedded Qwen2.5-Coder-1.5B), 'small' (embedded 0.5B), a path to a .gguf file (served by the "
        "embedded llama.cpp server), or a model name at `base_url`."))
    base_url: str = Field(default="", description=(
        "An OpenAI-compatible endpoint (OpenAI, vLLM, Ollama, llama.cpp). Empty: the embedded model."))
    api_key_env: str = Field(default="OPENAI_API_KEY", description=(
        "Name of the environment variable holding the endpoint's API key (never the key itself)."))
    temperature: float = Field(default=0.0, ge=0.0, le=2.0, description="Sampling temperature (papers: 0).")
    max_tokens: int = Field(default=0, ge=-1, description=(
        "Completion token limit per model call. 0: per role, as the released CodeTree code (4096 for a "
        "program, 2048 for thoughts, critiques and verdicts), within the embedded server's context per slot. "
        "-1: none sent, as the released RPM-MCTS client (the server's context is then the only limit)."))
    request_timeout: float = Field(default=600.0, gt=0, description=(
        "Seconds to wait for one model call (a slow CPU needs minutes for a long answer of the embedded model)."))
    retries: int = Field(default=2, ge=0, description=(
        "Retries of a failed model call (5xx, 429, time-out, dropped connection, a body that is not JSON), with "
        "exponential backoff and jitter; when they are spent the search ends with stop_reason 'model_error'."))
    n_ctx: int = Field(default=8192, ge=512, description=(
        "Context window of one request to the embedded model server; the server holds this much per slot, so "
        "running problems at once leaves every call the same room."))
    structured_output: bool = Field(default=True, description=(
        "Ask the endpoint for JSON-schema-constrained answers where an agent expects structure."))
    server_slots: int = Field(default=1, ge=1, description=(
        "Parallel request slots of the embedded model server (the bench sets its concurrency)."))
    cache_path: str = Field(default="", description=(
        "SQLite file caching model responses; an identical rerun then costs no model calls."))
    sandbox: Literal["local", "e2b"] = Field(default="local", description="Where generated code runs.")
    test_timeout: float = Field(default=5.0, gt=0, description="Seconds per public test during search.")
    prompts_dir: str = Field(default="", description=(
        "A folder of prompt YAML files overriding the packaged ones, file by file."))
    kb_path: str = Field(default="", description="Folder of the Chroma knowledge base.")
    kb_embedder: str = Field(default="wordllama", min_length=1, description=(
        "The knowledge base's embedder: 'wordllama' (bundled, offline), 'openai:MODEL' (an OpenAI-compatible "
        "/v1/embeddings, at kb_embedder_base_url), or 'MODULE:NAME' (a LangChain Embeddings, or a class or "
        "function making one). A KB answers only the embedder it was built with; the default KB is built for each."))
    kb_embedder_base_url: str = Field(default="", description=(
        "The /v1 endpoint of an 'openai:MODEL' embedder (empty: OpenAI's)."))
    kb_embedder_api_key_env: str = Field(default="OPENAI_API_KEY", description=(
        "Name of the environment variable holding that endpoint's API key."))
    token_budget: int = Field(default=0, ge=0, description=(
        "Prompt + completion tokens a run may spend (0: no limit). No model call starts once they are spent; "
        "the search returns its best program so far with stop_reason 'token_budget'. Parallel branches each "
        "check what was spent when they started, so a wide fan-out can overshoot by its last calls."))
    selector: Literal["public", "agreement", "codet", "differential"] = Field(default="public", description=(
        "How the final program is chosen among the search's distinct programs: 'public', the method's own rule "
        "(each paper); 'agreement', the largest group of programs behaving alike on probe inputs (mutated public "
        "inputs and the Tester's), among those passing the public tests; 'codet', CodeT's group size x "
        "Tester asserts passed; 'differential', S*'s knock-out among the largest groups, the model judging two "
        "outputs on an input that separates them, asked in both orders."))
    tester_inputs: int = Field(default=10, ge=0, description=(
        "Inputs the Tester writes for a non-public selector (one call per problem; 0: mutated inputs only)."))
    mutated_inputs: int = Field(default=10, ge=0, description=(
        "Type-aware mutations of the public inputs a non-public selector runs (no model call)."))
    selector_seed: int = Field(default=0, ge=0, description="Seed of the mutated inputs drawn.")
    selector_groups: int = Field(default=3, ge=2, description=(
        "Largest output groups the 'differential' selector's knock-out compares (two judge calls per pair)."))
    selector_model: str = Field(default="", description=(
        "The model the Tester and the judge of a non-public selector talk to (empty: the search's model), named "
        "as `model` is: at `selector_base_url`, or embedded ('local', 'small', a .gguf path) when that is empty. "
        "A stronger model here measures what the judge is worth while the search stays on a small one."))
    selector_base_url: str = Field(default="", description=(
        "The OpenAI-compatible endpoint of `selector_model` (empty: embedded)."))
    selector_api_key_env: str = Field(default="", description=(
        "Name of the environment variable holding `selector_base_url`'s key (empty: `api_key_env`)."))
    roles: dict[str, RoleModel] = Field(default_factory=dict, description=(
        "A model for each role named (" + ", ".join(ROLE_NAMES) + "): {role: {model, base_url, api_key_env, "
        "temperature, max_tokens}}; a role not named uses the search's model. `selector_model` and "
        "`verifier_model` are shorthands for the tester and judge, and the verifier (an entry here wins). CLI: "
        "--role critic=MODEL@URL; environment: CODEFOREST_ROLES as JSON."))
    prices: dict[str, tuple[float, float]] = Field(default_factory=dict, description=(
        "Price per million tokens, (input, output), per model name as records name it. A model whose name states "
        "its size ('...-1.5b-...') costs its parameter count in billions by default (the embedded 1.5B: 1.5, "
        "the 0.5B: 0.5); any other model needs a price for `cost_budget`."))
    cost_budget: float = Field(default=0.0, ge=0.0, description=(
        "What a run may spend in the price table's unit (0: no limit), as `token_budget` does with tokens: no "
        "model call starts once it is spent, and the search returns its best program so far with stop_reason "
        "'cost_budget'."))
    min_candidates: int = Field(default=1, ge=1, description=(
        "Distinct programs passing the public tests that a search which stops at the first one collects before "
        "it stops (1: the paper's rule); the selector then chooses among them."))

    @model_validator(mode="before")
    @classmethod
    def _environment(cls, data: Any) -> Any:
        """Fill fields not given from ``CODEFOREST_<FIELD>``, validated and named on error (a given value wins)."""
        if not isinstance(data, dict):
            return data
        data = dict(data)
        for name, info in cls.model_fields.items():
            raw = os.environ.get(ENV_PREFIX + name.upper())
            if raw is None or name in data:
                continue
            adapter = TypeAdapter(info.rebuild_annotation())
            try:
                structured = name in ("roles", "prices")  # given as JSON
                data[name] = adapter.validate_json(raw) if structured else adapter.validate_python(raw.strip())
            except ValidationError as exc:
                reason = exc.errors()[0]["msg"]
                raise ValueError(f"{ENV_PREFIX}{name.upper()}={raw!r} is not a valid {name}: {reason}") from None
        return data

    @model_validator(mode="after")
    def _endpoints_are_urls(self) -> Context:
        for name in ("base_url", "selector_base_url"):
            url = getattr(self, name)
            if url and not url.startswith(("http://", "https://")):
                raise ValueError(f"{name} must be an http:// or https:// URL, such as http://127.0.0.1:8000/v1")
        return self

    @model_validator(mode="after")
    def _selector_endpoint_has_a_model(self) -> Context:
        if self.selector_base_url and not self.selector_model:
            raise ValueError("selector_base_url is set without selector_model: name the model the Tester and the "
                             "judge use at that endpoint")
        return self

    @field_validator("prices")
    @classmethod
    def _prices_by_counted_name(cls, prices: dict[str, tuple[float, float]]) -> dict[str, tuple[float, float]]:
        """Key each price by the name calls are counted under ('local' -> the embedded 1.5B's file name)."""
        counted: dict[str, tuple[float, float]] = {}
        for name, price in prices.items():
            key = counted_name(name)
            if key in counted and counted[key] != price:
                raise ValueError(f"two prices for {key}: {counted[key]} and {price} (one given as {name!r})")
            counted[key] = price
        return counted

    @model_validator(mode="after")
    def _prices_are_not_negative(self) -> Context:
        negative = sorted(name for name, price in self.prices.items() if min(price) < 0)
        if negative:
            raise ValueError(f"prices of {', '.join(negative)} are negative: give prices of at least 0 per million "
                             "input and output tokens")
        return self

    @model_validator(mode="after")
    def _roles_are_known(self) -> Context:
        unknown = sorted(set(self.roles) - set(ROLE_NAMES))
        if unknown:
            raise ValueError(f"unknown role(s) {', '.join(unknown)} in roles; the roles: {', '.join(ROLE_NAMES)}")
        return self

    def role_entries(self) -> dict[str, RoleModel]:
        """Every role with a model of its own: ``roles``, and the tester, judge and verifier that
        ``selector_model`` and ``verifier_model`` name (an entry in ``roles`` wins)."""
        entries = {}
        if self.selector_model:
            entry = RoleModel(model=self.selector_model, base_url=self.selector_base_url,
                              api_key_env=self.selector_api_key_env)
            entries.update(tester=entry, judge=entry)
        verifier_model = getattr(self, "verifier_model", "")
        if verifier_model:
            entries["verifier"] = RoleModel(model=verifier_model, base_url=getattr(self, "verifier_base_url", ""),
                                            api_key_env=getattr(self, "verifier_api_key_env", ""))
        return {**entries, **self.roles}

    def role_context(self, role: str) -> Context:
        """The context a role's calls go through: its own entry's endpoint, model and settings, else this one."""
        entry = self.role_entries().get(role)
        if entry is None:
            return self
        fixed = {"temperature": entry.temperature, "max_tokens": entry.max_tokens}
        return Context.of(self, model=entry.model, base_url=entry.base_url,
                          api_key_env=entry.api_key_env or self.api_key_env,
                          **{k: v for k, v in fixed.items() if v is not None})

    def model_contexts(self, roles: set[str] | None = None) -> list[Context]:
        """This context and the context of each role with a model of its own (only ``roles``, when given)."""
        return [self, *(self.role_context(role) for role in self.role_entries() if roles is None or role in roles)]

    def slots_needed(self) -> int:
        """Model requests a run may send at once: the embedded server gets that many slots."""
        return self.server_slots

    @classmethod
    def of(cls: type[C], other: object = None, **overrides: Any) -> C:
        """This class built from another context (or dict, dataclass or ``None``): the fields both have."""
        if type(other) is cls and not overrides:
            return other
        if isinstance(other, BaseModel):
            # the environment filled a context's unset fields when it was built; from another class (not a subclass
            # of this one) only the fields set are taken, so this class's own defaults hold for the rest
            values = other.model_dump(exclude_unset=not isinstance(other, cls))
        elif dataclasses.is_dataclass(other) and not isinstance(other, type):
            values = dataclasses.asdict(other)
        elif isinstance(other, dict):
            unknown = sorted(set(other) - set(cls.model_fields))
            if unknown:
                raise ValueError(f"Unknown setting(s) {', '.join(unknown)} for {cls.__name__}; "
                                 f"its settings: {', '.join(cls.model_fields)}")
            values = dict(other)
        else:
            values = {}
        return cls(**{k: v for k, v in {**values, **overrides}.items() if k in cls.model_fields})


def non_default_settings(context: Context, leave_out: frozenset[str] = frozenset()) -> dict:
    """The fields a context sets away from their defaults, except ``leave_out``."""
    return {name: getattr(context, name) for name, info in type(context).model_fields.items()
            if name not in leave_out and getattr(context, name) != info.get_default(call_default_factory=True)}


class VerifierContext(Context):
    """The Verifier's settings, for the graphs that can use one (GVR; CodeTree and RethinkMCTS by choice)."""

    verifier: Literal["llm", "http"] = Field(default="llm", description=(
        "Who scores each thought: 'llm' (the prompted chat model, CodePRM's LLM verifier) or 'http' (a trained "
        "PRM served at verifier_url)."))
    verifier_url: str = Field(default="", description=(
        "The PRM endpoint for verifier='http': POST {problem, thoughts, code, feedback, step_tag, input} -> "
        "{scores: [...]}, one score in [0, 1] per thought."))
    verifier_input: Literal["execution", "thoughts"] = Field(default="execution", description=(
        "'execution': problem, thoughts, code and public-test feedback (CodePRM); 'thoughts': problem and "
        "thoughts only (the paper's math-style PRM ablation)."))
    verifier_threshold: float = Field(default=0.5, ge=0, le=1, description=(
        "θ: a thought scoring at or below it (below it under verifier_threshold_rule 'lt') is flagged as wrong "
        "(CodePRM's threshold verification)."))
    verifier_threshold_rule: Literal["le", "lt"] = Field(default="le", description=(
        "'le': flag scores ≤ θ (the paper); 'lt': scores < θ (the released code)."))
    verifier_unflagged: Literal["none", "lowest"] = Field(default="none", description=(
        "What threshold verification refines when θ flags no thought: 'none' (the paper: only flagged thoughts "
        "are refined, so that code is not) or 'lowest' (the released code: the lowest-scored thought)."))
    verifier_unread: Literal["half", "random"] = Field(default="half", description=(
        "The step scores of a Verifier reply that cannot be read, where they value a program (GVR under "
        "gvr_reward='pub_prm', GVR-BoN's reward): 'half', 0.5 each; 'random', uniform draws in [0, 1) as the "
        "released code does, seeded by the problem and the node (a rerun draws the same). Which thoughts such a "
        "reply flags is drawn at random either way."))
    verifier_example: Literal["released", "placeholders", "none"] = Field(default="released", description=(
        "The example answer of the LLM Verifier's prompt: the released scores (0.3, 0.8, 1.0), which a small model "
        "copies (then thought 1 is always flagged); placeholder scores ('<score of thought 1>'); or none. Measured "
        "on the 1.5B model: without the released numbers every thought scores 0.8 and nothing is flagged."))
    verifier_model: str = Field(default="", description=(
        "The model the LLM Verifier scores thoughts with (empty: the search's model), named as `model` is: at "
        "`verifier_base_url`, or embedded ('local', 'small', a .gguf path) when that is empty. CodePRM's Table 2 "
        "and Fig. 6 verify with other models than the one searching."))
    verifier_base_url: str = Field(default="", description=(
        "The OpenAI-compatible endpoint of `verifier_model` (empty: embedded)."))
    verifier_api_key_env: str = Field(default="", description=(
        "Name of the environment variable holding `verifier_base_url`'s key (empty: `api_key_env`)."))

    @model_validator(mode="after")
    def _verifier_endpoint_has_a_model(self) -> VerifierContext:
        if self.verifier_base_url and not self.verifier_model:
            raise ValueError("verifier_base_url is set without verifier_model: name the model the Verifier uses "
                             "at that endpoint")
        if self.verifier == "http" and not self.verifier_url:
            raise ValueError("verifier='http' needs verifier_url (CODEFOREST_VERIFIER_URL): the PRM endpoint")
        if self.verifier_model and self.verifier == "http":
            raise ValueError("verifier_model names the LLM Verifier's model, but verifier='http' scores with the "
                             "PRM at verifier_url")
        return self


class ThoughtTreeContext(VerifierContext):
    """How the thought-tree MCTS searches (RethinkMCTS, GVR) read the model's thoughts and show them again."""

    released_text: bool = Field(default=False, description=(
        "Read thoughts and write them back into later prompts exactly as the released RethinkMCTS and CodePRM code "
        "does: a thought list must use the keys Thought-1, Thought-2... in order (else the fallback), every thought "
        "is kept as written (its leading space, copies of the prompt's example, more than the width), a blank "
        "fallback stays in the state as a line break, a rewritten thought is the reply as written, and the locator's "
        "answer is the first number in its reply. Off: replies are read leniently and cleaned."))
    code_shown: Literal["program", "reply"] = Field(default="program", description=(
        "The code later prompts show (the rethink, the self-evaluation, the Verifier, the locator, the refine, the "
        "expansion after failing code): the program taken from the Solver's reply, or the whole reply, as the "
        "released code does (the same for a reply that is one code block; the packaged templates fence {code}, so "
        "'reply' is meant for a prompts folder that does not, such as the released wording)."))
