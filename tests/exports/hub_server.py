"""A small Hugging Face Hub look-alike on 127.0.0.1 for push tests: the endpoints huggingface_hub calls for
create_repo, create_commit (preupload + ndjson commit, regular uploads), list_repo_refs, create_tag and
repo_info, with bearer-token checks and injectable failures. State lives in memory."""

from __future__ import annotations

import base64
import hashlib
import json
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


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

    # ---- routes
    def do_GET(self):
        self.state.calls.append(f"GET {self.path}")
        if not self._authorised():
            return
        path = self.path.split("?")[0]
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
        if m := re.fullmatch(r"/api/datasets/(.+?/.+?)(?:/revision/(.+))?", path):
            if repo := self._repo(m[1]):
                self._send(
                    200,
                    {
                        "id": repo.repo_id,
                        "sha": repo.head,
                        "private": repo.private,
                        "siblings": [{"rfilename": p} for p in sorted(repo.files)],
                    },
                )
            return
        self._send(404, {"error": f"no route GET {path}"})

    def do_POST(self):
        self.state.calls.append(f"POST {self.path}")
        body = self._body()
        if not self._authorised():
            return
        path = self.path.split("?")[0]
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
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> HubServer:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
