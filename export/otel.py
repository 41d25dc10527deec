"""Attempts as OpenTelemetry traces sent to an OTLP/HTTP collector (Phoenix, Langfuse, Jaeger, an OpenTelemetry
Collector): one trace per attempt, the spans ``export.spans`` plans, at the times the attempt recorded.

Needs the optional extra ``otel`` (opentelemetry-sdk and its OTLP/HTTP exporter). The endpoint is ``--otel-endpoint``
or the standard ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` (used as it is) / ``OTEL_EXPORTER_OTLP_ENDPOINT`` (the
collector's base: ``/v1/traces`` is added); headers (a Langfuse key) come from ``OTEL_EXPORTER_OTLP_HEADERS`` as the
exporter reads them. Each experiment is its own project (the resource's ``openinference.project.name``).

>>> with OtelExport.to("http://127.0.0.1:6006", "exp1") as export:
...     export.stored(store, attempt_id)        # or, a whole stored experiment:
>>> export_experiment(store, "exp1", "http://127.0.0.1:6006")
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from urllib.parse import urlsplit

from sysmo.errors import ConfigError, SysmoError
from sysmo.export.spans import PlannedSpan, attempt_trace
from sysmo.log import get_logger

if TYPE_CHECKING:
    from sysmo.store import Store

log = get_logger(__name__)

TRACES_PATH = "/v1/traces"
INSTALL_HINT = "install the extra: pip install -e '.[otel]' (opentelemetry-sdk and its OTLP/HTTP exporter)"
EXPORT_TIMEOUT_S = 30.0  # how long the last spans may take to reach the collector when an export ends
CONNECT_TIMEOUT_S = 5.0  # the collector is checked once, before anything is sent


class OtelUnavailable(ConfigError):
    """OpenTelemetry export was asked for but the ``otel`` extra is not installed."""


class OtelExportError(SysmoError):
    """The collector did not take the spans (unreachable, refused)."""


def traces_endpoint(url: str | None = None) -> str | None:
    """The OTLP/HTTP traces URL: ``url`` (a collector's base, or its full ``.../v1/traces``), else the standard
    environment variables; None when none is set."""
    if url:
        url = url.rstrip("/")
        return url if url.endswith(TRACES_PATH) else url + TRACES_PATH
    traces = os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    if traces:
        return traces
    base = os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
    return base.rstrip("/") + TRACES_PATH if base else None


def check_collector(endpoint: str, timeout_s: float = CONNECT_TIMEOUT_S) -> None:
    """ConfigError naming ``endpoint`` when nothing accepts a TCP connection there (checked before a run or an
    export starts, instead of the exporter's retries for every batch)."""
    parts = urlsplit(endpoint)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(f"OpenTelemetry endpoint {endpoint!r} is not an http(s) URL; use e.g. http://127.0.0.1:6006")
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
        with socket.create_connection((parts.hostname, port), timeout=timeout_s):
            pass
    except (OSError, ValueError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
        raise ConfigError(f"OpenTelemetry endpoint {endpoint} is unreachable ({reason}); start the collector "
                          "(e.g. `phoenix serve`) or fix --otel-endpoint / OTEL_EXPORTER_OTLP_ENDPOINT") from exc


def _sdk() -> Any:
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError as exc:
        raise OtelUnavailable(f"OpenTelemetry export needs opentelemetry-sdk, which is not installed ({exc.name}); "
                              f"{INSTALL_HINT}") from exc
    return OTLPSpanExporter, Resource, TracerProvider, BatchSpanProcessor


@dataclass
class ExportCount:
    """What an export sent: attempts (traces) and spans."""

    attempts: int = 0
    spans: int = 0


class OtelExport:
    """A tracer sending attempts' span trees to one collector, for one experiment (its project)."""

    def __init__(self, endpoint: str, experiment_id: str, *, exporter: Any = None) -> None:
        OTLPSpanExporter, Resource, TracerProvider, BatchSpanProcessor = _sdk()
        from sysmo import __version__

        self.endpoint, self.experiment_id = endpoint, experiment_id
        resource = Resource.create({"service.name": "sysmo", "service.version": __version__,
                                    "openinference.project.name": experiment_id,
                                    "sysmo.experiment.id": experiment_id})
        self._provider = TracerProvider(resource=resource)
        self._exporter = exporter or OTLPSpanExporter(endpoint=endpoint, timeout=10)
        self._failed = _FailureWatch(self._exporter)
        self._provider.add_span_processor(BatchSpanProcessor(self._failed))
        self._tracer = self._provider.get_tracer("sysmo.export.otel", __version__)
        self.count = ExportCount()
        self.skipped = 0  # attempts of a live run that could not be read back (``observe``)

    @classmethod
    def to(cls, url: str | None, experiment_id: str) -> OtelExport:
        """An export to ``url`` (or the standard environment variables); a ConfigError when neither names one."""
        endpoint = traces_endpoint(url)
        if endpoint is None:
            raise ConfigError("no OpenTelemetry endpoint: give --otel-endpoint URL or set OTEL_EXPORTER_OTLP_ENDPOINT")
        _sdk()  # a missing extra is said before the collector is tried
        check_collector(endpoint)
        return cls(endpoint, experiment_id)

    def __enter__(self) -> OtelExport:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, *rest: object) -> None:
        if exc_type is not None:  # the export failed: what was sent stays sent, the error is the export's
            self.abandon()
            return
        self.close()

    def abandon(self) -> None:
        """Stop without waiting for what is queued (a run that failed: its error is the one to show)."""
        self._provider.shutdown()

    def send(self, root: PlannedSpan) -> None:
        """One attempt's span tree (one trace)."""
        self._start(root, None)
        self.count.attempts += 1

    def _start(self, planned: PlannedSpan, parent: Any) -> None:
        from opentelemetry import trace
        from opentelemetry.trace import Status, StatusCode

        context = trace.set_span_in_context(parent) if parent is not None else None
        span = self._tracer.start_span(planned.name, context=context, start_time=planned.start_ns,
                                       attributes=planned.attributes)
        for name, at, attributes in planned.events:
            span.add_event(name, attributes=attributes, timestamp=at)
        if planned.error is not None:
            span.set_status(Status(StatusCode.ERROR, planned.error))
        for child in planned.children:
            self._start(child, span)
        span.end(end_time=max(planned.end_ns, planned.start_ns))
        self.count.spans += 1

    def stored(self, store: Store, attempt_id: str) -> None:
        """The stored attempt (its events and scorecard read back from ``store``) as one trace."""
        attempt = store.attempt(attempt_id)
        self.send(attempt_trace(attempt, store.scorecard(attempt_id), self.experiment_id))

    def observe(self, store: Store, attempt_id: str) -> None:
        """``stored`` for a live run (``RunState.observers``): an attempt that cannot be read back is counted in
        ``skipped`` and logged, and the run goes on."""
        try:
            self.stored(store, attempt_id)
        except Exception as exc:  # noqa: BLE001 - a trace is not worth an attempt: the run goes on
            self.skipped += 1
            log.warning("otel.attempt_not_sent", attempt=attempt_id, error=f"{type(exc).__name__}: {exc}")

    def close(self) -> None:
        """Send what is waiting and stop; an OtelExportError when the collector refused or could not be reached."""
        flushed = self._provider.force_flush(int(EXPORT_TIMEOUT_S * 1000))
        self._provider.shutdown()
        if self._failed.failures or not flushed:
            raise OtelExportError(
                f"the OpenTelemetry collector at {self.endpoint} did not take "
                f"{'all the spans' if flushed else 'the spans in time'} ({self._failed.failures} batch(es) "
                f"refused or unreachable; {self.count.attempts} attempt(s), {self.count.spans} span(s) sent); is "
                "it running? the attempts are in the store: `sysmo export otel EXP` sends them again")
        log.info("otel.exported", endpoint=self.endpoint, attempts=self.count.attempts, spans=self.count.spans)


class _FailureWatch:
    """The exporter, counting the batches it could not deliver (the SDK only logs them)."""

    def __init__(self, exporter: Any) -> None:
        self._exporter = exporter
        self.failures = 0

    def export(self, spans: Any) -> Any:
        from opentelemetry.sdk.trace.export import SpanExportResult

        result = self._exporter.export(spans)
        if result != SpanExportResult.SUCCESS:
            self.failures += 1
        return result

    def shutdown(self) -> None:
        self._exporter.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self._exporter.force_flush(timeout_millis)


def export_experiment(store: Store, experiment_id: str, url: str | None,
                      attempt_ids: Iterable[str] | None = None) -> ExportCount:
    """Every stored attempt of the experiment (or ``attempt_ids``) as one trace each."""
    ids = list(attempt_ids) if attempt_ids is not None else [
        r["id"] for r in store.query("SELECT id FROM attempts WHERE experiment_id=? ORDER BY finished_at, id",
                                     (experiment_id,))]
    if not ids:
        raise ConfigError(f"experiment {experiment_id} has no stored attempt to export")
    with OtelExport.to(url, experiment_id) as export:
        for attempt_id in ids:
            export.stored(store, attempt_id)
    return export.count


@contextmanager
def live_export(url: str | None, experiment_id: str, note: Callable[[str], None]) -> Iterator[list[Any]]:
    """For ``sysmo run``: the run's attempt observers (``RunState.observers``), each attempt sent once it is stored
    and scored; ``[]`` when neither ``url`` nor the environment names a collector. ``url`` given and the extra
    missing, or the collector unreachable, is an error before the run starts; the environment variable alone with the
    extra missing is a ``note`` (the run goes on). At the end ``note`` says what was sent, or why it was not (the
    attempts stay in the store: `sysmo export otel EXP` sends them again)."""
    if traces_endpoint(url) is None:
        yield []
        return
    try:
        export = OtelExport.to(url, experiment_id)
    except OtelUnavailable as exc:
        if url:
            raise
        note(f"OTEL_EXPORTER_OTLP_ENDPOINT is set but no trace is sent: {exc}")
        yield []
        return
    try:
        yield [export.observe]
    except BaseException:
        export.abandon()
        raise
    try:
        export.close()
    except OtelExportError as exc:
        note(str(exc))
        return
    note(f"OpenTelemetry: {export.count.attempts} attempt(s), {export.count.spans} span(s) sent to {export.endpoint}"
         + (f"; {export.skipped} attempt(s) could not be read back and were not sent" if export.skipped else ""))
