"""The examples in ``chorus.handoff``'s docstrings, run as doctests against a real hub: the one
``python/README.md`` sets up (its ``pool.toml`` and its ``chorus serve`` line)."""

from __future__ import annotations

import doctest
import inspect
from pathlib import Path
from typing import List

from _hubs import README_URL, hub_section, readme_hub
from chorus import handoff
from chorus.hub import Hub


def test_handoff_docstring_examples_pass_the_hub(tmp_path: Path) -> None:
    tokens = hub_section().tokens
    tests = doctest.DocTestFinder().find(handoff, "chorus.handoff")
    # Every builder shows how to publish what it builds.
    builders = [name for name in handoff.__all__
                if inspect.isfunction(getattr(handoff, name)) and name != "previous_action"]
    assert len(builders) == 8, builders
    documented = {test.name.rsplit(".", 1)[-1] for test in tests
                  if any(".publish(" in example.source for example in test.examples)}
    assert set(builders) <= documented, set(builders) - documented
    published = sum(".publish(" in example.source for test in tests for example in test.examples)
    with readme_hub(tmp_path) as url:
        # The examples after the module's use its `triage` and `tech` (clients of that hub).
        names = {"handoff": handoff, "Hub": Hub,
                 "triage": Hub(url, tokens["triage"]), "tech": Hub(url, tokens["tech"])}
        runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
        report: List[str] = []
        for test in tests:
            for example in test.examples:
                example.source = example.source.replace(README_URL, url)
            test.globs.update(names)
            runner.run(test, out=report.append)
        results = runner.summarize(verbose=False)
        assert results.failed == 0, "".join(report)
        assert results.attempted >= 2 * len(builders), results
        # Each publish of the examples was stored once, in the inbox it names.
        admin = Hub(url, tokens["admin"])
        depths = admin.peek("tech_pool")["depth"] + admin.peek("triage")["depth"]
        assert depths == published, (depths, published)
        assert list(admin.dead_letters()) == []
