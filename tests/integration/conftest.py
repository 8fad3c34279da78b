"""Fixtures: the shared demo server (session), a factory for extra demos with custom flags.

The demo binary is $INFERSERVE_DEMO, default build/examples/demo/inferserve-demo.
"""
import os
import signal

import pytest

from isvtest import Demo


# Set when $INFERSERVE_DEMO is a host that serves the zoo through the transport adapter
# (examples/microhttpd: HTTP/1.1 only, no command-line flags): the cases that need h2c, gRPC or
# the demo's flags are skipped, every other case runs as it does against the demo
# (test_microhttpd.py runs the V2 REST files this way).
ADAPTER_HOST = os.environ.get("INFERSERVE_ADAPTER_HOST")
_NEEDS_THE_DEMO = ("h2c", "grpc", "h2_")


def pytest_collection_modifyitems(config, items):
    if not ADAPTER_HOST:
        return
    skip = pytest.mark.skip(reason="%s carries HTTP/1.1 only (no h2c, no gRPC)" % ADAPTER_HOST)
    for item in items:
        if any(k in item.name for k in _NEEDS_THE_DEMO):
            item.add_marker(skip)


@pytest.fixture(scope="session")
def _session_demo():
    holder = {"demo": Demo()}
    yield holder
    # Teardown: SIGTERM must make the server exit 0 within 10 s.
    holder["demo"].stop_and_check(signal.SIGTERM, timeout=10.0)


@pytest.fixture
def demo(_session_demo):
    """The shared demo server. If a previous test killed it, that test was reported as an
    error at its teardown; a fresh server is started so that one crash does not cascade."""
    d = _session_demo["demo"]
    if not d.alive():
        _session_demo["demo"] = d = Demo()
    yield d
    if not d.alive():
        pytest.fail("the demo server died during this test: " + d.describe_exit(d.proc.returncode),
                    pytrace=False)


@pytest.fixture
def start_demo():
    """start_demo(*flags, env=None) -> a new Demo with extra command-line flags (limits) and
    environment variables. Every demo still running at the end of the test is stopped with
    SIGTERM and must exit 0."""
    started = []

    def start(*flags, env=None):
        if ADAPTER_HOST and (flags or env):
            pytest.skip("%s takes no command-line flags or environment" % ADAPTER_HOST)
        d = Demo(extra_args=flags, env=env)
        started.append(d)
        return d

    yield start
    problems = []
    for d in started:
        if d.proc.poll() is not None and d.proc.returncode != 0:
            problems.append(d.describe_exit(d.proc.returncode))
        elif d.alive():
            rc = d.stop(signal.SIGTERM, 10.0)
            if rc != 0:
                problems.append(d.describe_exit(rc))
    if problems:
        pytest.fail("\n\n".join(problems), pytrace=False)
