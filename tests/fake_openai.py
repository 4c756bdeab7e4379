"""The scripted OpenAI-compatible endpoint, under the name the tests use."""

from codeforest.scripted_endpoint import ScriptedEndpoint as FakeOpenAI

__all__ = ["FakeOpenAI"]
