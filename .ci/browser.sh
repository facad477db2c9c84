#!/usr/bin/env bash
# Installs Debian's chromium and chromium-driver for tests/graph/test_browser.py (the HTML page
# driven in a headless browser), as root and only when they are missing. Never fails the run:
# without them that test skips and says why.
if command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1; then
    exit 0
fi
if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
        chromium chromium-driver) >/dev/null 2>&1 \
        || echo "note: chromium/chromium-driver not installed; tests/graph/test_browser.py will skip"
else
    echo "note: not root or no apt-get: chromium not installed; tests/graph/test_browser.py will skip"
fi
exit 0
