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

from codeforest.suites import KINDS

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

    def uses(self, key: str, var: str) -> bool:
        """True when template ``key`` has the placeholder ``{var}``."""
        return self.has(key) and f"{{{var}}}" in self._text(key)

    def _text(self, key: str) -> str:
        node = self.templates
        for part in key.split("."):
            node = node[part]
        return node

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


def check_prompts_dir(prompts_dir: str | Path) -> list[str]:
    """Load every prompt file of a user's folder (so a broken one fails before any model call); their names."""
    folder = Path(prompts_dir).expanduser()
    if not folder.is_dir():
        raise PromptError(f"Prompts folder {folder} does not exist")
    names = sorted(file.stem for file in folder.glob("*.yaml"))
    for name in names:
        if not _has_packaged(name):  # no role asks for it: a misspelt name would silently leave the packaged one
            packaged = sorted(f.name[:-5] for f in resources.files(__name__).iterdir() if f.name.endswith(".yaml"))
            raise PromptError(f"{folder / name}.yaml replaces no prompt (nothing would read it); the prompt files "
                              f"are named {', '.join(packaged)}")
        load_prompt(name, folder)
    return names


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
    prompt = Prompt(name=name, source=source, inputs=tuple(data.get("inputs", [])), templates=data["templates"])
    if not source.startswith("codeforest.prompts/"):
        _check_placeholders(prompt, _packaged(name).inputs if _has_packaged(name) else ())
        _check_kinds(prompt)
    return prompt


def _templates(node: object, key: str = "") -> list[tuple[str, str]]:
    """Every (dotted key, text) template in a templates mapping."""
    if isinstance(node, str):
        return [(key, node)]
    if isinstance(node, dict):
        return [pair for k, v in node.items() for pair in _templates(v, f"{key}.{k}" if key else str(k))]
    return []


def _check_placeholders(prompt: Prompt, supplied: tuple[str, ...]) -> None:
    """A user's template may not use a placeholder the code fills without declaring it in ``inputs``.

    Undeclared placeholders are left as they are (literal braces), so a missing declaration would send
    ``{problem}`` to the model word for word: that is an error when the prompt folder is loaded. So is an input
    the code never fills (a misspelt ``{problme}``, declared as well, would reach the model as written).
    """
    unknown = [var for var in prompt.inputs if supplied and var not in supplied]
    if unknown:
        raise PromptError(f"{prompt.source}: 'inputs' declares {', '.join(unknown)}, which the code does not fill in "
                          f"this prompt; it fills {', '.join(supplied)}")
    for key, text in _templates(prompt.templates):
        for var in _VAR.findall(text):
            if var in supplied and var not in prompt.inputs:
                raise PromptError(f"{prompt.source}: template {key!r} uses {{{var}}} but 'inputs' does not "
                                  f"declare it; add it to inputs: [{', '.join((*prompt.inputs, var))}]")


def _check_kinds(prompt: Prompt, node: object = None, key: str = "") -> None:
    """A template split by problem kind needs every kind, or a problem of the missing one fails mid-run."""
    node = prompt.templates if node is None else node
    if not isinstance(node, dict):
        return
    missing = [kind for kind in KINDS if kind not in node]
    if key and len(missing) < len(KINDS) and missing:
        raise PromptError(f"{prompt.source}: template {key!r} is split by problem kind but has no "
                          f"{' or '.join(repr(m) for m in missing)} variant")
    for k, child in node.items():
        _check_kinds(prompt, child, f"{key}.{k}" if key else str(k))


def _has_packaged(name: str) -> bool:
    return (resources.files(__name__) / f"{name}.yaml").is_file()
