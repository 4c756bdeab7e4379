"""What RethinkMCTS's trees in this folder show about its rethinks and its public passes (issue 16's report).

Run: python measurements/apps-interview-1.5b/rethink_trees.py. It reads results.jsonl and the rethink_mcts trees
only (no model, no tests).
"""

import json
import pathlib

HERE = pathlib.Path(__file__).parent


def passes(node: dict) -> bool:
    run = node.get("execution") or {}
    return bool(run.get("total")) and run.get("passed") == run.get("total")


def main() -> None:
    records = {}
    for line in (HERE / "results.jsonl").read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if record["graph"] == "rethink_mcts" and not record.get("error"):
            records[record["problem_id"]] = record  # the latest record of each problem
    programs_in_all = rethought = rethought_passing = first_tries_passing = finals_wrong = 0
    print("problem     programs  public-passing  first pass at  rethought (passing after)  final")
    for problem_id, record in sorted(records.items(), key=lambda kv: int(kv[0].split("/")[1])):
        # records before 2026-11-26 name no tree: theirs is trees/rethink_mcts/<problem>.json
        tree = record.get("tree") or f"trees/rethink_mcts/{problem_id.replace('/', '_')}.json"
        nodes = json.loads((HERE / tree).read_text(encoding="utf-8")).values()
        programs = sorted((n for n in nodes if n.get("code")), key=lambda n: n["order"])
        passing = [i for i, n in enumerate(programs, 1) if passes(n)]
        again = [n for n in programs if n.get("rethinks")]
        again_passing = sum(passes(n) for n in again)
        rethought, rethought_passing = rethought + len(again), rethought_passing + again_passing
        # a node keeps only its last program: one rethought had failed its first try, any other passed it or
        # had no rethink left (none here: one rethink per node)
        programs_in_all += len(programs)
        first_tries_passing += len(passing) - again_passing
        final = "solved" if record["private_passed"] else (
            "public pass, private fail" if record["public_pass_rate"] == 1.0 else "fails public")
        finals_wrong += final == "public pass, private fail"
        print(f"{problem_id:<11} {len(programs):>8}  {len(passing):>14}  {passing[0] if passing else '-':>13}  "
              f"{len(again):>9} ({again_passing}){'':>14}  {final}")
    print(f"{len(records)} problems, {programs_in_all} nodes with a program: {first_tries_passing} "
          f"({first_tries_passing / max(programs_in_all, 1):.0%}) passed every public test at the first try; of the "
          f"{rethought} that failed it and were rethought, {rethought_passing} "
          f"({rethought_passing / max(rethought, 1):.0%}) pass after the rethink; {finals_wrong} finals pass the "
          "public tests and fail the private ones")


if __name__ == "__main__":
    main()
