"""The documentation site builds in strict mode and renders in a real browser.

* ``mkdocs build --strict`` (the command the README gives) succeeds: a broken link, a missing
  anchor or an API reference target that does not resolve fails it. Skipped, with the reason,
  when the ``docs`` extra (mkdocs, mkdocs-material, mkdocstrings) is not installed.
* The API reference holds every public name (``inftda_sql.__all__``, ``inftda_sql.spark``,
  ``inftda_sql.pandas``), generated from the docstrings.
* Headless Chromium (the system's ``chromium``; skipped, with the reason, when none is found)
  opens the start page, the API reference and a how-to page over HTTP: each renders its code
  blocks, and every image of the pages is fetched by the browser with status 200.
"""

from __future__ import annotations

import functools
import http.server
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import pytest

import inftda_sql
import inftda_sql.pandas
import inftda_sql.spark

ROOT = Path(__file__).resolve().parents[2]
BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    missing = [
        m for m in ("mkdocs", "material", "mkdocstrings") if importlib.util.find_spec(m) is None
    ]
    if missing:
        pytest.skip(
            f"the docs extra is not installed ({', '.join(missing)}): pip install -e '.[docs]'"
        )
    out = tmp_path_factory.mktemp("site")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "mkdocs",
            "build",
            "--strict",
            "-f",
            str(ROOT / "mkdocs.yml"),
            "-d",
            str(out),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert done.returncode == 0, done.stderr[-4000:]
    return out


def test_the_site_builds_strictly(site: Path) -> None:
    for page in (
        "index.html",
        "getting-started/index.html",
        "reference/index.html",
        "how-to/od-trees/index.html",
        "mechanisms/index.html",
        "proofs/noise/index.html",
    ):
        assert (site / page).is_file(), page
    assert (site / "benchmarks" / "uk.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_reference_holds_every_public_name(site: Path) -> None:
    pages = {
        "reference/index.html": [n for n in inftda_sql.__all__ if n != "__version__"],
        "reference/spark/index.html": inftda_sql.spark.__all__,
        "reference/pandas/index.html": inftda_sql.pandas.__all__,
    }
    for page, names in pages.items():
        html = (site / page).read_text(encoding="utf-8")
        for name in names:
            assert re.search(rf'id="[\w.]*\b{name}"', html), (page, name)
    # from the docstrings, not a copy: release()'s own first line is there
    first = (inftda_sql.release.__doc__ or "").strip().splitlines()[0]
    assert first.split("`")[0][:30] in (site / "reference/index.html").read_text(encoding="utf-8")


class _Log(http.server.SimpleHTTPRequestHandler):
    served: ClassVar[list[tuple[str, int]]] = []

    def log_request(self, code: object = "-", size: object = "-") -> None:
        self.served.append((self.path, int(str(code))))

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def server(site: Path) -> Iterator[str]:
    handler = functools.partial(_Log, directory=str(site))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def _browser() -> str:
    for name in BROWSERS:
        if found := shutil.which(name):
            return found
    pytest.skip(f"no headless browser found ({', '.join(BROWSERS)}): apt-get install chromium")


def _chromium(*args: str, tmp_path: Path) -> str:
    done = subprocess.run(
        [
            _browser(),
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            f"--user-data-dir={tmp_path / 'profile'}",
            "--virtual-time-budget=5000",
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


@pytest.mark.parametrize(
    ("page", "image"),
    [
        ("", None),
        ("reference/", None),
        ("mechanisms/inftda/", "/benchmarks/uk.png"),
        ("how-to/od-trees/", "/benchmarks/uk_zoom.png"),
    ],
)
def test_pages_render_in_a_browser(
    page: str, image: str | None, server: str, tmp_path: Path
) -> None:
    _Log.served.clear()
    dom = _chromium("--dump-dom", f"{server}/{page}", tmp_path=tmp_path)
    assert "<pre" in dom and "<code" in dom, page  # code blocks rendered
    assert 'class="md-content"' in dom  # the theme's layout, not a bare file
    images = re.findall(r'<img[^>]*src="([^"]+)"', dom)
    if image is not None:
        assert any(src.endswith(image.rsplit("/", 1)[1]) for src in images), images
        assert (image, 200) in _Log.served, _Log.served  # the browser fetched it
    failed = [(path, code) for path, code in _Log.served if code != 200]
    assert not failed, failed  # every stylesheet, script and image the page asked for loaded


def test_a_screenshot_of_a_how_to(server: str, tmp_path: Path) -> None:
    shot = tmp_path / "how-to.png"
    _chromium(
        f"--screenshot={shot}",
        "--window-size=1280,1600",
        f"{server}/how-to/od-trees/",
        tmp_path=tmp_path,
    )
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000  # a rendered page, not blank
