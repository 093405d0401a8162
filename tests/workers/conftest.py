"""The fixture of the tests that start the web app and workers as processes."""

import pytest

from tests.workers.processes import Processes, drop_queued


@pytest.fixture
def procs(tmp_path, broker):
    """The processes of one test (needs the module to import the ``broker`` fixture); queues emptied before
    and after."""
    p = Processes(tmp_path, broker)
    drop_queued(broker)
    try:
        yield p
    finally:
        p.stop_all()
        drop_queued(broker)
