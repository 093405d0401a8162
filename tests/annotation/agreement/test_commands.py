"""The agreement command's language option."""

import pytest
from django.core.management import CommandError, call_command

pytestmark = pytest.mark.django_db


def test_agreement_command_refuses_a_language_the_project_does_not_have(project):
    """--language xx printed empty tables, as if nobody had disagreed."""
    with pytest.raises(
        CommandError, match=r"--language fr, xx: not a target language of project demo \(ar, de, ja, zh\)"
    ):
        call_command("agreement", "demo", "--language", "de", "--language", "xx", "--language", "fr")
