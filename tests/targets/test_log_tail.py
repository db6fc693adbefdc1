"""`targets.log_tail.read_tail`, which the reports (last output line, last traceback, paste.md's
log) and a server's startup error read a log's end through. Real files."""

from __future__ import annotations

from heisenbisect.targets.log_tail import read_tail


def test_the_last_bytes_of_a_long_log_and_the_whole_of_a_short_one(tmp_path):
    log = tmp_path / "t.log"
    log.write_bytes(b"".join(b"line %d\n" % i for i in range(1000)))
    assert read_tail(log, 16) == "ne 998\nline 999\n"
    assert read_tail(str(log), 1 << 20) == log.read_text()


def test_a_missing_log_is_none_and_undecodable_bytes_are_replaced(tmp_path):
    assert read_tail(tmp_path / "gone.log", 100) is None
    assert read_tail(tmp_path, 100) is None  # a folder: unreadable, not an error
    (tmp_path / "t.log").write_bytes("café\n".encode()[:-2] + b"\xff\n")
    assert read_tail(tmp_path / "t.log", 100) == "caf\ufffd\ufffd\n"
