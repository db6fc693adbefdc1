"""The server-log check: a matching line counts, a clean log counts nothing (the server target's
test runs it against the fake server's log: tests/targets/test_server_target.py)."""

from __future__ import annotations

from heisenbisect.checks.log_signals import LogSignal, count_signals, signal_line

FSM = LogSignal("fsm", "Failed to advance FSM")
ACCEPT = LogSignal("spec_accept", r"accept len: ([0-9.]+)", below=1.05)


def test_a_clean_log_counts_nothing():
    log = "INFO decode batch, accept len: 2.31\nINFO prefill batch\n"
    assert count_signals((FSM, ACCEPT), log) == {} and signal_line({}) == ""


def test_matching_lines_count_and_a_floor_counts_only_below_it():
    log = ("ERROR Failed to advance FSM\nINFO accept len: 1.00\nINFO accept len: 1.80\n"
           "ERROR Failed to advance FSM\n")
    counts = count_signals((FSM, ACCEPT), log)
    assert counts == {"fsm": 2, "spec_accept": 1}
    assert signal_line(counts) == "signals: fsm=2 spec_accept=1"
