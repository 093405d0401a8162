"""Plots over awkward but legal data: reviewers who disagree on everything (bootstrap bounds a rounding
error past the estimate) and user names that matplotlib would read as mathtext."""

from __future__ import annotations

from django.urls import reverse

from annotation.agreement.domain import plots
from annotation.models import ReviewDecision, ReviewRound
from core.services import user_create
from tests.annotation.review.factories import make_candidates


def _disagreeing_project(project, languages, names=("anna_de", "ben_de")):
    users = [
        user_create(username=f"reviewer{i}", password="pw-disagree-123", languages=["de"]) for i in range(len(names))
    ]
    for user, name in zip(users, names):
        # named as typed, past user_create's rules: accounts made before those rules (or through another
        # path) may hold any characters, and the plots must still show them as text
        type(user).objects.filter(pk=user.pk).update(username=name)
        user.username = name
    rnd = ReviewRound.objects.create(project=project, number=1)
    for i, cand in enumerate(make_candidates(project, languages, "en-de", count=6)):
        first, second = ("accept", "reject") if i % 2 else ("reject", "accept")
        ReviewDecision.objects.create(candidate=cand, reviewer=users[0], round=rnd, decision=first)
        ReviewDecision.objects.create(candidate=cand, reviewer=users[1], round=rnd, decision=second)
    return users


def test_agreement_plot_when_reviewers_disagree_on_everything(client, project, languages, admin_user):
    _disagreeing_project(project, languages)
    client.force_login(admin_user)
    for plot in ("by-language", "by-error-type"):
        response = client.get(reverse("agreement:plot", kwargs={"project": "demo", "plot": plot}))
        assert response.status_code == 200, plot
        assert b"<svg" in response.content


def test_error_bar_a_rounding_error_past_the_estimate():
    """Six alternating units: the bootstrap's upper bound of alpha is 2.2e-16 below the estimate."""
    rows = [
        {
            "language": "de",
            "percent_agreement": 0.0,
            "percent_agreement_low": 0.0,
            "percent_agreement_high": 0.0,
            "krippendorff_alpha": -0.1,
            "krippendorff_alpha_low": -0.1 + 2.2e-16,
            "krippendorff_alpha_high": -0.1 - 2.2e-16,
        }
    ]
    assert "<svg" in plots.agreement_by_group(rows, lambda r: r["language"], "by language")


def test_annotator_plot_with_mathtext_in_a_user_name(client, project, languages, admin_user):
    _disagreeing_project(project, languages, names=("$x_$de", "ben$\\alpha$"))
    client.force_login(admin_user)
    response = client.get(reverse("agreement:plot", kwargs={"project": "demo", "plot": "annotators"}))
    assert response.status_code == 200
    body = response.content.decode()
    assert "$x_$de (de)" in body and "ben$\\alpha$ (de)" in body  # shown as typed, not as a formula
