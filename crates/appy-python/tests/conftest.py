import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def pytest_addoption(parser):
    parser.addoption("--device", default="cpu", choices=["cpu", "gpu"],
                     help="the back end the tests run on (default: cpu)")


@pytest.fixture(autouse=True, scope="session")
def _cpu_and_private_cache(tmp_path_factory, request):
    """The tests run on the CPU back end (`--device gpu`: on the GPU) with a cache of
    their own."""
    os.environ["APPY_CACHE_DIR"] = str(tmp_path_factory.mktemp("appy-cache"))
    import appy
    appy.device(request.config.getoption("--device"))
    yield


def pythonpath(*dirs):
    """A child process's PYTHONPATH: `dirs`, then the inherited one (where the appy
    package may be found when it is not installed)."""
    inherited = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    return os.pathsep.join([str(d) for d in dirs] + inherited)


def sizes():
    """1, primes, and lengths that are not multiples of any vector length."""
    return [1, 2, 7, 31, 257, 1009, 4099]
