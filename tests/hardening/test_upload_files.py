"""Django's temporary upload files (#48.5): 38 were left in the system's temporary folder after kill -9. They
now live in the data directory, named by their host and process, and the next upload sweeps those of
processes that are gone."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO

UPLOAD_AND_DIE = """
import os, signal
import django
django.setup()
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import RequestFactory
request = RequestFactory().post("/upload/", {"file": SimpleUploadedFile("big.tsv", b"x" * 3_000_000)})
print(request.FILES["file"].temporary_file_path(), flush=True)  # past 2 MiB: on disk, not in memory
os.kill(os.getpid(), signal.SIGKILL)  # no cleanup runs
"""


def _upload_and_die(data_dir: Path) -> Path:
    env = {
        **{k: v for k, v in os.environ.items() if k != "DJANGO_ALLOW_ASYNC_UNSAFE"},
        "DJANGO_SETTINGS_MODULE": "xqmeval.settings",
        "XQMEVAL_DATA_DIR": str(data_dir),
        "DATABASE_URL": f"sqlite:///{data_dir}/db.sqlite3",
        "ANONYMOUS_BODY_MAX_BYTES": str(10 * 1024 * 1024),  # the request is anonymous
    }
    proc = subprocess.run(
        [sys.executable, "-c", UPLOAD_AND_DIE], cwd=REPO, env=env, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == -9, proc.stderr
    return Path(proc.stdout.strip())


def test_a_killed_uploads_file_is_in_the_data_directory_and_the_next_upload_sweeps_it(tmp_path, settings):
    from core.http import SweptTemporaryFileUploadHandler

    left = _upload_and_die(tmp_path)
    assert left.parent == tmp_path / "upload-tmp"  # not the system's temporary folder
    assert left.exists() and left.stat().st_size == 3_000_000

    host = left.name.split("@", 1)[1].split("-", 1)[0]
    live = left.parent / f"xq-upload-{os.getpid()}@{host}-live.upload.tsv"
    live.write_bytes(b"an upload of a live process (this one) on this host")
    elsewhere = left.parent / "xq-upload-1@another_host-abc.upload.tsv"
    elsewhere.write_bytes(b"a shared data directory: another host's to sweep")
    settings.FILE_UPLOAD_TEMP_DIR = str(left.parent)
    handler = SweptTemporaryFileUploadHandler()
    handler.new_file("file", "next.tsv", "text/plain", 10)  # the next upload
    try:
        assert not left.exists() and live.exists() and elsewhere.exists()
        assert Path(handler.file.temporary_file_path()).parent == left.parent
    finally:
        handler.file.close()  # removes its own file
    assert sorted(p.name for p in left.parent.iterdir()) == sorted([live.name, elsewhere.name])
