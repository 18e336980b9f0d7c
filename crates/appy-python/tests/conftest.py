import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


@pytest.fixture(autouse=True, scope="session")
def _cpu_and_private_cache(tmp_path_factory):
    """The tests run on the CPU back end with a cache of their own."""
    os.environ["APPY_CACHE_DIR"] = str(tmp_path_factory.mktemp("appy-cache"))
    import appy
    appy.device("cpu")
    yield


def pythonpath(*dirs):
    """A child process's PYTHONPATH: `dirs`, then the inherited one (where the appy
    package may be found when it is not installed)."""
    inherited = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    return os.pathsep.join([str(d) for d in dirs] + inherited)


def sizes():
    """1, primes, and lengths that are not multiples of any vector length."""
    return [1, 2, 7, 31, 257, 1009, 4099]
