"""axe-core (npm `axe-core`, fetched into var/axe by `make browser`) run inside a page as it is: the violations
of every rule, counted by impact. A page passes with no serious and no critical violation; every run is written
to var/log/tests/browser/axe.jsonl (page and state, impacts, rules) for the record."""

from __future__ import annotations

import json
from typing import Any

from playwright.async_api import Page
from ticketing_testing import REPO_ROOT, require

AXE = REPO_ROOT / "var" / "axe" / "axe.min.js"
RESULTS = REPO_ROOT / "var" / "log" / "tests" / "browser" / "axe.jsonl"
FAILING = ("serious", "critical")
RUN = """async () => {
  const result = await axe.run(document, { resultTypes: ["violations"] });
  return { passes: result.passes.length, violations: result.violations.map((v) => ({
    id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.slice(0, 5).map((n) => n.target.join(" ")) })) };
}"""


async def axe_violations(page: Page, name: str) -> list[dict[str, Any]]:
    """The page's violations now, recorded under `name`. The script goes in through the browser's debugging
    protocol, which the page's Content-Security-Policy (scripts from its own origin only) does not cover."""
    require("axe-core", AXE.exists(), "no var/axe/axe.min.js; run `make browser`")
    if not await page.evaluate("() => typeof window.axe === 'object'"):
        await page.evaluate(AXE.read_text())
    result = await page.evaluate(RUN)
    violations: list[dict[str, Any]] = result["violations"]
    impacts = {level: sum(1 for v in violations if v["impact"] == level)
               for level in ("critical", "serious", "moderate", "minor")}
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    with RESULTS.open("a") as out:
        out.write(json.dumps({"page": name, "language": await page.evaluate("document.documentElement.lang"),
                              "rulesPassed": result["passes"], **impacts,
                              "rules": sorted({v["id"] for v in violations})}) + "\n")
    return violations


async def assert_accessible(page: Page, name: str) -> None:
    failing = [v for v in await axe_violations(page, name) if v["impact"] in FAILING]
    assert not failing, (name, failing)
