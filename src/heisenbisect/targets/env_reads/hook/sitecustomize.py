"""heisenbisect's environment-read tracker, run by every Python process of a trial.

heisenbisect puts this file's folder first on the trial's PYTHONPATH, so Python's ``site``
imports it at startup in the target and in every Python process the target starts (a
forked or spawned server worker, a grandchild ``python -c``: they inherit the environment).
It watches the variables named in ``HEISENBISECT_WATCH_VARS`` (joined by ``=``, which no
name holds) and appends to ``$HEISENBISECT_READS_DIR/reads``, one tab-separated line each:

- ``PID start`` when the process starts (and when a fork's child starts);
- ``PID read NAME`` the first time the process looks NAME up by name (``os.environ[...]``,
  ``.get``, ``in``, ``os.getenv``, ``os.environb``), for a watched NAME or one within one
  deletion of a watched name on each side, case ignored (a misspelling's intended name);
- ``PID copy FILE:LINE`` the first time it enumerates or copies the whole environment
  (``dict(os.environ)``, ``.copy()``, ``.items()``), which may read any name; the lookups
  ``.items()``, ``.values()`` and ``.copy()`` make of every name are not reads by name.
  urllib's proxy lookup enumerates it too, but reads only ``*_proxy`` names: those count
  as read, and the enumeration as no copy.

Then it imports the ``sitecustomize`` it hides (the user's or the virtualenv's), so that
one still runs. Nothing here may break the target: every failure is silent. Python 3.6+
syntax, standard library only: the target's interpreter may not be heisenbisect's.
"""

import os
import sys

WATCH_VAR = "HEISENBISECT_WATCH_VARS"
READS_DIR_VAR = "HEISENBISECT_READS_DIR"
NEAR_MIN_LENGTH = 4  # shorter names are all near one another


def _deletions(name):
    """``name`` upper-cased, and each string left by deleting one of its characters."""
    name = name.upper()
    return {name} | {name[:i] + name[i + 1 :] for i in range(len(name))}


class _Tracker:
    """The records of this process: what it looked up, whether it copied the environment."""

    def __init__(self, folder, watched):
        self.path = os.path.join(folder, "reads")
        self.watched = frozenset(watched)
        self.proxies = [n for n in self.watched if n.lower().endswith("_proxy")]
        self.near_index = None  # deletion variants of the watched names, built at first need
        self.near_lengths = frozenset(
            len(n) + d for n in self.watched if len(n) >= NEAR_MIN_LENGTH for d in (-1, 0, 1)
        )
        self.reset()

    def reset(self):
        self.done = set()  # keys already looked at (str or bytes)
        self.copied = False
        self.write("start")

    def write(self, *fields):
        line = "\t".join((str(os.getpid()),) + tuple(_escape(f) for f in fields)) + "\n"
        try:
            fd = os.open(
                self.path,
                os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0),
                0o644,
            )
            try:
                os.write(fd, line.encode("utf-8", "surrogateescape"))
            finally:
                os.close(fd)
        except (OSError, ValueError):
            pass

    def looked_up(self, key):
        self.done.add(key)
        name = key.decode("utf-8", "surrogateescape") if isinstance(key, bytes) else key
        if not isinstance(name, str):
            return
        if name in self.watched or self.near(name):
            self.write("read", name)

    def near(self, name):
        if len(name) < NEAR_MIN_LENGTH or len(name) not in self.near_lengths:
            return False
        if self.near_index is None:
            self.near_index = set()
            for watched in self.watched:
                if len(watched) >= NEAR_MIN_LENGTH:
                    self.near_index |= _deletions(watched)
        return not self.near_index.isdisjoint(_deletions(name))

    def enumerated(self, frame):
        """The environment is being iterated: by whom, and what that may read."""
        while frame is not None and frame.f_globals.get("__name__") in (
            "os",
            "collections.abc",
            "_collections_abc",
        ):
            frame = frame.f_back
        if frame is None:
            return
        code = frame.f_code
        if (
            code.co_name == "getproxies_environment"
            and frame.f_globals.get("__name__") == "urllib.request"
        ):
            for name in self.proxies:
                if name not in self.done:
                    self.looked_up(name)
            return
        self.copied = True
        self.write("copy", f"{code.co_filename}:{frame.f_lineno}")


def _bulk(frame):
    """Whether a lookup is one of a whole-environment copy's (``.items()``, ``.values()``, ``.copy()``)."""
    module, name = frame.f_globals.get("__name__"), frame.f_code.co_name
    if module in ("collections.abc", "_collections_abc"):
        return name == "__iter__"
    return module == "os" and name in ("copy", "__or__", "__ror__")


def _escape(text):
    return text.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n")


def _install(tracker):
    environ_class = os._Environ
    getitem, iterate = environ_class.__getitem__, environ_class.__iter__

    def __getitem__(self, key):
        try:
            new = key not in tracker.done
        except TypeError:  # unhashable: the original raises its own error
            new = False
        if new and not _bulk(sys._getframe(1)):
            tracker.looked_up(key)
        return getitem(self, key)

    def __iter__(self):
        if not tracker.copied:
            tracker.enumerated(sys._getframe(1))
        return iterate(self)

    environ_class.__getitem__ = __getitem__
    environ_class.__iter__ = __iter__
    if hasattr(os, "register_at_fork"):
        os.register_at_fork(after_in_child=tracker.reset)


def _chain():
    """Run the ``sitecustomize`` this one hides, as ``site`` would have, under its own name."""
    try:  # the import system's own modules, loaded already: importlib.util would cost milliseconds
        from _frozen_importlib import module_from_spec
        from _frozen_importlib_external import PathFinder
    except ImportError:
        from importlib.machinery import PathFinder
        from importlib.util import module_from_spec

    here = os.path.dirname(os.path.abspath(__file__))
    path = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    spec = PathFinder.find_spec("sitecustomize", path)
    if spec is None or spec.loader is None:
        return
    module = module_from_spec(spec)
    sys.modules["sitecustomize"] = module
    spec.loader.exec_module(module)  # its errors reach site, which reports them as it would have


def _start():
    folder, names = os.environ.get(READS_DIR_VAR), os.environ.get(WATCH_VAR)
    if folder and names:
        try:
            _install(_Tracker(folder, [n for n in names.split("=") if n]))
        except Exception:
            pass


_start()
_chain()
