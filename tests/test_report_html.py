"""The HTML report in a real headless Chromium (Debian's chromium + chromium-driver, through selenium)."""

from __future__ import annotations

import json
import os
import shutil

import pytest

from codeforest.bench import Bench
from codeforest.cli import main
from codeforest.context import Context
from codeforest.loading import load_dataset
from codeforest.report_html import COLOURS, layout, node_colour
from tests.fakes import RespondingChatModel
from tests.system_packages import missing
from tests.test_native import Universal

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures", "functions.jsonl")


def chromium_driver():
    """A headless Chromium (tests run as root: no sandbox); skipped without one, failed under CI."""
    browser, driver_path = shutil.which("chromium"), shutil.which("chromedriver")
    if not browser or not driver_path:
        missing("needs Debian's chromium and chromium-driver (apt-get install chromium chromium-driver)")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = browser
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(driver_path), options=options)


@pytest.fixture
def fixture_run(tmp_path):
    """A real bench run of direct and codetree on two fixture problems with a scripted model."""
    tasks = load_dataset(FIXTURES)[:2]
    bench = Bench(["direct", "codetree"], tasks, tmp_path, context=Context(structured_output=False),
                  dataset="fixtures", model=RespondingChatModel(respond=Universal(wrong=True)))
    bench.run()
    return tmp_path


def test_page_loads_without_errors_and_draws_every_tree(fixture_run):
    assert main(["report", str(fixture_run), "--html"]) == 0
    page = fixture_run / "report.html"
    text = page.read_text()
    assert "http://" not in text and "https://" not in text  # self-contained: nothing is fetched
    trees = {str(p): json.loads(p.read_text()) for p in (fixture_run / "trees").rglob("*.json")}
    driver = chromium_driver()
    try:
        driver.get(page.as_uri())
        errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
        assert errors == []
        svgs = driver.find_elements("css selector", "svg.tree")
        assert len(svgs) == len(trees) == 4
        drawn = sum(len(svg.find_elements("css selector", "circle")) for svg in svgs)
        assert drawn == sum(len(nodes) for nodes in trees.values())
        assert len(driver.find_elements("css selector", "g.node.final")) >= 2  # codetree and direct returned one
        first = driver.find_elements("css selector", "details")[0]
        driver.execute_script("arguments[0].open = true", first)
        first.find_elements("css selector", "g.node")[0].click()
        panel = first.find_element("css selector", ".panel").text
        assert "public tests" in panel and "Program:" in panel
        assert driver.find_element("css selector", "img").get_attribute("naturalWidth") != "0"
    finally:
        driver.quit()


def test_layout_and_colours():
    nodes = {"n1": {"order": 1, "parent": None}, "n2": {"order": 2, "parent": "n1"},
             "n3": {"order": 3, "parent": "n1"}, "n4": {"order": 4, "parent": None}}
    assert layout(nodes) == {"n2": (0, 1), "n3": (1, 1), "n1": (0.5, 0), "n4": (2, 0)}
    assert node_colour({"code": "x", "execution": {"passed": 2, "total": 2}}) == COLOURS["passed"]
    assert node_colour({"code": "x", "execution": {"passed": 1, "total": 2}}) == COLOURS["partial"]
    assert node_colour({"code": "x", "execution": {"passed": 0, "total": 2}}) == COLOURS["failed"]
    assert node_colour({"text": "a thought"}) == COLOURS["none"]


def wide_results(folder, runs: int = 25, problems: int = 4):
    """A results folder of ``runs`` runs with long labels (five graphs, each at several settings)."""
    graphs = ("direct", "resample", "codetree", "bester", "rethink_mcts")
    records = [{"graph": graphs[i % 5], "model": "m", "dataset": "fixtures", "problem_id": f"HumanEval/{p}",
                "settings": {"min_candidates": 8, "selector": "differential", "token_budget": 1000 * (i + 1)},
                "error": None, "private_passed": (i + p) % 3 > 0, "private_pass_rate": 0.5, "private_tests": 4,
                "prompt_tokens": 300 * (i + 1) ** 2, "completion_tokens": 100, "llm_calls": i + 1}
               for i in range(runs) for p in range(problems)]
    (folder / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))


def test_a_wide_report_fits_the_page_and_its_plot_fills_the_content(tmp_path):
    wide_results(tmp_path)
    assert main(["report", str(tmp_path), "--html"]) == 0
    driver = chromium_driver()
    try:
        for width in (1280, 640):  # a desktop and a narrow window
            driver.set_window_size(width, 900)
            driver.get((tmp_path / "report.html").as_uri())
            page, viewport = driver.execute_script(
                "return [document.documentElement.scrollWidth, document.documentElement.clientWidth]")
            assert page <= viewport <= width, (width, page, viewport)
        driver.set_window_size(1280, 900)
        driver.get((tmp_path / "report.html").as_uri())
        plot = driver.find_element("css selector", "img.plot")
        content = driver.find_element("css selector", "h1").size["width"]
        assert plot.size["width"] > 340 and plot.size["width"] >= 0.95 * content
        boxes = driver.find_elements("css selector", "div.scroll")
        per_problem = next(b for b in boxes if "HumanEval/0" in b.text)
        assert len(per_problem.find_elements("css selector", "thead th")) == 26  # problem + 25 runs
        inner, outer = driver.execute_script("return [arguments[0].scrollWidth, arguments[0].clientWidth]",
                                             per_problem)
        assert inner > outer  # the table scrolls inside its box, not the page
        first, later = (per_problem.find_elements("css selector", "tbody tr:first-child td")[i] for i in (0, 3))
        before = (first.location["x"], later.location["x"])
        driver.execute_script("arguments[0].scrollLeft = 400", per_problem)
        assert first.location["x"] == before[0] and later.location["x"] < before[1]  # the problem column stays
    finally:
        driver.quit()
