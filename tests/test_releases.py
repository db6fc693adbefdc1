"""Listing a package's versions: a wheel folder, a simple-API index over real HTTP; the range."""

from __future__ import annotations

import functools
import http.server
import threading

import pytest
from packaging.version import Version

from heisenbisect.errors import HeisenbisectError
from heisenbisect.releases import (
    Release,
    between,
    parse_version,
    versions_from_index,
    versions_in_folder,
)
from wheelhouse import write_wheel


def test_a_folder_lists_wheels_and_sdists_of_the_package_only(tmp_path):
    for version in ("1.10.0", "1.9.0", "2.0.0rc1"):
        write_wheel(tmp_path, "My_Pkg", version, {"my_pkg/__init__.py": ""})
    (tmp_path / "my-pkg-1.2.0.tar.gz").write_bytes(b"")
    (tmp_path / "other-3.0.0-py3-none-any.whl").write_bytes(b"")
    (tmp_path / "notes.txt").write_text("")
    found = versions_in_folder(tmp_path, "my.pkg")
    assert [str(r.version) for r in found] == ["1.2.0", "1.9.0", "1.10.0", "2.0.0rc1"]
    with pytest.raises(HeisenbisectError, match="--find-links: .* is not a folder"):
        versions_in_folder(tmp_path / "missing", "my-pkg")


def test_between_orders_by_pep_440_and_leaves_out_pre_releases_and_yanked_unless_asked():
    releases = [
        Release(Version(v), yanked=v == "1.3.0")
        for v in ("1.10.0", "1.2.0", "1.3.0", "1.4.0b1", "1.9.0", "1.0.0", "2.0.0rc1")
    ]
    good, bad = Version("1.0.0"), Version("2.0.0rc1")
    assert [str(v) for v in between(releases, good, bad, False, False)] == [
        "1.2.0",
        "1.9.0",
        "1.10.0",
        "2.0.0rc1",  # an end the user named counts, pre-release or not
    ]
    assert "1.4.0b1" in [str(v) for v in between(releases, good, bad, True, False)]
    assert "1.3.0" in [str(v) for v in between(releases, good, bad, False, True)]
    with pytest.raises(HeisenbisectError, match="--good: 'one' is not a version"):
        parse_version("one", "--good")


@pytest.fixture
def index(tmp_path):
    """A PEP 503 index served over real HTTP from a folder; its URL."""
    page = tmp_path / "simple" / "my-pkg" / "index.html"
    page.parent.mkdir(parents=True)
    page.write_text(
        "<html><body>"
        '<a href="../../files/my_pkg-1.0.0-py3-none-any.whl#sha256=00">my_pkg-1.0.0</a>'
        '<a href="../../files/my_pkg-1.1.0-py3-none-any.whl" data-yanked="broken">x</a>'
        '<a href="../../files/my-pkg-1.2.0.tar.gz">my-pkg-1.2.0.tar.gz</a>'
        '<a href="../../files/my_pkg-1.2.0-py3-none-any.whl" data-yanked="">x</a>'
        "</body></html>"
    )
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(tmp_path))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _quiet(handler))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/simple"
    finally:
        server.shutdown()
        server.server_close()


def _quiet(handler):
    class Quiet(handler.func):  # type: ignore[misc, name-defined]
        def log_message(self, *args):
            pass

    return functools.partial(Quiet, *handler.args, **handler.keywords)


def test_an_index_lists_versions_and_a_version_is_yanked_only_when_every_file_is(index):
    found = {str(r.version): r.yanked for r in versions_from_index(index, "My_Pkg")}
    assert found == {"1.0.0": False, "1.1.0": True, "1.2.0": False}
    with pytest.raises(HeisenbisectError, match="has no package 'nothing'"):
        versions_from_index(index, "nothing")


def test_an_index_that_cannot_be_reached_is_one_line():
    with pytest.raises(HeisenbisectError, match="--index-url: cannot read http://127.0.0.1:9/"):
        versions_from_index("http://127.0.0.1:9/simple", "my-pkg")
