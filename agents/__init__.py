"""Reusable roles (Thinker, Solver, Debugger, Critic, Rethink, Verifier) that become graph nodes."""
