"""`bisect versions` end to end, as a user runs it: a real wheelhouse of 20 releases (one broken
at import, one bringing a flaky failure), real environments made by pip, a real git history to
continue into; the running environment is left as it was."""

from __future__ import annotations

import json
import sqlite3

import pytest

from bisect_cli import bisect
from wheelhouse import BROKEN, CHECK, CULPRIT, NAME, freeze

pytestmark = pytest.mark.slow


def trials_in(store) -> int:
    with sqlite3.connect(store) as db:
        return db.execute("SELECT COUNT(*) FROM outcomes").fetchone()[0]


def test_bisect_versions_names_the_version_then_the_commit_and_leaves_the_env_alone(
    releases, tmp_path
):
    work, out = tmp_path / "work", tmp_path / "out"
    work.mkdir()
    before = freeze()
    argv = [
        "versions", NAME, "--good", "1.0.0", "--bad", "1.19.0",
        "--find-links", str(releases.wheels), "--repo", str(releases.repo),
        "--out", str(out), "--parallel", "2", "--plain", "--", *CHECK,
    ]  # fmt: skip
    done = bisect(*argv, cwd=work)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"culprit {NAME} {CULPRIT} (posterior" in done.stdout
    folder = out / f"versions-{NAME}"
    results = json.loads((folder / "results.json").read_text())
    assert (results["culprit"], results["predecessor"]) == (CULPRIT, "1.11.0")
    assert results["state"] == "found" and results["candidates"][-1] == "1.19.0"
    for probe in results["probes"]:
        assert probe["untestable"] == (probe["version"] == BROKEN)
    report = (folder / "versions.md").read_text()
    assert f"# Version bisection\n\n**Culprit {NAME} {CULPRIT}" in report

    # verified by fresh runs at 1.12.0 and 1.11.0, kept in the store under verify- ids
    verified = results["verification"]
    assert verified["state"] == "verified" and verified["before"]["failed"] == 0
    assert verified["culprit"]["failed"] > 0 and verified["runs"] >= 2 * verified["rounds"]
    line = f"verified: fresh runs at the culprit: {verified['culprit']['failed']} of "
    assert line in done.stdout and f"- verification: {line}" in report
    assert f"at the version before it: 0 of {verified['before']['runs']} runs" in report
    with sqlite3.connect(folder / "versions.sqlite") as db:
        verifying = db.execute("SELECT COUNT(*) FROM outcomes WHERE trial_id LIKE 'verify-%'")
        assert verifying.fetchone()[0] == verified["runs"]

    commits = json.loads((folder / "commits.json").read_text())
    assert commits["culprit"] == releases.culprit_commit, done.stdout + done.stderr
    assert releases.culprit_commit[:10] in done.stdout
    assert freeze() == before, "the running environment changed"

    # the runs at 1.11.0 and 1.12.0 were handed over as marks at their tags
    ran = {p["version"]: p["trials"] for p in results["probes"]}
    with sqlite3.connect(folder / "commits.sqlite") as db:
        marked = db.execute("SELECT COUNT(*) FROM outcomes WHERE trial_id LIKE 'mark-%'").fetchone()
    assert marked[0] == ran.get("1.11.0", 0) + ran[CULPRIT] > 0

    # rerun: both studies resume, nothing runs again, same answers
    stored = trials_in(folder / "versions.sqlite"), trials_in(folder / "commits.sqlite")
    again = bisect(*argv, cwd=work)
    assert again.returncode == 0, again.stdout + again.stderr
    assert (trials_in(folder / "versions.sqlite"), trials_in(folder / "commits.sqlite")) == stored
    assert json.loads((folder / "commits.json").read_text())["culprit"] == releases.culprit_commit
