"""The target kit: a `TrialTarget` of any kind against real programs that misbehave.

A target's author writes one function, ``make(argv, timeout_s) -> TrialTarget``: a target of their
kind that runs ``argv`` as its process (a command target's command, a server target's launcher)
and gives up on it after ``timeout_s``; then calls `check_target` (or one check at a time). The
programs are real processes, written into a folder the caller gives; each check raises
`KitFailure` saying what the target did wrong, and returns the outcome for any further look.

What every target must survive, whatever it runs (`PROCESS_CHECKS`):

- a program that hangs: the trial times out, and its whole tree is killed;
- cancellation: ``execute`` returns at once (``error``, ``cancelled``), nothing left running;
- a grandchild that calls ``setsid`` and so leaves the trial's process group: still killed;
- a program that never ran (no such command, no such script): an error, never a clean run.

And a target that reads its result from the program's output (`OUTPUT_CHECKS`):

- a broken JSON result line on stdout: an error, never a clean or a failed run;
- a result line followed by warnings on stderr: the result counts.

Each program runs with a variable of its own in its environment, inherited by everything it
starts; a process still carrying it once the target is done is one the target left behind. A
program given ``--help`` answers it (or hands it on after ``--``, see below) without misbehaving:
a server target may ask its launcher for its flags before launching it. A target whose process
must be something real (a server) may append ``-- REAL COMMAND`` to ``argv``: a program that
would end cleanly then ``exec``s it instead.
"""

from __future__ import annotations

import os
import secrets
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from heisenbisect.records import Config, Outcome, Trial, TrialStatus
from heisenbisect.targets.base import TrialTarget

TargetMaker = Callable[[Sequence[str], float], TrialTarget]
KIT_VAR = "HEISENBISECT_TARGET_KIT"
HANG_S = 3600  # longer than any check waits: a program still there after a check was left behind
READY_S = 120.0  # how long a check waits for its program to start (a loaded machine is slow)
RETURN_S = (
    120.0  # how long a cancelled ``execute`` may take to return before the kit calls it stuck
)
RUN_S = 300.0  # the timeout of a run meant to end on its own (a server target starts a server)
TIMEOUTS_S = (
    2.0,
    8.0,
    32.0,
)  # check_timeout's, tried in turn until the program was up when it struck

PROGRAM = r'''
import os, sys, time

behaviour, pids = sys.argv[1], sys.argv[2]
real = sys.argv[sys.argv.index("--") + 1:] if "--" in sys.argv else []


def note(role):
    with open(os.path.join(pids, f"{role}-{os.getpid()}"), "w") as f:
        f.write(str(os.getpid()))


def escape():
    """A grandchild in a session of its own: out of the process group, reparented to init."""
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            note("escaped")
            time.sleep(3600)
        os._exit(0)
    os.wait()
    while not any(name.startswith("escaped-") for name in os.listdir(pids)):
        time.sleep(0.01)


def end_cleanly():
    if real:
        os.execvp(real[0], real)
    print('{"failures": 0, "total": 1}')


if "--help" in sys.argv:
    if real:
        os.execvp(real[0], real)
    print("usage: misbehave BEHAVIOUR PIDS [-- COMMAND]")
    sys.exit(0)
os.makedirs(pids, exist_ok=True)
note("leader")
if behaviour == "hang":
    escape()
    time.sleep(3600)
elif behaviour == "escape":
    escape()
    end_cleanly()
elif behaviour == "bad_json":
    print('{"failures": 1, "total": 4', flush=True)
elif behaviour == "warnings_after_result":
    print('{"failures": 1, "total": 4}', flush=True)
    for i in range(50):
        print(f"WARNING: a library's complaint {i} after the result", file=sys.stderr)
'''


class KitFailure(AssertionError):
    """The target broke its contract (`targets.base.TrialTarget`) against one of the kit's programs."""


class _Run:
    """One check's program: its argv, its marker, the folder it notes its processes in."""

    def __init__(self, folder: Path, behaviour: str):
        self.folder = folder / f"{behaviour}-{secrets.token_hex(4)}"
        self.folder.mkdir(parents=True)
        script = self.folder / "misbehave.py"
        script.write_text(PROGRAM)
        self.pids = self.folder / "pids"
        self.argv = (sys.executable, str(script), behaviour, str(self.pids))
        self.marker = secrets.token_hex(8)

    def trial(self) -> Trial:
        return Trial("kit-0000", Config(), 0, seed=1, env={KIT_VAR: self.marker})

    def execute(self, target: TrialTarget, cancelled: threading.Event | None = None) -> Outcome:
        return target.execute(
            self.trial(), self.folder / "trial.log", cancelled or threading.Event()
        )

    def started(self, role: str) -> bool:
        return self.pids.is_dir() and any(
            p.name.startswith(f"{role}-") for p in self.pids.iterdir()
        )

    def left_behind(self) -> list[str]:
        """``pid command`` of every live process that still carries this run's marker."""
        needle = f"{KIT_VAR}={self.marker}".encode()
        found = []
        for name in os.listdir("/proc"):
            if not name.isdigit() or int(name) == os.getpid():
                continue
            try:
                with open(f"/proc/{name}/environ", "rb") as f:
                    if needle not in f.read().split(b"\0"):
                        continue
                with open(f"/proc/{name}/stat", "rb") as f:
                    if f.read().rsplit(b")", 1)[1].split()[0] == b"Z":
                        continue  # dead, waiting for its parent (or init) to reap it
                with open(f"/proc/{name}/cmdline", "rb") as f:
                    command = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
                found.append(f"{name} {command}")
            except (OSError, IndexError):  # gone, or not ours to read
                continue
        return found


def _expect(condition: bool, what: str, outcome: Outcome | None = None) -> None:
    if not condition:
        said = (
            f" (it returned {outcome.status.value}: {outcome.detail!r})"
            if outcome is not None
            else ""
        )
        raise KitFailure(what + said)


def _nothing_left(run: _Run, when: str) -> None:
    left = run.left_behind()
    _expect(not left, f"processes of the program are still running {when}: {left}")


def _run_to_its_end(make: TargetMaker, folder: Path, behaviour: str) -> tuple[_Run, Outcome]:
    """A program meant to end on its own, run once; its target closed after (a server stopped)."""
    run = _Run(folder, behaviour)
    target = make(run.argv, RUN_S)
    try:
        return run, run.execute(target)
    finally:
        target.close()


def check_timeout(make: TargetMaker, folder: Path) -> Outcome:
    """A program that hangs (with a setsid grandchild): ``timeout``, and its whole tree killed.

    The timeout starts short and doubles until the grandchild was up before it struck, so a
    loaded machine makes the check slower, never vacuous."""
    for timeout_s in TIMEOUTS_S:
        run = _Run(folder, "hang")
        target = make(run.argv, timeout_s)
        try:
            outcome = run.execute(target)
            _expect(
                outcome.status is TrialStatus.TIMEOUT,
                "a program that hangs must end in a timeout",
                outcome,
            )
            _nothing_left(run, "after its trial timed out")
        finally:
            target.close()
        if run.started("escaped"):
            return outcome
    raise KitFailure(f"the program's grandchild never started within {TIMEOUTS_S[-1]:g}s")


def check_cancel(make: TargetMaker, folder: Path) -> Outcome:
    """Cancelled while its program hangs: ``execute`` returns (``error``, ``cancelled``), nothing left."""
    run = _Run(folder, "hang")
    target = make(run.argv, HANG_S)
    cancelled, returned = threading.Event(), []
    worker = threading.Thread(
        target=lambda: returned.append(run.execute(target, cancelled)), daemon=True
    )
    worker.start()
    try:
        deadline = time.monotonic() + READY_S
        while not run.started("escaped") and worker.is_alive() and time.monotonic() < deadline:
            time.sleep(0.02)
        _expect(
            run.started("escaped"),
            f"the program did not start within {READY_S:g}s",
            returned[0] if returned else None,
        )
        cancelled.set()
        worker.join(RETURN_S)
        _expect(
            not worker.is_alive(), f"execute did not return within {RETURN_S:g}s of being cancelled"
        )
        outcome = returned[0]
        _expect(
            outcome.status is TrialStatus.ERROR and outcome.detail == "cancelled",
            "a cancelled trial must end as an error, 'cancelled'",
            outcome,
        )
        _nothing_left(run, "once the cancelled trial returned")
    finally:
        cancelled.set()
        target.close()
    return outcome


def check_setsid_grandchild(make: TargetMaker, folder: Path) -> Outcome:
    """A program whose grandchild left the process group (``setsid``), then ended cleanly: the
    trial counts, and the grandchild is killed all the same."""
    run, outcome = _run_to_its_end(make, folder, "escape")
    _expect(
        outcome.status is TrialStatus.OK,
        "a program that ended cleanly must be a clean trial",
        outcome,
    )
    _expect(run.started("escaped"), "the program's grandchild never started")
    _nothing_left(run, "after the trial and close()")
    return outcome


def check_never_ran(make: TargetMaker, folder: Path) -> list[Outcome]:
    """No such command, and ``python`` with no such script: errors, never a clean or failed run."""
    missing = folder / f"missing-{secrets.token_hex(4)}"
    outcomes = []
    for i, argv in enumerate(
        ((str(missing / "no-such-command"),), (sys.executable, str(missing / "no_such_script.py")))
    ):
        target = make(argv, RUN_S)
        try:
            outcome = target.execute(
                Trial("kit-0000", Config(), 0, seed=1),
                folder / f"{missing.name}-{i}.log",
                threading.Event(),
            )
        finally:
            target.close()
        _expect(
            outcome.status is TrialStatus.ERROR,
            f"{' '.join(argv)} never ran: that must be an error",
            outcome,
        )
        outcomes.append(outcome)
    return outcomes


def check_bad_json(make: TargetMaker, folder: Path) -> Outcome:
    """A result line cut short (``{"failures": 1, "total": 4``), exit 0: an error, not evidence."""
    run, outcome = _run_to_its_end(make, folder, "bad_json")
    _expect(
        outcome.status is TrialStatus.ERROR,
        "a broken result line must be an error, not evidence",
        outcome,
    )
    _nothing_left(run, "after the trial and close()")
    return outcome


def check_result_then_warnings(make: TargetMaker, folder: Path) -> Outcome:
    """A result line on stdout, then warnings on stderr: the result (1 of 4 failed) counts."""
    run, outcome = _run_to_its_end(make, folder, "warnings_after_result")
    _expect(
        (outcome.status, outcome.failures, outcome.total) == (TrialStatus.OK, 1, 4),
        "the result line (1 of 4 failed) must count whatever stderr says after it",
        outcome,
    )
    _nothing_left(run, "after the trial and close()")
    return outcome


PROCESS_CHECKS = (check_timeout, check_cancel, check_setsid_grandchild, check_never_ran)
OUTPUT_CHECKS = (check_bad_json, check_result_then_warnings)


def check_target(make: TargetMaker, folder: Path, *, reads_output: bool = True) -> None:
    """Every check; ``reads_output``: the target reads its result from its program's output."""
    for check in PROCESS_CHECKS + (OUTPUT_CHECKS if reads_output else ()):
        check(make, folder)
