"""Shared tools: sandbox, test runners, tracing, knowledge base, model factory."""
