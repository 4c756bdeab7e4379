"""The roles a graph's calls belong to, by the agents' names (plain data, light to import: the command line's
help lists them)."""

# Every role a graph may call, by the agents' names: the model of each can be set on its own (``roles``).
ROLE_NAMES = {
    "thinker": "thoughts, strategies, next steps and roll-outs (every tree search)",
    "solver": "writes the program",
    "debugger": "repairs a failing program (CodeTree, BESTER)",
    "critic": "scores and judges programs and steps, analyses a failing run's blocks",
    "rethink": "rewrites a thought from the code's feedback (RethinkMCTS, CodePRM's refine)",
    "reflection": "BESTER's self-reflection on a failing program",
    "verifier": "scores each thought (CodePRM's LLM verifier)",
    "locator": "names the first wrong thought or step (CodePRM, RPM-MCTS)",
    "topic": "the problem's topic for the knowledge base (RPM-MCTS)",
    "tester": "writes probe inputs for a selector other than 'public'",
    "judge": "compares two outputs for the 'differential' selector",
}
