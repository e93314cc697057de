"""The HTML report, opened in a real headless browser (Debian's Chromium driven by Playwright): no console
errors, one tree mark per stored node, the best kernel on the roofline, a click shows the source and its diff,
and nothing is fetched from outside the file."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pytest

import kevolve
from kevolve.api import _open_store
from kevolve.cli import main
from kevolve.errors import KevolveError
from kevolve.harness.evaluation import Evaluation

pytest.importorskip("plotly")
CHROMIUM = "/usr/bin/chromium"  # Debian's; Playwright downloads no browser of its own
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]


@pytest.fixture
def browser():
    playwright = pytest.importorskip("playwright.sync_api")
    if not Path(CHROMIUM).exists():
        pytest.skip("no Chromium (apt-get install chromium)")
    with playwright.sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield chromium
        chromium.close()


def open_page(browser, path: Path):
    """The page loaded from disk, with every console error and every request that would leave the file."""
    page = browser.new_page()
    errors: list[str] = []
    outside: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))

    def route(r):
        if r.request.url.startswith(("file:", "data:", "blob:")):
            r.continue_()
        else:
            outside.append(r.request.url)
            r.abort()

    page.route("**/*", route)
    page.goto(path.as_uri())
    page.wait_for_function("document.getElementById('roofline') || document.getElementById('s0-roofline')")
    return page, errors, outside


def assert_offline(html: str, outside: list[str]) -> None:
    """Nothing was requested from outside, Plotly's script is embedded whole, and the page's own markup loads
    nothing external (the library's text holds map-tile and attribution links it never follows here)."""
    from plotly.offline import get_plotlyjs

    assert outside == []
    library = get_plotlyjs()
    assert library in html
    html = html.replace(library, "")
    assert "<script src" not in html
    assert not re.search(r"""(?:src|href)\s*=\s*["']?(?:https?:)?//""", html, re.I)
    assert not re.search(r"""@import|url\(\s*["']?(?:https?:)?//""", html, re.I)


@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    """One small search on the fake target, shared by the tests that only read it: (result, store path)."""
    import fake_backend

    from kevolve.harness.pipeline import HarnessConfig
    from kevolve.plugins import get_manager, reset_manager

    work = tmp_path_factory.mktemp("report")
    reset_manager()
    get_manager().register(fake_backend, name="fake_backend")
    harness = HarnessConfig(timeout_s=60, repeats=5, sample_s=0.0005, workdir=str(work / "builds"))
    result = kevolve.optimize("relu", target="fake", budget=4, seed=1, store=work / "store.sqlite", harness=harness)
    yield result, work / "store.sqlite"
    reset_manager()


@pytest.fixture
def session(stored, fake_plugin):
    return stored[0]


def test_report_shows_every_node_the_best_kernel_on_the_roofline_and_sources(session, stored, browser, tmp_path):
    store_path = stored[1]
    out = tmp_path / "report.html"
    assert main(["report", session.session[:8], "-o", str(out), "--store", str(store_path)]) == 0
    stored = _open_store(store_path, readonly=True).nodes(session.session)
    page, errors, outside = open_page(browser, out)

    marks = page.evaluate("""document.getElementById('tree').data.filter(t => t.meta === 'nodes')
                             .flatMap(t => t.customdata)""")
    assert sorted(marks) == sorted(n.node_id for n in stored)
    best = page.evaluate("document.getElementById('roofline').data.filter(t => t.meta === 'best')"
                         ".map(t => ({x: t.x, y: t.y, text: t.text}))")
    metrics = session.best.evaluation.diagnosis.metrics
    measured = (session.final or session.best).evaluation.timings["kernel"].median
    assert len(best) == 1 and best[0]["text"][0].startswith("best kernel")
    assert best[0]["x"][0] == pytest.approx(metrics["flops"] / metrics["bytes"])
    assert best[0]["y"][0] == pytest.approx(metrics["flops"] / measured)
    assert page.locator("#roofline .scatterlayer .point").count() >= 1 + len(
        [n for n in stored if n.evaluation.correct])  # drawn, not only in the data

    child = next(n for n in stored if n.parent_id in {m.node_id for m in stored})
    page.evaluate(f"""(() => {{ const d = document.getElementById('tree');
        const t = d.data.findIndex(t => t.meta === 'nodes' && t.customdata.includes({child.node_id}));
        d.emit('plotly_click', {{points: [{{customdata: {child.node_id}, curveNumber: t}}]}}); }})()""")
    assert page.inner_text("#source").strip() == child.source.strip()
    assert f"node {child.parent_id}" in page.inner_text("#diff")
    assert errors == []
    assert_offline(out.read_text(), outside)


def test_timing_samples_are_stored_and_drawn(session, stored, browser, tmp_path):
    store_path = stored[1]
    measured = session.final or session.best
    kept = _open_store(store_path, readonly=True).node(session.session, measured.node_id).evaluation.timings
    assert set(kept) >= {"kernel", "eager"} and all(len(t.values) == t.samples > 1 for t in kept.values())
    page, errors, _ = open_page(browser, session.report(tmp_path / "r.html"))
    drawn = page.evaluate("Object.fromEntries(document.getElementById('timings').data.map(t => [t.name, t.y]))")
    assert drawn == {name: [v * 1e6 for v in t.values] for name, t in kept.items()}
    assert errors == []


def test_older_evaluations_without_samples_still_load():
    data = {"status": "ok", "stage": "timed", "timings": {"kernel": {"median": 1.0, "p10": 1.0, "p90": 1.0,
                                                                     "samples": 3}}}
    assert Evaluation.from_dict(data).timings["kernel"].values == []


def test_compare_puts_targets_side_by_side(session, stored, fast_harness, browser, tmp_path):
    a = session
    b = kevolve.optimize("relu", target="fake_tiny", budget=2, store=stored[1], harness=fast_harness)
    out = tmp_path / "compare.html"
    assert main(["report", "--compare", a.session, b.session, "-o", str(out), "--store", str(stored[1])]) == 0
    page, errors, outside = open_page(browser, out)
    assert page.evaluate("document.getElementById('compare').data[0].x") == [a.target, b.target]
    assert page.locator("#s1-roofline").count() == 1
    assert errors == []
    assert_offline(out.read_text(), outside)


def test_compare_refuses_sessions_of_different_problems(session, tmp_path):
    from kevolve.report import report_data, write_compare

    first = report_data(session)
    with pytest.raises(KevolveError, match="one problem"):
        write_compare([first, replace(first, problem="softmax")], tmp_path / "c.html")
    assert not (tmp_path / "c.html").exists()
