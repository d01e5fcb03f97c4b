import pytest

from trustlab.devices.ftpm import DEFAULT_STORAGE_PROFILE
from trustlab.timing import registry
from trustlab.timing.clock import Clock


@pytest.fixture
def clock() -> Clock:
    return Clock(registry.load(DEFAULT_STORAGE_PROFILE))
