"""Draw :class:`~kevolve.report.data.ReportData` as one HTML file with Plotly's script embedded: the page
needs no network, so it can be mailed, archived, or opened on a machine that has none."""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

from kevolve.errors import KevolveError
from kevolve.report.data import NodeView, ReportData

STATUS_COLOURS = {"ok": "#2e7d32", "wrong_result": "#c62828", "compile_error": "#ef6c00",
                  "runtime_error": "#ad1457", "timeout": "#6a1b9a", "crash": "#4e342e", "rejected": "#757575",
                  "synthesis_error": "#9e9d24"}
KIND_SYMBOLS = {"best": "star", "baseline": "diamond", "candidate": "circle"}


def _plotly() -> Any:
    try:
        import plotly
    except ImportError:
        raise KevolveError("a report needs Plotly: `pip install 'kevolve[report]'` (or `pip install plotly`)") \
            from None
    return plotly


def tree_layout(nodes: list[NodeView]) -> dict[int, tuple[float, float]]:
    """Node -> (x, depth): leaves spread left to right in search order, each parent centred over its
    children, so branching shows as width."""
    children: dict[int | None, list[int]] = {}
    ids = {n.node_id for n in nodes}
    for n in nodes:
        children.setdefault(n.parent_id if n.parent_id in ids else None, []).append(n.node_id)
    place: dict[int, tuple[float, float]] = {}
    next_x = [0.0]

    def visit(node_id: int, depth: int) -> float:
        kids = children.get(node_id, [])
        if not kids:
            x = next_x[0]
            next_x[0] += 1
        else:
            xs = [visit(k, depth + 1) for k in kids]
            x = (min(xs) + max(xs)) / 2
        place[node_id] = (x, depth)
        return x

    for root in children.get(None, []):
        visit(root, 0)
    return place


def tree_figure(data: ReportData) -> Any:
    go = _plotly().graph_objects
    place = tree_layout(data.nodes)
    fig = go.Figure()
    ex, ey, lx, ly, labels = [], [], [], [], []
    for n in data.nodes:
        if n.parent_id in place:
            (x0, y0), (x1, y1) = place[n.parent_id], place[n.node_id]
            ex += [x0, x1, None]
            ey += [y0, y1, None]
            lx.append((x0 + x1) / 2)
            ly.append((y0 + y1) / 2)
            labels.append(n.memory_op)
    fig.add_trace(go.Scatter(x=ex, y=ey, mode="lines", line={"color": "#b0b0b0", "width": 1}, hoverinfo="skip",
                             showlegend=False, meta="edges"))
    fig.add_trace(go.Scatter(x=lx, y=ly, mode="text", text=labels, textfont={"size": 9, "color": "#555"},
                             hoverinfo="skip", showlegend=False, meta="edge-labels"))
    top = max((n.fitness for n in data.nodes), default=0.0) or 1.0
    for status in sorted({n.status for n in data.nodes}):
        group = [n for n in data.nodes if n.status == status]
        fig.add_trace(go.Scatter(
            x=[place[n.node_id][0] for n in group], y=[place[n.node_id][1] for n in group], mode="markers",
            name=status, meta="nodes", customdata=[n.node_id for n in group],
            hovertext=[n.hover for n in group], hoverinfo="text",
            marker={"color": STATUS_COLOURS.get(status, "#000"), "size": [8 + 22 * n.fitness / top for n in group],
                    "line": {"width": [3 if n.node_id == data.best_id else 0 for n in group], "color": "#000"}}))
    fig.update_yaxes(autorange="reversed", title="depth", dtick=1)
    fig.update_xaxes(visible=False)
    fig.update_layout(title="search tree (size: fitness; outlined: best; click a node for its source)",
                      height=460, margin={"t": 40, "b": 20}, hoverlabel={"align": "left"})
    return fig


def fitness_figure(data: ReportData) -> Any:
    go = _plotly().graph_objects
    searched = [n for n in data.nodes if n.memory_op != "final"]  # the final re-timing is no new candidate
    order = list(range(1, len(searched) + 1))
    fitness = [n.fitness for n in searched]
    best_so_far = [max(fitness[: i + 1]) for i in range(len(fitness))]
    fig = go.Figure([
        go.Scatter(x=order, y=fitness, mode="markers", name="candidate",
                   marker={"color": [STATUS_COLOURS.get(n.status, "#000") for n in searched]},
                   hovertext=[f"node {n.node_id}: {n.status}" for n in searched]),
        go.Scatter(x=order, y=best_so_far, mode="lines", name="best so far", line={"shape": "hv"})])
    fig.update_layout(title=f"fitness ({data.fitness_meaning}) over evaluated candidates", height=340,
                      xaxis_title="candidate (evaluation order)", yaxis_title=data.fitness_meaning,
                      margin={"t": 40})
    return fig


def roofline_figure(data: ReportData) -> Any:
    go = _plotly().graph_objects
    fig = go.Figure()
    xs = [p.intensity for p in data.roofline] or [1.0]
    low, high = min(xs) / 10, max(xs) * 10
    top = max(data.peak_flops.values())
    for name, bw in data.bandwidths.items():  # one slope per memory level, up to the highest peak
        ridge = min(max(top / bw, low), high)
        fig.add_trace(go.Scatter(x=[low, ridge, high], y=[bw * low, bw * ridge, min(top, bw * high)],
                                 mode="lines", name=f"{name} {bw / 1e9:.0f} GB/s", hoverinfo="name", meta="roof",
                                 line={"width": 1, "dash": "dot"}))
    for dtype, peak in data.peak_flops.items():  # one flat roof per dtype
        fig.add_trace(go.Scatter(x=[low, high], y=[peak, peak], mode="lines", name=f"{dtype} {peak / 1e9:.0f} "
                                 "GFLOP/s", hoverinfo="name", meta="roof", line={"width": 1}))
    for kind in ("candidate", "baseline", "best"):
        group = [p for p in data.roofline if p.kind == kind]
        if group:
            fig.add_trace(go.Scatter(
                x=[p.intensity for p in group], y=[p.flops_per_s for p in group], mode="markers",
                name="best kernel" if kind == "best" else kind, meta=kind,
                text=[p.label for p in group], hovertemplate="%{text}<br>%{x:.3g} FLOP/B, %{y:.3g} FLOP/s",
                marker={"symbol": KIND_SYMBOLS[kind], "size": 16 if kind == "best" else 9}))
    fig.update_xaxes(type="log", title="arithmetic intensity (FLOP/byte)")
    fig.update_yaxes(type="log", title="achieved FLOP/s")
    fig.update_layout(title=f"roofline of {data.target}", height=440, margin={"t": 40})
    return fig


def timing_figure(data: ReportData) -> Any:
    go = _plotly().graph_objects
    fig = go.Figure([go.Violin(y=[s * 1e6 for s in values], name=name, box_visible=True, points="all",
                               meta="samples")
                     for name, values in data.samples.items()])
    fig.update_layout(title="timing samples of the best kernel and each baseline (us per call)", height=380,
                      yaxis_title="us per call", margin={"t": 40}, showlegend=False)
    return fig


def _div(fig: Any, div_id: str) -> str:
    return _plotly().io.to_html(fig, full_html=False, include_plotlyjs=False, div_id=div_id,
                                config={"displaylogo": False, "responsive": True})


PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 1.5em; color: #222; }}
pre {{ background: #f6f6f6; padding: .8em; overflow: auto; max-height: 32em; font-size: 12px; }}
.row {{ display: flex; gap: 1em; flex-wrap: wrap; }} .row > div {{ flex: 1 1 30em; min-width: 0; }}
.add {{ color: #1b5e20; }} .del {{ color: #b71c1c; }}
</style>
<script>{plotly_js}</script></head><body>
<h1>{title}</h1>
{body}
</body></html>
"""


def _session_section(data: ReportData, prefix: str) -> str:
    samples = (_div(timing_figure(data), f"{prefix}timings") if data.samples else
               "<p>No timing samples stored for the best kernel (it was not timed, or the session predates "
               "sample storage).</p>")
    nodes = json.dumps({n.node_id: {"source": n.source, "diff": n.diff} for n in data.nodes}).replace("</", "<\\/")
    return f"""
<p>session <code>{html.escape(data.session)}</code>: {html.escape(data.stop_reason)}</p>
<pre>{html.escape(data.summary)}</pre>
{_div(tree_figure(data), f"{prefix}tree")}
<div class="row"><div><h3 id="{prefix}picked">click a node in the tree</h3><pre id="{prefix}source"></pre></div>
<div><h3>diff against its parent</h3><pre id="{prefix}diff"></pre></div></div>
{_div(fitness_figure(data), f"{prefix}fitness")}
{_div(roofline_figure(data), f"{prefix}roofline")}
{samples}
<script>
(function() {{
  const nodes = {nodes};
  const esc = s => s.replace(/&/g, "&amp;").replace(/</g, "&lt;");
  const paint = d => d.split("\\n").map(l => l.startsWith("+") ? `<span class="add">${{esc(l)}}</span>` :
      l.startsWith("-") ? `<span class="del">${{esc(l)}}</span>` : esc(l)).join("\\n");
  document.getElementById("{prefix}tree").on("plotly_click", ev => {{
    const id = ev.points[0].customdata;
    if (id === undefined) return;
    document.getElementById("{prefix}picked").textContent = "node " + id;
    document.getElementById("{prefix}source").textContent = nodes[id].source;
    document.getElementById("{prefix}diff").innerHTML = nodes[id].diff ? paint(nodes[id].diff) : "(a root: no parent)";
  }});
}})();
</script>"""


def _page(title: str, body: str) -> str:
    return PAGE.format(title=html.escape(title), plotly_js=_plotly().offline.get_plotlyjs(), body=body)


def write_report(data: ReportData, path: str | Path) -> Path:
    """One session's report; returns the file written."""
    path = Path(path)
    path.write_text(_page(data.title, _session_section(data, "")), encoding="utf-8")
    return path


def write_compare(reports: list[ReportData], path: str | Path) -> Path:
    """One problem's sessions on several targets, side by side: best time against each baseline per target,
    then each target's own report in a column."""
    problems = {r.problem for r in reports}
    if len(problems) > 1:
        raise KevolveError(f"--compare takes sessions of one problem; these solve {', '.join(sorted(problems))}. "
                           "Pass sessions of the same op (`kevolve sessions` lists them).")
    go = _plotly().graph_objects
    contenders = sorted({name for r in reports for name in r.samples})
    bars = go.Figure([go.Bar(name=name, x=[r.target for r in reports],
                             y=[_median(r.samples.get(name, [])) * 1e6 for r in reports]) for name in contenders])
    bars.update_layout(title="median us per call of the best kernel and each baseline, per target", barmode="group",
                       yaxis_type="log", height=380)
    columns = "".join(f'<div><h2>{html.escape(r.target)}</h2>{_session_section(r, f"s{i}-")}</div>'
                      for i, r in enumerate(reports))
    path = Path(path)
    title = f"{reports[0].problem} on {', '.join(r.target for r in reports)}"
    path.write_text(_page(title, _div(bars, "compare") + f'<div class="row">{columns}</div>'), encoding="utf-8")
    return path


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[len(ordered) // 2] if ordered else 0.0
