"""#46.5, the benchmark and release pages a new user met in the demo: builds are numbered per project (a
project's first build is "Build 1" whatever other projects built before; the id, in URLs and tasks, stays);
a new release version is a semantic version, and an empty one gets the server's message; a failed Hub
push shows its error beside the push, not in the release's status."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from core.services import project_ensure
from exports.benchmark import services
from exports.models import BenchmarkBuild, Release


def _build(client):
    response = client.post(reverse("benchmarks:build", kwargs={"project": "demo"}), {"confirm": "1"}, follow=True)
    return [str(m) for m in response.context["messages"]]


@pytest.mark.django_db(transaction=True)  # the request commits, so its on_commit work runs inside it, as on the site
def test_a_projects_first_build_is_build_1(client, admin_user, seeded):
    other, _ = project_ensure(name="other", title="Other")
    for _ in range(2):  # another project's builds, made before
        earlier = services.build_create(project=other)
        BenchmarkBuild.objects.filter(pk=earlier.pk).update(status="done")
    client.force_login(admin_user)
    first = _build(client)
    build = BenchmarkBuild.objects.get(project=seeded)
    assert build.pk == earlier.pk + 1  # ids stay global and stable
    assert first[0].startswith("Build 1 finished:"), first
    page = client.get(reverse("benchmarks:project", kwargs={"project": "demo"})).content.decode()
    assert "Latest build 1:" in page
    second = _build(client)
    assert second[0].startswith("Build 2 finished:"), second
    assert str(BenchmarkBuild.objects.filter(project=other).order_by("pk").first()) == "other build 1 (done)"


@pytest.mark.parametrize(
    ("version", "message"),
    [
        ("v2", "version 'v2': use a semantic version MAJOR.MINOR.PATCH, such as 1.0.0 or 2.1.0-rc.1"),
        ("v1.0.0", "(without the leading v)"),
        ("1.0", "version '1.0': use a semantic version MAJOR.MINOR.PATCH"),
        ("01.0.0", "version '01.0.0': use a semantic version"),
        ("", "version: give one, a semantic version such as 1.0.0"),  # not only the browser's "required"
        ("   ", "version: give one, a semantic version such as 1.0.0"),
    ],
)
@pytest.mark.django_db
def test_a_new_release_version_must_be_semver_and_the_server_says_so(client, admin_user, seeded, version, message):
    client.force_login(admin_user)
    response = client.post(reverse("benchmarks:release", kwargs={"project": "demo"}), {"version": version}, follow=True)
    shown = [str(m) for m in response.context["messages"]]
    assert len(shown) == 1 and message in shown[0], shown
    assert not Release.objects.exists()


def test_semantic_versions_of_semver_org_are_accepted():
    from exports.release.domain.versions import version_problem

    for good in ("0.0.4", "1.2.3", "10.20.30", "1.1.2-prerelease+meta", "1.0.0-alpha.beta.1", "1.0.0-rc.1+build.1"):
        assert version_problem(good) == "", good
    for bad in ("1", "1.2", "1.2.3-0123", "1.2.3.4", "+invalid", "1.2.3-", "01.1.1", "1.2.3 ", "１.２.３"):
        assert version_problem(bad), bad


@pytest.mark.django_db
def test_the_release_command_refuses_a_new_version_that_is_not_semver(seeded, tmp_path):
    from django.core.management import CommandError, call_command

    with pytest.raises(CommandError, match=r"--version: version 'v2': use a semantic version"):
        call_command("release", "demo", "--version", "v2", "--out", str(tmp_path / "r"), verbosity=0)
    assert not Release.objects.exists() and not (tmp_path / "r").exists()


@pytest.mark.django_db
def test_a_version_released_before_semver_was_required_can_be_asked_for_again(seeded):
    from exports.release import services as release_services

    Release.objects.create(project=seeded, version="t1", status="ready")
    release_services.release_request_check(project=seeded, version="t1")  # no ReleaseError: it exists
    with pytest.raises(release_services.ReleaseError, match="semantic version"):
        release_services.release_request_check(project=seeded, version="t2")


@pytest.mark.django_db
def test_a_failed_push_shows_its_error_beside_the_hub_not_in_the_status(client, admin_user, seeded):
    reason = "the Hub refused the push: 403 Forbidden"
    Release.objects.create(
        project=seeded, version="1.0.0", status="ready", push_status="failed", hub_repo="lab/demo", error=reason
    )
    Release.objects.create(project=seeded, version="1.1.0", status="failed", error="disk full")
    client.force_login(admin_user)
    page = client.get(reverse("benchmarks:project", kwargs={"project": "demo"})).content.decode()
    rows = dict(re.findall(r'<tr data-version="([^"]+)">(.*?)</tr>\s*(?=<tr data-version|</tbody>|{)', page, re.S))
    cell = lambda row, name: re.search(rf'<td class="{name}">(.*?)</td>', rows[row], re.S).group(1)  # noqa: E731
    assert reason not in cell("1.0.0", "release-status") and reason in cell("1.0.0", "release-hub")
    assert "disk full" in cell("1.1.0", "release-status") and "disk full" not in cell("1.1.0", "release-hub")
    stage = client.get(reverse("projects:detail", args=["demo"])).content.decode()
    row = re.search(r"<tr><td>1\.0\.0</td>(.*?)</tr>", stage, re.S).group(1)
    status, _triplets, hub = re.findall(r"<td>(.*?)</td>", row, re.S)[:3]
    assert reason not in status and "failed lab/demo" in hub and reason in hub
