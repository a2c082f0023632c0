"""Every shell transcript of README.md and docs/*.md runs as written, and prints what the
document shows (the convention: tests/docs/__init__.py; how it runs: runner.py).

Each document's ```console blocks run in order in one bash session on this machine:
builds (from the suite's build cache), `wkhost serve` on a free port, workflows, curl.
Today: README.md (the tour, the order workflow, the trip saga), docs/from-cloudflare.md
(seed 003's example, with its real 10 s retry and 1 minute sleep), docs/operating.md
(order-42's history, terminate, pause and resume, a rescue after a bad deploy and one
refused, a saga that rescue refuses, restart from a step, bulk, --held-by, the schedules
on a fake clock), docs/workflows.md (a cart's updates, one refused, one that outlives
its wait).

Not run:
- the cluster's and the chaos run's commands: they need PostgreSQL and several nodes,
  and tests/cluster/ and `make chaos` are their checks. docs/cluster.md's blocks are
  command lists (```sh), not transcripts; a cluster or chaos transcript added as
  ```console must be marked `<!-- transcript: skip REASON -->`;
- excerpts, each marked so in its document: output whose earlier commands the page
  does not show. `test_the_skipped_blocks_are_few` counts them, so a new one is seen.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.docs.markdown import TranscriptError, read_document
from tests.docs.runner import REPO, run_document

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

DOCUMENTS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
RUN = [d for d in DOCUMENTS if read_document(d).transcripts]
# How many blocks each document marks `skip`: a new one is seen here. Kept short on purpose.
SKIPPED = {
    "cli.md": 2,        # excerpts: a parked instance, a continued poller
    "workflows.md": 1,  # an excerpt: two commands whose output is sketched in comments
    "operating.md": 4,  # excerpts of a session whose earlier commands the page does not show
}


def test_the_documents_follow_the_convention() -> None:
    problems = []
    for doc in DOCUMENTS:
        try:
            read_document(doc)
        except TranscriptError as e:
            problems.append(str(e))
    assert not problems, "\n".join(problems)


def test_the_skipped_blocks_are_few() -> None:
    skipped = {d.name: len(read_document(d).skipped) for d in DOCUMENTS}
    assert {name: n for name, n in skipped.items() if n} == SKIPPED


@pytest.mark.timeout(900)
@pytest.mark.parametrize("doc", RUN, ids=[d.name for d in RUN])
def test_transcripts_run_as_written(doc: Path) -> None:
    problem = run_document(read_document(doc))
    assert problem is None, problem
