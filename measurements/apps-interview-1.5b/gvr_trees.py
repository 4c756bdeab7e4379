"""What GVR's trees in this folder show about its Verifier and its refinements (issue 16's report).

Run: python measurements/apps-interview-1.5b/gvr_trees.py [TREES]. It reads TREES/*.json only (no model, no tests):
by default trees/gvr, the row at the released reward (gvr_reward=pub_test); the row at the paper's reward, the
default, is trees/gvr/local/apps_interview150.
"""

import collections
import json
import pathlib
import sys

EXAMPLE = (0.3, 0.8, 1.0)  # the scores of the released verifier prompt's "Example Answer" (prompts/verifier.yaml)


def main(folder: pathlib.Path) -> None:
    """Count the refinements by depth and the Verifier's echoes of its prompt example in the trees of ``folder``."""
    trees = sorted(folder.glob("*.json"))
    refined_at = collections.Counter()
    scorings = echoes = first_flagged = 0
    for path in trees:
        for node in json.loads(path.read_text(encoding="utf-8")).values():
            refined_at[node["depth"]] += node.get("refined") or 0
            # a refined node's earlier scores: in prm_history since 2026-11-27; on prm_scores in trees before that
            for scores in [*(node.get("prm_history") or []), *([node["prm_scores"]] if node.get("prm_scores") else [])]:
                scorings += 1
                # the example's scores in its order, then 0.3 or 0.8 for any further thought (the two "flawed" marks)
                head, tail = tuple(scores[:3]), scores[3:]
                echoes += head == EXAMPLE[:len(head)] and all(s in (0.3, 0.8) for s in tail)
                first_flagged += scores[0] <= 0.5
    total = sum(refined_at.values())
    print(f"{len(trees)} GVR trees; {total} refinements, by the depth of the thought rewritten:")
    for depth in sorted(d for d in refined_at if refined_at[d]):
        print(f"  depth {depth}: {refined_at[depth]} ({refined_at[depth] / total:.0%})")
    print(f"{scorings} Verifier scorings kept on nodes: {echoes} ({echoes / max(scorings, 1):.0%}) repeat the prompt "
          f"example's scores {EXAMPLE} (then 0.3 or 0.8); {first_flagged} ({first_flagged / max(scorings, 1):.0%}) "
          "score thought 1 at most 0.5")


if __name__ == "__main__":
    main(pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else pathlib.Path(__file__).parent / "trees" / "gvr")
