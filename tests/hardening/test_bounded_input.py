"""Bounded input, linear time (#36.5): body limits checked before reading, corpus limits the same for every
format, nesting and columns refused with a clear error, duplicate checks in one pass."""

from __future__ import annotations

import io
import json
import socket
import time

import pytest

from core.corpus.domain import CorpusError, Limits, read_corpus


def _rows(n_chars: int) -> list[dict]:
    return [{"id": "1", "source": "Hello.", "reference": "x" * n_chars}]


def _as(fmt: str, rows: list[dict]) -> bytes:
    if fmt == "jsonl":
        return "".join(json.dumps(r) + "\n" for r in rows).encode()
    if fmt == "parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        out = io.BytesIO()
        pq.write_table(pa.Table.from_pylist(rows), out)
        return out.getvalue()
    sep = "\t" if fmt == "tsv" else ","
    return ("id" + sep + "source" + sep + "reference\n" + "".join(sep.join(r.values()) + "\n" for r in rows)).encode()


@pytest.mark.parametrize("fmt", ["tsv", "csv", "jsonl", "parquet"])
def test_segment_length_is_the_same_limit_in_every_format(fmt):
    assert read_corpus(_as(fmt, _rows(5000)), f"c.{fmt}")[0].reference == "x" * 5000
    with pytest.raises(CorpusError, match="'reference' has 5001 characters, more than the 5000 allowed"):
        read_corpus(_as(fmt, _rows(5001)), f"c.{fmt}")


def test_a_jsonl_line_of_5000_nested_brackets_is_a_clear_error():
    data = _as("jsonl", _rows(3)) + ("[" * 5000 + "]" * 5000 + "\n").encode()
    with pytest.raises(CorpusError, match="c.jsonl line 2: JSON nested 5000 deep, more than the 32 allowed"):
        read_corpus(data, "c.jsonl")


def test_the_duplicate_column_check_is_linear():
    header = [f"c{i}" for i in range(40_000)] + ["c7", "c123"]
    data = ("\t".join(header) + "\n" + "\t".join("v" for _ in header) + "\n").encode()
    started = time.perf_counter()
    with pytest.raises(CorpusError) as caught:
        read_corpus(data, "wide.tsv", limits=Limits(columns=100_000))
    assert time.perf_counter() - started < 5.0  # 16 s with list.count per column
    assert "column 'c123' appears twice" in str(caught.value) and "column 'c7' appears twice" in str(caught.value)
    with pytest.raises(CorpusError, match="40002 columns, more than the 200 allowed"):
        read_corpus(data, "wide.tsv")


def test_parquet_is_refused_by_row_count_before_it_is_read():
    import pyarrow as pa
    import pyarrow.parquet as pq

    out = io.BytesIO()
    pq.write_table(
        pa.table(
            {
                "id": pa.array(range(1_000_000)),
                "source": pa.array(["a"] * 1_000_000),
                "reference": pa.array(["b"] * 1_000_000),
            }
        ),
        out,
    )
    started = time.perf_counter()
    with pytest.raises(CorpusError, match="1000000 rows, more than the 200000 allowed"):
        read_corpus(out.getvalue(), "big.parquet")
    assert time.perf_counter() - started < 2.0


def _raw_post(url: str, path: str, declared: int, cookie: str = "") -> tuple[str, float]:
    """Send only the headers of a POST declaring ``declared`` bytes, and read what the server answers."""
    host, port = url.split("//")[1].split(":")
    started = time.perf_counter()
    with socket.create_connection((host, int(port)), timeout=20) as conn:
        conn.sendall(
            (
                f"POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/x-www-form-urlencoded\r\n"
                f"Content-Length: {declared}\r\n{cookie}\r\n"
            ).encode()
            + b"username=x&password="
        )
        answer = conn.recv(4096).decode("latin-1")
    return answer.split("\r\n", 1)[0], time.perf_counter() - started


@pytest.mark.django_db(transaction=True)
def test_an_anonymous_200_mb_post_is_refused_before_it_is_read(live_server):
    status, took = _raw_post(live_server.url, "/accounts/login/", 200 * 1024 * 1024)
    assert status.endswith("413 Request Entity Too Large") and took < 5  # no body was waited for, or written
    status, _ = _raw_post(live_server.url, "/accounts/login/", 100 * 1024 * 1024, cookie="Cookie: sessionid=x\r\n")
    assert status.endswith("413 Request Entity Too Large")  # signed in or not: past REQUEST_BODY_MAX_BYTES


@pytest.mark.django_db
def test_only_an_authenticated_request_gets_the_larger_limit(client, django_user_model):
    """#48.5: any Authorization header or sessionid cookie lifted the anonymous 64 KiB cap to 64 MiB before
    anyone was authenticated. Now a session must be signed in and credentials must check out."""
    import base64

    from django.test import RequestFactory

    from core.http import body_limit
    from exports.workers.services import token_create

    large, small = 64 * 1024 * 1024, 64 * 1024
    django_user_model.objects.create_user(username="anna", password="pw-anna-123456")
    _, worker_secret = token_create(name="w1")
    client.login(username="anna", password="pw-anna-123456")
    live_session = client.cookies["sessionid"].value

    def limit(**meta) -> int:
        cookie = meta.pop("cookie", None)
        request = RequestFactory().post("/api/review/decisions/", {"username": "anna", "note": "x" * 1000}, **meta)
        if cookie:
            request.COOKIES["sessionid"] = cookie
        decided = body_limit(request, length=small + 1)
        assert not request._read_started  # decided before a byte of the body is read
        return decided

    def basic(user: str, password: str) -> str:
        return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()

    assert limit() == small
    assert limit(cookie="x") == small  # a made-up session
    assert limit(HTTP_AUTHORIZATION="Basic YW5uYTpwdw==") == small  # anna:pw, a wrong password
    assert limit(HTTP_AUTHORIZATION="Bearer xqw_made-up") == small
    assert limit(HTTP_AUTHORIZATION="Token abc") == small  # a scheme nobody issues
    assert limit(cookie=live_session) == large
    assert limit(HTTP_AUTHORIZATION=basic("anna", "pw-anna-123456")) == large
    assert limit(HTTP_AUTHORIZATION=f"Bearer {worker_secret}") == large
    client.logout()
    assert limit(cookie=live_session) == small  # a session that was signed out


@pytest.mark.django_db(transaction=True)
def test_a_made_up_cookie_or_header_does_not_lift_the_anonymous_limit(live_server):
    for header in ("Cookie: sessionid=x\r\n", "Authorization: Basic YW5uYTpwdw==\r\n", "Authorization: Bearer x\r\n"):
        status, _ = _raw_post(live_server.url, "/accounts/login/", 100 * 1024, cookie=header)
        assert status.endswith("413 Request Entity Too Large"), header


@pytest.mark.django_db
def test_a_corpus_upload_past_its_limit_is_a_form_error_naming_the_file(settings, project):
    from django.core.files.uploadedfile import SimpleUploadedFile

    from core.forms import CorpusUploadForm

    settings.CORPUS_UPLOAD_MAX_BYTES = 100
    form = CorpusUploadForm(
        {"direction": "en-de", "id_column": "id", "source_column": "source", "reference_column": "reference"},
        {"file": SimpleUploadedFile("big.tsv", b"x" * 101)},
        project=project,  # the form chooses among the project's directions (#37.1)
    )
    assert not form.is_valid()
    assert form.errors["file"] == ["big.tsv: 101 bytes, more than the 100 allowed"]
