"""Fixtures: the repository, and the command-line binaries the API is
compared with (built in the `ci` profile when missing)."""

import json
import os
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _binary(name):
    for prof in ("ci", "release"):
        p = os.path.join(ROOT, "target", prof, name)
        if os.access(p, os.X_OK):
            return p
    subprocess.run(["cargo", "build", "--profile", "ci", "--bin", name], cwd=ROOT, check=True)
    return os.path.join(ROOT, "target", "ci", name)


@pytest.fixture(scope="session")
def root():
    return ROOT


@pytest.fixture(scope="session")
def loggopsim():
    return _binary("loggopsim")


@pytest.fixture(scope="session")
def ibnet():
    return _binary("ibnet")


def run_json(cmd):
    """Run a binary, return its JSON output (stdout)."""
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def run_fail(cmd):
    """Run a binary that must fail; return (exit code, stderr)."""
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    assert p.returncode != 0
    return p.returncode, p.stderr
