"""A small Hugging Face Hub look-alike on 127.0.0.1: for push tests, the endpoints huggingface_hub calls for
create_repo, create_commit (preupload + ndjson commit, regular uploads), list_repo_refs, create_tag and
repo_info, with bearer-token checks and injectable failures; for dataset reads (``datasets.load_dataset``
of a Hub id), dataset info, the file tree, paths-info and file downloads (``resolve``), anonymous for a
public repo, with an injectable delay and transient failures. State lives in memory."""

from __future__ import annotations

import base64
import hashlib
import json
import re
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote


def git_blob_sha1(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


@dataclass
class Repo:
    repo_id: str
    private: bool
    files: dict[str, bytes] = field(default_factory=dict)
    commits: list[dict] = field(default_factory=list)
    tags: dict[str, str] = field(default_factory=dict)

    @property
    def head(self) -> str:
        return self.commits[-1]["oid"] if self.commits else "0" * 40


@dataclass
class HubState:
    token: str
    repos: dict[str, Repo] = field(default_factory=dict)
    uploads: list[str] = field(default_factory=list)  # paths received in commits, in order
    fail_commits: list[str] = field(default_factory=list)  # commit summaries containing this text fail once
    calls: list[str] = field(default_factory=list)
    echo_credentials: bool = False  # errors quote the request's Authorization header, as a careless proxy's do
    delay: float = 0.0  # seconds each request waits before it is answered (a slow Hub)
    # the next this many requests answer 503, as the Hub does when down (huggingface_hub tries each call five
    # times with backoff, about 24 s, before it gives up)
    unavailable: int = 0


class HubHandler(BaseHTTPRequestHandler):
    state: HubState  # set on the subclass per server

    def log_message(self, *args):  # keep test output quiet
        pass

    # ---- helpers
    def _send(self, status: int, payload) -> None:
        body = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _body(self) -> bytes:
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def _authorised(self) -> bool:
        if self.headers.get("Authorization") != f"Bearer {self.state.token}":
            self._send(401, {"error": "Invalid credentials in Authorization header"})
            return False
        return True

    def _repo(self, repo_id: str) -> Repo | None:
        repo = self.state.repos.get(repo_id)
        if repo is None:
            self.send_response(404)
            body = json.dumps({"error": "Repository not found"}).encode()
            self.send_header("X-Error-Code", "RepoNotFound")
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        return repo

    def _held(self) -> bool:
        """Wait the injected delay; answer 503 while the Hub is injected to be down. True when answered."""
        if self.state.delay:
            time.sleep(self.state.delay)
        if self.state.unavailable > 0:
            self.state.unavailable -= 1
            self._send(503, {"error": "Service Unavailable (injected)"})
            return True
        return False

    def _readable(self, repo_id: str) -> Repo | None:
        """The repo when this request may read it (a public one anonymously, a private one with the token);
        otherwise it answers as the Hub does, 404 for an unknown repo and 401 without the token."""
        repo = self.state.repos.get(repo_id)
        if repo is not None and repo.private and not self._authorised():
            return None
        return self._repo(repo_id)

    def _entry(self, repo: Repo, path: str) -> dict:
        if path in repo.files:
            return {"type": "file", "path": path, "size": len(repo.files[path]), "oid": git_blob_sha1(repo.files[path])}
        return {"type": "directory", "path": path, "oid": "0" * 40}

    def _tree(self, repo: Repo, folder: str, recursive: bool) -> list[dict]:
        prefix = f"{folder}/" if folder else ""
        found: dict[str, dict] = {}
        for name in sorted(repo.files):
            if not name.startswith(prefix):
                continue
            parts = name[len(prefix) :].split("/")
            for depth in range(1, len(parts) + 1 if recursive else 2):
                path = prefix + "/".join(parts[:depth])
                found.setdefault(path, self._entry(repo, path))
        return list(found.values())

    def _read(self, path: str, *, head: bool) -> bool:
        """Dataset reads (``datasets.load_dataset`` of a Hub id). True when the request was one."""
        if m := re.fullmatch(r"/datasets/([^/]+/[^/]+)/resolve/([^/]+)/(.+)", path):
            if repo := self._readable(m[1]):
                data = repo.files.get(m[3])
                if data is None:
                    self.send_response(404)
                    self.send_header("X-Error-Code", "EntryNotFound")
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return True
                self.send_response(200)
                self.send_header("Content-Length", str(len(data)))
                self.send_header("ETag", f'"{git_blob_sha1(data)}"')
                self.send_header("X-Repo-Commit", repo.head)
                self.end_headers()
                if not head:
                    self.wfile.write(data)
            return True
        if head:
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return True
        if m := re.fullmatch(r"/api/datasets/([^/]+/[^/]+)/tree/([^/]+)(?:/(.*))?", path):
            if repo := self._readable(m[1]):
                self._send(200, self._tree(repo, (m[3] or "").strip("/"), "recursive=true" in self.path.lower()))
            return True
        return False

    # ---- routes
    def do_HEAD(self):
        self.state.calls.append(f"HEAD {self.path}")
        if not self._held():
            self._read(unquote(self.path.split("?")[0]), head=True)

    def do_GET(self):
        self.state.calls.append(f"GET {self.path}")
        if self._held():
            return
        path = unquote(self.path.split("?")[0])
        if self._read(path, head=False):
            return
        if m := re.fullmatch(r"/api/datasets/([^/]+/[^/]+)(?:/revision/([^/]+))?", path):
            if repo := self._readable(m[1]):
                self._send(
                    200,
                    {
                        "id": repo.repo_id,
                        "sha": repo.head,
                        "private": repo.private,
                        "disabled": False,
                        "gated": False,
                        "tags": [],
                        "cardData": {},
                        "siblings": [{"rfilename": p, "size": len(b)} for p, b in sorted(repo.files.items())],
                    },
                )
            return
        if not self._authorised():
            return
        if m := re.fullmatch(r"/api/datasets/(.+?/.+?)/refs", path):
            if repo := self._repo(m[1]):
                self._send(
                    200,
                    {
                        "branches": [{"name": "main", "ref": "refs/heads/main", "targetCommit": repo.head}],
                        "converts": [],
                        "tags": [
                            {"name": t, "ref": f"refs/tags/{t}", "targetCommit": oid}
                            for t, oid in sorted(repo.tags.items())
                        ],
                    },
                )
            return
        self._send(404, {"error": f"no route GET {path}"})

    def do_POST(self):
        self.state.calls.append(f"POST {self.path}")
        body = self._body()
        if self._held():
            return
        path = self.path.split("?")[0]
        if m := re.fullmatch(r"/api/datasets/([^/]+/[^/]+)/paths-info/([^/]+)", path):
            if repo := self._readable(m[1]):
                asked = [
                    unquote(v)
                    for k, v in (p.split("=", 1) for p in body.decode().split("&") if "=" in p)
                    if k == "paths"
                ]
                known = {e["path"] for e in self._tree(repo, "", True)}
                self._send(200, [self._entry(repo, p.strip("/")) for p in asked if p.strip("/") in known])
            return
        if not self._authorised():
            return
        if path == "/api/repos/create":
            data = json.loads(body)
            repo_id = f"{data['organization']}/{data['name']}" if data.get("organization") else data["name"]
            if data.get("type") != "dataset":
                return self._send(400, {"error": "this test hub only hosts datasets"})
            if repo_id in self.state.repos:
                return self._send(
                    409,
                    {
                        "error": "You already created this dataset repo",
                        "url": f"http://{self.headers['Host']}/datasets/{repo_id}",
                    },
                )
            private = data.get("visibility", "private" if data.get("private") else "public") == "private" or bool(
                data.get("private")
            )
            self.state.repos[repo_id] = Repo(repo_id, private)
            return self._send(200, {"url": f"http://{self.headers['Host']}/datasets/{repo_id}", "name": repo_id})
        if path == "/api/validate-yaml":
            return self._send(200, {"errors": [], "warnings": []})
        if m := re.fullmatch(r"/api/datasets/(.+?/.+?)/preupload/(.+)", path):
            repo = self._repo(m[1])
            if repo is None:
                return
            files = json.loads(body)["files"]
            return self._send(
                200,
                {
                    "files": [
                        {
                            "path": f["path"],
                            "uploadMode": "regular",
                            "shouldIgnore": False,
                            "oid": git_blob_sha1(repo.files[f["path"]]) if f["path"] in repo.files else None,
                        }
                        for f in files
                    ]
                },
            )
        if m := re.fullmatch(r"/api/datasets/(.+?/.+?)/commit/(.+)", path):
            repo = self._repo(m[1])
            if repo is None:
                return
            lines = [json.loads(line) for line in body.decode().splitlines() if line.strip()]
            header = next(line["value"] for line in lines if line["key"] == "header")
            for marker in list(self.state.fail_commits):
                if marker in header["summary"]:
                    self.state.fail_commits.remove(marker)
                    sent = f" (sent {self.headers.get('Authorization')})" if self.state.echo_credentials else ""
                    return self._send(400, {"error": f"injected failure of commit {header['summary']!r}{sent}"})
            for line in lines:
                if line["key"] == "file":
                    value = line["value"]
                    assert value.get("encoding") == "base64"
                    repo.files[value["path"]] = base64.b64decode(value["content"])
                    self.state.uploads.append(value["path"])
                elif line["key"] != "header":
                    return self._send(400, {"error": f"unsupported operation {line['key']}"})
            oid = hashlib.sha1(f"{repo.head}{header['summary']}{len(repo.commits)}".encode()).hexdigest()
            repo.commits.append(
                {"oid": oid, "summary": header["summary"], "description": header.get("description", "")}
            )
            return self._send(
                200, {"commitUrl": f"http://127.0.0.1/datasets/{repo.repo_id}/commit/{oid}", "commitOid": oid}
            )
        if m := re.fullmatch(r"/api/datasets/(.+?/.+?)/tag/(.+)", path):
            repo = self._repo(m[1])
            if repo is None:
                return
            tag = json.loads(body)["tag"]
            if tag in repo.tags:
                return self._send(409, {"error": f"tag {tag} already exists"})
            revision = m[2]
            repo.tags[tag] = revision if revision != "main" else repo.head
            return self._send(200, {})
        self._send(404, {"error": f"no route POST {path}"})


class HubServer:
    """``with HubServer(token) as hub: hub.url …``"""

    def __init__(self, token: str):
        self.state = HubState(token=token)
        handler = type("BoundHubHandler", (HubHandler,), {"state": self.state})
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        # polled every 50 ms, not serve_forever's 0.5 s: shutdown() waits for the next poll, at every test's end
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    def add_dataset(self, repo_id: str, files: dict[str, bytes], *, private: bool = False) -> Repo:
        """A dataset repo with ``files`` in one commit, as a dataset on the Hub is read."""
        repo = Repo(repo_id, private, files=dict(files))
        oid = hashlib.sha1(repr((repo_id, sorted(files.items()))).encode()).hexdigest()  # new content, new commit
        repo.commits.append({"oid": oid, "summary": "data", "description": ""})
        self.state.repos[repo_id] = repo
        return repo

    def __enter__(self) -> HubServer:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
