"""Write operations of the release stage: sampling pseudo systems, writing release files, Hub pushes.

Thin over the pure ``exports.release.domain`` (``sampling``, SPEC §7; ``release_files``, layout and bytes);
this module only reads and writes the database. A new release is staged one direction at a time
(``release_begin``, ``release_direction_run``, ``release_finish``: a Celery chord on workers, a loop in
the command). Starting a release or a push on the worker is
``exports.release.tasks.start_release`` / ``start_push``, which call ``release_request_check`` /
``push_prepare`` here first.

One module per concern: ``content`` (what a release holds, request checks), ``staging`` (a direction at a
time, the lease, the job), ``finishing`` (the release files assembled and recorded; a whole release in this
process) and ``hub`` (pushes). What a worker uploads is ``exports.workers``'. This package re-exports their
public names, so callers say ``services.release_create``.
"""

from exports.release.services.content import (  # noqa: F401 (the stage's public names)
    HUB_REPO_RE,
    VERSION_RE,
    ReleaseError,
    release_content_make,
    release_request_check,
    release_version_check,
    sampling_plan_make,
)
from exports.release.services.finishing import (  # noqa: F401 (the stage's public names)
    release_create,
    release_finish,
)
from exports.release.services.hub import (  # noqa: F401 (the stage's public names)
    CARD_FILES,
    HubPushError,
    push_prepare,
    push_refusal_record,
    release_push,
    token_remove,
)
from exports.release.services.staging import (  # noqa: F401 (the stage's public names)
    ReleaseJob,
    ReleaseRunning,
    direction_record,
    direction_retrying_record,
    direction_stamp_get,
    out_dir_get,
    release_begin,
    release_check_not_running,
    release_direction_run,
    release_job_record,
    release_lease_end_get,
    release_retry_record,
    staging_dir_get,
    staging_files_get,
    staging_source_get,
)
