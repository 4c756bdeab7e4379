"""``codeforest report DIR --html``: one self-contained page a person reads in a browser.

The summary table, pass@1 against tokens (the report's PNG, embedded), each problem's outcome per graph,
and for every (graph, problem) its search tree drawn as SVG: nodes coloured by their public-test result,
the final node ringed, the thought and program on hover (a tooltip) and on click (the panel beside the
tree). No script or style is fetched from anywhere: the page works offline.
"""

from __future__ import annotations

import base64
import html
import json
from pathlib import Path

from codeforest.bench import _safe_name, latest_records, read_results, tree_path
from codeforest.cost import tokens_spent
from codeforest.report import (
    COST_PLOT,
    SELECTION_COLUMNS,
    by_cost,
    pass_rate_note,
    report,
    resampling_comparisons,
    run_namer,
    selection_cells,
    selection_rows,
    summary_table,
)

PAGE = "report.html"
X_STEP, Y_STEP, RADIUS = 34, 56, 11
COLOURS = {"passed": "#2e9b4f", "partial": "#e0a030", "failed": "#c8413b", "none": "#9aa0a6"}


def node_colour(node: dict) -> str:
    """Green: passes every public test; amber: some; red: none; grey: no program run (a thought, a strategy)."""
    execution = node.get("execution") or {}
    if not node.get("code") or not execution.get("total"):
        return COLOURS["none"]
    if execution.get("passed") == execution["total"]:
        return COLOURS["passed"]
    return COLOURS["partial"] if execution.get("passed") else COLOURS["failed"]


def layout(nodes: dict) -> dict[str, tuple[float, float]]:
    """A tidy drawing: leaves left to right in creation order, each parent centred over its children."""
    children: dict[str | None, list[str]] = {}
    for node_id, node in sorted(nodes.items(), key=lambda item: item[1].get("order", 0)):
        parent = node.get("parent")
        children.setdefault(parent if parent in nodes else None, []).append(node_id)
    places: dict[str, tuple[float, float]] = {}
    next_leaf = [0]

    def place(node_id: str, depth: int) -> float:
        kids = children.get(node_id, [])
        if kids:
            xs = [place(kid, depth + 1) for kid in kids]
            x = (xs[0] + xs[-1]) / 2
        else:
            x = next_leaf[0]
            next_leaf[0] += 1
        places[node_id] = (x, depth)
        return x

    for top in children.get(None, []):
        place(top, 0)
    return places


def tree_svg(nodes: dict, final: str | None, key: str) -> str:
    """The tree as inline SVG; each node carries its details for the click panel."""
    places = layout(nodes)
    if not places:
        return "<p>No tree was recorded.</p>"
    width = (max(x for x, _ in places.values()) + 1) * X_STEP + 2 * RADIUS
    height = (max(y for _, y in places.values()) + 1) * Y_STEP
    parts = [f'<svg class="tree" width="{width:.0f}" height="{height:.0f}" data-key="{html.escape(key)}">']
    centre = {i: (RADIUS + x * X_STEP + X_STEP / 2, RADIUS + y * Y_STEP + 6) for i, (x, y) in places.items()}
    for node_id, node in nodes.items():
        parent = node.get("parent")
        if parent in centre:
            (x1, y1), (x2, y2) = centre[parent], centre[node_id]
            parts.append(f'<line x1="{x1:.0f}" y1="{y1:.0f}" x2="{x2:.0f}" y2="{y2:.0f}" class="edge"/>')
    for node_id, node in nodes.items():
        x, y = centre[node_id]
        execution = node.get("execution") or {}
        summary = (f"{node_id} ({node.get('kind', '')}, {node.get('status', '')})"
                   + (f" {execution.get('passed')}/{execution.get('total')} public tests" if execution else ""))
        details = json.dumps({"id": node_id, "summary": summary, "text": node.get("text", ""),
                              "code": node.get("code", ""), "feedback": (node.get("feedback") or "")[:2000]})
        ring = ' class="node final"' if node_id == final else ' class="node"'
        tip = html.escape(f"{summary}\n{node.get('text', '')[:300]}")
        parts.append(f'<g{ring} data-node="{html.escape(details)}"><circle cx="{x:.0f}" cy="{y:.0f}" r="{RADIUS}" '
                     f'fill="{node_colour(node)}"/><title>{tip}</title></g>')
    parts.append("</svg>")
    return "".join(parts)


def groups_html(record: dict) -> str:
    """The selector's output groups of one run (in the recorded order: by their first program), the chosen
    program's group marked; empty when no selector ran."""
    why = record.get("selection")
    if not why:
        return ""
    # the chosen program's node as grouped (its earliest); a kept own choice can sit on a later node of that text
    chosen = why.get("chosen_node", record.get("final_node"))
    rows = [[str(i), str(g["size"]), html.escape(", ".join(g["nodes"])), str(g.get("score", g["size"])),
             "chosen" if chosen in g["nodes"] else ""] for i, g in enumerate(why.get("groups") or [], 1)]
    verdict = ("changed the method's own choice " + html.escape(str(why.get("own_node")))
               if why.get("changed") else "kept the method's own choice")
    judged = why.get("comparisons") or []
    judges = f", {len(judged)} judged comparisons ({why.get('abstained', 0)} abstained)" if judged else ""
    return (f'<div class="groups"><p>Selector <b>{html.escape(str(why.get("selector")))}</b> over '
            f'{why.get("programs", "?")} programs, {why.get("inputs", 0)} probe inputs '
            f'({why.get("dropped_inputs", 0)} dropped){judges}: {verdict}'
            f'{" (a tie was broken)" if why.get("tie_broken") else ""}.</p>'
            f'{_table(["group", "programs", "nodes", "score", ""], rows)}</div>')


def _table(header, rows) -> str:
    """A table in its own horizontally scrolling box, so a wide one (25 runs) never widens the page."""
    head = "".join(f"<th>{html.escape(str(h))}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return f'<div class="scroll"><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>'


def html_report(out_dir: str | Path) -> Path:
    """Write ``DIR/report.html`` (and refresh the PNG and Markdown report it embeds); returns its path."""
    out = Path(out_dir)
    rows, plot_path = report(out)
    if not rows:
        raise ValueError(f"No results in {out}")
    latest = latest_records(read_results(out))
    against = resampling_comparisons(latest, rows)
    columns, cells = summary_table(rows)
    note = pass_rate_note(rows)
    name = run_namer(latest)
    graphs = list(dict.fromkeys(name(r) for r in latest))
    problems = list(dict.fromkeys(r["problem_id"] for r in latest))
    by_key = {(name(r), r["problem_id"]): r for r in latest}

    def outcome(graph: str, problem: str) -> str:
        record = by_key.get((graph, problem))
        if record is None:
            return "not run"
        verdict = "error" if record.get("error") else "pass" if record.get("private_passed") else "fail"
        tokens = tokens_spent(record)
        anchor = _safe_name(f"{graph}-{problem}")
        calls = record.get("llm_calls", 0)
        return f'<a class="{verdict}" href="#{anchor}">{verdict}</a> ({calls} calls, {tokens:,} tok)'

    plot = base64.b64encode(Path(plot_path).read_bytes()).decode() if plot_path else ""
    cost_plot = out / COST_PLOT
    cost_plot = base64.b64encode(cost_plot.read_bytes()).decode() if by_cost(rows) and cost_plot.exists() else ""
    trees = []
    for (graph, problem), record in by_key.items():
        path = tree_path(out, record)
        nodes = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
        anchor = _safe_name(f"{graph}-{problem}")
        verdict = "error" if record.get("error") else "pass" if record.get("private_passed") else "fail"
        trees.append(f'<details id="{anchor}"><summary>{html.escape(graph)} · {html.escape(problem)} · {verdict} '
                     f'· {html.escape(str(record.get("stop_reason")))}</summary>{groups_html(record)}<div class="pair">'
                     f'{tree_svg(nodes, record.get("final_node"), anchor)}<pre class="panel">Click a node.</pre>'
                     f"</div></details>")
    body = [f"<h1>codeforest report: {html.escape(out.name)}</h1>",
            "<h2>Summary</h2>", _table(columns, [[html.escape(c) for c in line] for line in cells]),
            f'<p class="note">{html.escape(note)}</p>' if note else "",
            "<h2>pass@1 against tokens</h2>",
            f'<img class="plot" alt="pass@1 against tokens" src="data:image/png;base64,{plot}">' if plot else "",
            *(["<h2>pass@1 against cost</h2>",
               f'<img class="plot" alt="pass@1 against cost" src="data:image/png;base64,{cost_plot}">']
              if cost_plot else []),
            *(part for measure, lines in against.items() if lines for part in (
                f"<h2>Against plain resampling at no more {measure}</h2>",
                "<ul>" + "".join(f"<li>{html.escape(line[2:])}</li>" for line in lines) + "</ul>")),
            "<h2>Per problem (private tests)</h2>",
            _table(["problem", *graphs], [[html.escape(p), *(outcome(g, p) for g in graphs)] for p in problems]),
            "<h2>Public-passing finals and selectors</h2>",
            _table(SELECTION_COLUMNS, [[html.escape(c) for c in selection_cells(r)] for r in selection_rows(latest)]),
            "<h2>Search trees</h2>",
            '<p class="legend"><span style="color:#2e9b4f">●</span> passes every public test '
            '<span style="color:#e0a030">●</span> some <span style="color:#c8413b">●</span> none '
            '<span style="color:#9aa0a6">●</span> no program; the final program is ringed. Hover or click a node.</p>',
            *trees]
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>codeforest report: {html.escape(out.name)}</title>
<style>{STYLE}</style></head><body>{''.join(body)}<script>{SCRIPT}</script></body></html>
"""
    target = out / PAGE
    target.write_text(page, encoding="utf-8")
    return target


STYLE = """
body{font-family:system-ui,sans-serif;margin:2em auto;padding:0 2em;max-width:1200px;color:#222}
.scroll{max-width:100%;overflow-x:auto;margin:1em 0}
table{border-collapse:separate;border-spacing:0;font-size:14px}
td,th{border:1px solid #ccc;border-width:0 1px 1px 0;padding:4px 8px;background:#fff}
tr>:first-child{border-left-width:1px;position:sticky;left:0;z-index:1}thead th{border-top-width:1px}
th{background:#f3f3f3}img.plot{display:block;width:100%;max-width:100%;height:auto}
.note{font-size:13px;color:#555;max-width:60em}a.pass{color:#2e9b4f}a.fail{color:#c8413b}a.error{color:#8a2be2}
details{margin:.4em 0}summary{cursor:pointer}.pair{display:flex;gap:1em;align-items:flex-start;overflow:auto}
.edge{stroke:#999;stroke-width:1.5}.node circle{stroke:#333;stroke-width:1;cursor:pointer}
.node.final circle{stroke:#000;stroke-width:4}
.panel{flex:1;min-width:300px;max-height:420px;overflow:auto;background:#fafafa;border:1px solid #ddd;padding:.6em;
white-space:pre-wrap;font-size:12px}
"""

SCRIPT = """
document.querySelectorAll('g.node').forEach(function (g) {
  g.addEventListener('click', function () {
    var d = JSON.parse(g.getAttribute('data-node'));
    var panel = g.closest('.pair').querySelector('.panel');
    panel.textContent = d.summary + '\\n\\n' + (d.text ? 'Thought / strategy:\\n' + d.text + '\\n\\n' : '') +
      (d.code ? 'Program:\\n' + d.code + '\\n\\n' : '') + (d.feedback ? 'Feedback:\\n' + d.feedback : '');
  });
});
"""
