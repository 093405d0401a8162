"""Signals between the annotation stages. Review and rating services send ``annotations_written`` inside
the transaction that wrote decisions, adjudications or ratings; the agreement stage receives it (connected
in ``AnnotationConfig.ready()``) and queues a refresh once the transaction commits. A signal, not an
import: review and rating sit below agreement and never import it (the Styleguide's approved use of
signals: keeping a cache current)."""

from django.dispatch import Signal

annotations_written = Signal()  # keyword argument: project_id
