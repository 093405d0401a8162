"""#46.5: builds are numbered per project. A project's first build is "Build 1" whatever other projects
built before; the id (URLs, tasks) stays what it was."""

from __future__ import annotations

import pytest
from django.urls import reverse

from core.services import project_ensure
from exports.benchmark import services
from exports.models import BenchmarkBuild


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
