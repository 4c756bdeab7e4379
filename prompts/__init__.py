"""Prompt files: one YAML file per role, loaded by name, overridable file by file.

A prompt file holds ``inputs`` (the variables it uses), ``output`` (the expected answer format, for
humans) and message templates keyed by variant. ``{name}`` is replaced for declared inputs only, so
literal braces (JSON examples, code) need no escaping.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path

import yaml

_VAR = re.compile(r"\{(\w+)\}")


class PromptError(ValueError):
    """A prompt file that is missing or malformed."""


@dataclass(frozen=True)
class Prompt:
    """One role's prompt file."""

    name: str
    source: str
    inputs: tuple[str, ...]
    templates: dict

    def render(self, key: str, **values: object) -> str:
        """Fill template ``key`` (dotted for nested keys, e.g. ``system.stdio``) with ``values``."""
        template = self.templates
        for part in key.split("."):
            if not isinstance(template, dict) or part not in template:
                raise PromptError(f"Prompt {self.name!r} ({self.source}) has no template {key!r}")
            template = template[part]
        if not isinstance(template, str):
            raise PromptError(f"Prompt {self.name!r} template {key!r} is not text")

        def fill(match: re.Match) -> str:
            var = match.group(1)
            if var in self.inputs and var in values:
                return str(values[var])
            return match.group(0)

        return _VAR.sub(fill, template)

    def has(self, key: str) -> bool:
        """True when the file defines template ``key``."""
        node = self.templates
        for part in key.split("."):
            if not isinstance(node, dict) or part not in node:
                return False
            node = node[part]
        return isinstance(node, str)


def load_prompt(name: str, prompts_dir: str | Path | None = None) -> Prompt:
    """Load ``<name>.yaml`` from the user's folder if it has one, else the packaged default."""
    if prompts_dir:
        folder = Path(prompts_dir).expanduser()
        if not folder.is_dir():
            raise PromptError(f"Prompts folder {folder} does not exist")
        user_file = folder / f"{name}.yaml"
        if user_file.is_file():
            return _parse(name, user_file.read_text(encoding="utf-8"), str(user_file))
    return _packaged(name)


@cache
def _packaged(name: str) -> Prompt:
    file = resources.files(__name__) / f"{name}.yaml"
    if not file.is_file():
        raise PromptError(f"No packaged prompt named {name!r}")
    return _parse(name, file.read_text(encoding="utf-8"), f"codeforest.prompts/{name}.yaml")


def _parse(name: str, text: str, source: str) -> Prompt:
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise PromptError(f"{source}: invalid YAML ({exc})") from exc
    if not isinstance(data, dict) or "templates" not in data:
        raise PromptError(f"{source}: a prompt file needs a 'templates' mapping")
    return Prompt(name=name, source=source, inputs=tuple(data.get("inputs", [])), templates=data["templates"])
