"""Debian's headless Chromium under selenium, offline, for the tests of rageval's HTML pages."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest


def chromium(size: str = "1280,900", downloads: Path | None = None):
    """A headless Chromium driver (a fresh profile: nothing remembered from another page), for
    a page served on 127.0.0.1; ``downloads``: where files the page saves land. Skips the test
    when chromium, chromedriver or selenium is missing."""
    chrome, driver = shutil.which("chromium"), shutil.which("chromedriver")
    if not (chrome and driver):
        pytest.skip("headless Chromium missing: apt-get install chromium chromium-driver")
    webdriver = pytest.importorskip("selenium.webdriver")
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = chrome
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", f"--window-size={size}"):
        opts.add_argument(a)
    if downloads is not None:
        opts.add_experimental_option(
            "prefs",
            {"download.default_directory": str(downloads), "download.prompt_for_download": False},
        )
    return webdriver.Chrome(service=Service(executable_path=driver), options=opts)


def offline_chromium(size: str = "1280,900", downloads: Path | None = None):
    """:func:`chromium` with the network off (a page that fetched anything would fail and show
    it in its performance entries)."""
    d = chromium(size, downloads)
    if downloads is not None:
        d.execute_cdp_cmd(
            "Browser.setDownloadBehavior", {"behavior": "allow", "downloadPath": str(downloads)}
        )
    d.execute_cdp_cmd("Network.enable", {})
    d.execute_cdp_cmd(
        "Network.emulateNetworkConditions",
        {"offline": True, "latency": 0, "downloadThroughput": -1, "uploadThroughput": -1},
    )
    return d
