"""A report's files are written whole or not at all (`reports.redacted`): a write cut short by a
full disk leaves the earlier file as it was, with no partial file beside it. The limit is real:
a child process whose files may not grow past 4 KiB (RLIMIT_FSIZE, SIGXFSZ ignored so the write
fails with EFBIG instead of killing it)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from heisenbisect.redaction import Redactor
from heisenbisect.reports import redacted

CHILD = textwrap.dedent(
    """
    import resource, signal, sys
    from pathlib import Path
    from heisenbisect.redaction import Redactor
    from heisenbisect.reports import redacted
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))
    try:
        redacted.write_all({Path(sys.argv[1]): "x" * 100_000}, Redactor())
    except OSError as exc:
        print("failed:", exc.strerror)
    """
)


def test_a_write_cut_short_leaves_the_earlier_report_whole(tmp_path):
    report = tmp_path / "report.md"
    report.write_text("# the earlier report\n")
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(report)], capture_output=True, text=True, timeout=120
    )
    assert "failed: File too large" in done.stdout, done.stdout + done.stderr
    assert report.read_text() == "# the earlier report\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.md"]


def test_every_file_is_redacted_and_the_paste_says_so(tmp_path):
    secrets = Redactor().with_known([("HF_TOKEN", "hf_abcdefghijklmnopqrstuvwxyz123456")])
    texts = {
        tmp_path / name: f"# title\n\ntoken hf_abcdefghijklmnopqrstuvwxyz123456 in {name}\n"
        for name in ("results.json", "report.md", "paste.md")
    }
    redacted.write_all(texts, secrets, paste=tmp_path / "paste.md")
    for path in texts:
        assert "hf_abcdefghijklmnopqrstuvwxyz123456" not in path.read_text()
        assert "<redacted:HF_TOKEN>" in path.read_text()
    assert "heisenbisect redacted 1 secret value" in (tmp_path / "paste.md").read_text()
    assert "heisenbisect redacted" not in (tmp_path / "report.md").read_text()
