"""8 reviewer threads against a file SQLite database, run by test_concurrency in a subprocess (the
in-memory test database cannot show SQLite's locking). Usage: python sqlite_race.py DB_PATH.
Prints {"errors", "candidates", "counts"}: how many candidates got how many decisions."""

import os
import sys
import threading
import uuid
import warnings
from collections import Counter

os.environ["DATABASE_URL"] = "sqlite:///" + sys.argv[1]
os.environ["DJANGO_SETTINGS_MODULE"] = "xqmeval.settings"
sys.path.insert(
    0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
)  # the repository
warnings.filterwarnings("ignore")

import django  # noqa: E402

django.setup()

from django.core.management import call_command  # noqa: E402
from django.db import connections  # noqa: E402

from annotation.models import ReviewDecision  # noqa: E402
from annotation.review import services  # noqa: E402
from core.models import GoldSegment  # noqa: E402
from core.services import project_directions_add, project_ensure, user_create  # noqa: E402
from injection.models import Candidate, InjectionRun  # noqa: E402


def main() -> None:
    call_command("migrate", verbosity=0)
    project, _ = project_ensure(name="race")
    (direction,) = project_directions_add(project=project, codes=["en-de"])
    run = InjectionRun.objects.create(project=project, name="race", backend="import")
    for i in range(30):
        segment = GoldSegment.objects.create(
            project=project, direction=direction, external_id=str(i), source="s", reference=f"a b c {i}"
        )
        Candidate.objects.create(
            run=run, segment=segment, error_type="Addition", text=f"a X c {i}", span_start=1, span_end=2, edit_text="X"
        )
    users = [user_create(username=f"u{i}", password="pw-xyz-123", languages=["de"]) for i in range(8)]
    errors: list[str] = []

    def work(user):
        try:
            while (got := services.candidate_take_next(user=user, project=project)) is not None:
                services.decision_submit(
                    user=user, candidate_id=got.candidate.pk, decision="accept", idempotency_key=uuid.uuid4().hex
                )
        except Exception as exc:  # reported to the test
            errors.append(repr(exc))
        finally:
            connections.close_all()

    threads = [threading.Thread(target=work, args=(u,)) for u in users]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    per = Counter(ReviewDecision.objects.values_list("candidate_id", flat=True))
    print({"errors": errors[:3], "candidates": len(per), "counts": dict(Counter(per.values()))})


if __name__ == "__main__":
    main()
