"""dynalock_fakedb.plugin: pytest fixtures that run fakedb for a test session.

Loaded through the pytest11 entry point when installed with pip (or with the fakedb
Debian package's .dist-info), or with `pytest -p dynalock_fakedb.plugin`. One fakedb per
session; every test that asks for `fakedb` gets it reset. docs/testing.md describes it.
"""

import os
import shlex

import pytest

from . import FakeDB


def pytest_addoption(parser):
    group = parser.getgroup("fakedb", "fakedb, the fake DynamoDB server")
    group.addoption("--fakedb-bin", default=None,
                    help="the fakedb program (default: $FAKEDB_BIN, else fakedb on PATH)")
    group.addoption("--fakedb-arg", action="append", default=[],
                    help="an extra argument for fakedb (repeatable), e.g. --fakedb-arg=--log")
    group.addoption("--fakedb-clock", default=None,
                    help="fakedb's --clock (default: fake, starting now)")
    group.addoption("--fakedb-credentials", action="store_true", default=False,
                    help="run fakedb with --credentials: requests are verified, and the "
                         "fixtures' clients and admin calls carry the keys")
    parser.addini("fakedb_bin", "the fakedb program", default="")
    parser.addini("fakedb_args", "extra arguments for fakedb (shell words)", default="")


@pytest.fixture(scope="session")
def fakedb_server(request):
    """The session's fakedb, started on first use and stopped at the session's end
    (also when tests fail or the session is interrupted)."""
    cfg = request.config
    binary = cfg.getoption("fakedb_bin") or cfg.getini("fakedb_bin") or None
    args = shlex.split(cfg.getini("fakedb_args") or "")
    args += shlex.split(os.environ.get("FAKEDB_ARGS", ""))
    args += cfg.getoption("fakedb_arg")
    clock = cfg.getoption("fakedb_clock") or "fake"
    server = FakeDB(binary=binary, args=args, clock=clock,
                    credentials=cfg.getoption("fakedb_credentials"))
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def fakedb(fakedb_server):
    """The session's fakedb, reset (no tables, no faults, stats zeroed) before the test."""
    fakedb_server.reset()
    return fakedb_server


@pytest.fixture
def fakedb_endpoint(fakedb):
    """The reset fakedb's URL, e.g. http://127.0.0.1:41234."""
    return fakedb.endpoint


@pytest.fixture
def fakedb_env(fakedb, monkeypatch):
    """Sets the AWS environment (endpoint, region, dummy credentials) for the test and
    returns it as a dict; AWS_PROFILE and AWS_SESSION_TOKEN are unset."""
    env = fakedb.env()
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    return env


@pytest.fixture
def fakedb_client(fakedb):
    """A boto3 DynamoDB client for the reset fakedb."""
    return fakedb.boto3_client("dynamodb")


@pytest.fixture
def fakedb_resource(fakedb):
    """A boto3 DynamoDB service resource for the reset fakedb."""
    return fakedb.boto3_resource("dynamodb")
