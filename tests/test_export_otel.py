"""OpenTelemetry traces of attempts, read back from a real Arize Phoenix started here (127.0.0.1, a temporary working
directory): a live run (``sysmo run --otel-endpoint``) and the export of the stored experiment (``sysmo export otel``,
the endpoint from ``OTEL_EXPORTER_OTLP_ENDPOINT``) send, per attempt, one trace whose spans have the parents,
attributes and times the store records (``sysmo.export.spans.attempt_trace``).

Phoenix's own requirements conflict with sysmo's (it needs openai>=3, litellm openai<3), so it runs from a virtual
environment of its own: ``SYSMO_TEST_PHOENIX`` names its ``phoenix`` command (.ci/run makes it from
tests/phoenix-requirements.txt); without it these tests skip, and fail where ``SYSMO_TEST_REQUIRE_PHOENIX=1`` (CI).
The exporter itself needs the extra ``otel`` (``SYSMO_TEST_REQUIRE_OTEL=1`` in CI).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from export_runs import SAMPLES, TASKS, run_export_experiment
from sysmo_cli import run_sysmo

pytestmark = pytest.mark.slow

PHOENIX_START_S = 300  # a first start compiles Phoenix's modules: about a minute here, more on a loaded machine


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="module")
def otel_extra(skip_missing: Any) -> None:
    try:
        import opentelemetry.exporter.otlp.proto.http  # noqa: F401
        import opentelemetry.sdk  # noqa: F401
    except ImportError:
        skip_missing("otel", "the extra otel is not installed: pip install -e '.[otel]'")


@pytest.fixture(scope="module")
def phoenix(tmp_path_factory: pytest.TempPathFactory, otel_extra: None, skip_missing: Any) -> Any:
    """A Phoenix server on 127.0.0.1 with a temporary working directory; its base URL."""
    command = os.environ.get("SYSMO_TEST_PHOENIX") or shutil.which("phoenix")
    if not command or not Path(command).is_file():
        skip_missing("phoenix", "no Arize Phoenix: python -m venv /tmp/phoenix && /tmp/phoenix/bin/pip install -r "
                           "tests/phoenix-requirements.txt, then SYSMO_TEST_PHOENIX=/tmp/phoenix/bin/phoenix")
    work = tmp_path_factory.mktemp("phoenix")
    port, grpc_port = _free_port(), _free_port()
    env = {**os.environ, "PHOENIX_WORKING_DIR": str(work), "PHOENIX_HOST": "127.0.0.1", "PHOENIX_PORT": str(port),
           "PHOENIX_GRPC_PORT": str(grpc_port), "PHOENIX_TELEMETRY_ENABLED": "false"}
    for variable in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "PYTHONPATH"):
        env.pop(variable, None)
    log = (work / "phoenix.log").open("w")
    server = subprocess.Popen([command, "serve"], env=env, stdout=log, stderr=subprocess.STDOUT, cwd=work)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + PHOENIX_START_S
        while True:
            if server.poll() is not None:
                pytest.fail(f"phoenix serve exited with {server.returncode}: {(work / 'phoenix.log').read_text()[-2000:]}")
            try:
                if httpx.get(f"{url}/healthz", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"phoenix serve did not answer within {PHOENIX_START_S} s")
            time.sleep(1)
        yield url
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        log.close()


def phoenix_spans(url: str, project: str) -> list[dict[str, Any]]:
    """Every span of the project, through Phoenix's REST API (page by page)."""
    spans: list[dict[str, Any]] = []
    cursor = None
    while True:
        params: dict[str, Any] = {"limit": 500, **({"cursor": cursor} if cursor else {})}
        answer = httpx.get(f"{url}/v1/projects/{project}/spans", params=params, timeout=30)
        answer.raise_for_status()
        body = answer.json()
        spans += body["data"]
        cursor = body.get("next_cursor")
        if not cursor:
            return spans


def wait_for_spans(url: str, project: str, count: int, timeout_s: float = 60) -> list[dict[str, Any]]:
    """The project's spans once ``count`` arrived (Phoenix writes what it receives in batches)."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            spans = phoenix_spans(url, project)
        except httpx.HTTPStatusError:  # the project appears with its first span
            spans = []
        if len(spans) >= count or time.monotonic() > deadline:
            return spans
        time.sleep(0.5)


def _same_time(received: str, ns: int) -> bool:
    """Phoenix keeps microseconds: the received time is the planned one to within a few."""
    return abs(datetime.fromisoformat(received).timestamp() * 1e6 - ns / 1000) <= 5


def flattened(value: dict[str, Any], prefix: str) -> dict[str, Any]:
    """``{"a": {"b": 1}}`` as ``{"<prefix>.a.b": 1}`` (Nones left out)."""
    out: dict[str, Any] = {}
    for key, item in value.items():
        if isinstance(item, dict):
            out.update(flattened(item, f"{prefix}.{key}"))
        elif item is not None:
            out[f"{prefix}.{key}"] = item
    return out


def check_trace(received: list[dict[str, Any]], planned: Any) -> None:
    """One attempt's received spans are the planned tree: names, parents, kinds, attributes and times."""
    by_id = {s["context"]["span_id"]: s for s in received}
    roots = [s for s in received if s["parent_id"] is None]
    assert len(roots) == 1, [s["name"] for s in roots]

    def match(span: dict[str, Any], plan: Any) -> None:
        assert span["name"] == plan.name
        assert span["span_kind"] == plan.kind
        for key, value in plan.attributes.items():
            if key == "openinference.span.kind":  # Phoenix gives it as the span's kind (checked above)
                continue
            if key == "metadata":  # Phoenix parses the JSON into metadata.<key> attributes
                for flat_key, flat_value in flattened(json.loads(str(value)), "metadata").items():
                    assert span["attributes"].get(flat_key) == flat_value, (plan.name, flat_key)
                continue
            got = span["attributes"].get(key)
            assert got == (pytest.approx(value) if isinstance(value, float) else value), (plan.name, key, got, value)
        assert _same_time(span["start_time"], plan.start_ns), (plan.name, span["start_time"])
        assert _same_time(span["end_time"], max(plan.end_ns, plan.start_ns)), (plan.name, span["end_time"])
        assert span["status_code"] == ("ERROR" if plan.error else "UNSET")
        children = sorted((s for s in received if s["parent_id"] == span["context"]["span_id"]),
                          key=lambda s: (s["start_time"], s["name"]))
        expected = sorted(plan.children, key=lambda p: (p.start_ns // 1000, p.name))
        assert [c["name"] for c in children] == [p.name for p in expected], plan.name
        for child, child_plan in zip(children, expected):
            match(child, child_plan)

    match(roots[0], planned)
    assert len(by_id) == len(planned.walk())


def traces_by_attempt(spans: list[dict[str, Any]]) -> dict[str, list[list[dict[str, Any]]]]:
    """The received spans grouped by trace, the traces by the attempt their root names."""
    traces: dict[str, list[dict[str, Any]]] = {}
    for span in spans:
        traces.setdefault(span["context"]["trace_id"], []).append(span)
    out: dict[str, list[list[dict[str, Any]]]] = {}
    for trace in traces.values():
        root = next(s for s in trace if s["parent_id"] is None)
        out.setdefault(root["attributes"]["sysmo.attempt.id"], []).append(trace)
    return out


def test_each_attempt_of_a_live_run_and_of_its_export_arrives_in_phoenix_as_the_store_has_it(
        phoenix: str, tmp_path: Path) -> None:
    from sysmo.export.spans import attempt_trace
    from sysmo.store import Store

    runs = tmp_path / "runs"
    result = run_export_experiment(runs, "otel-live", "--otel-endpoint", phoenix)
    assert result.code == 0, result.output
    assert "OpenTelemetry: 4 attempt(s)" in result.output

    store = Store(runs / "otel-live" / "results.sqlite")
    ids = sorted(store.finished_attempt_ids("otel-live"))
    assert len(ids) == len(TASKS) * SAMPLES
    planned = {i: attempt_trace(store.attempt(i), store.scorecard(i), "otel-live") for i in ids}
    total = sum(len(p.walk()) for p in planned.values())

    live = traces_by_attempt(wait_for_spans(phoenix, "otel-live", total))
    assert sorted(live) == ids
    for attempt_id, plan in planned.items():
        assert len(live[attempt_id]) == 1
        check_trace(live[attempt_id][0], plan)
        attempt = store.attempt(attempt_id)
        received = live[attempt_id][0]
        root = next(s for s in received if s["parent_id"] is None)
        # the root: what the attempt was and how it scored
        assert root["attributes"]["sysmo.task.id"] == attempt.task_id
        assert root["attributes"]["sysmo.outcome"] == "passed"
        assert root["attributes"]["sysmo.seed"] == attempt.seed
        assert root["attributes"]["sysmo.score.syntax"] == 1.0
        # every model call under the graph step that made it, with what was sent and counted
        llm = [s for s in received if s["span_kind"] == "LLM"]
        calls = [e for e in attempt.events if e.type == "llm_call"]
        assert len(llm) == len(calls) == 2
        steps = {s["context"]["span_id"]: s for s in received if s["name"].startswith("step ")}
        for span, call in zip(sorted(llm, key=lambda s: s["start_time"]), calls):
            assert span["parent_id"] in steps and steps[span["parent_id"]]["name"].endswith(" generate")
            assert span["attributes"]["llm.token_count.prompt"] == 120
            assert span["attributes"]["llm.token_count.completion"] == 40
            assert json.loads(span["attributes"]["llm.invocation_parameters"]) == call.params
            assert span["attributes"]["llm.input_messages.1.message.content"] == call.messages[1]["content"]
            assert span["attributes"]["llm.output_messages.0.message.content"] == call.text
        # every tool check under its step: the broken diagram failed with a diagnostic, the repair passed
        tools = sorted((s for s in received if s["span_kind"] == "TOOL"), key=lambda s: s["start_time"])
        assert [t["attributes"]["sysmo.tool.verdict"] for t in tools] == ["failed", "ok"]
        assert tools[0]["attributes"]["sysmo.tool.diagnostics"] >= 1
        assert all(steps[t["parent_id"]]["name"].endswith(" check") for t in tools)
        assert all(t["attributes"]["tool.name"] == "plantuml" for t in tools)

    # the stored experiment again, the endpoint from the standard variable: a second trace per attempt, the same
    exported = run_sysmo("export", "otel", "otel-live", "--runs", str(runs),
                         env={"OTEL_EXPORTER_OTLP_ENDPOINT": phoenix})
    assert exported.code == 0, exported.output
    assert f"{len(ids)} attempt(s), {total} span(s) sent" in exported.output
    both = traces_by_attempt(wait_for_spans(phoenix, "otel-live", 2 * total))
    for attempt_id, plan in planned.items():
        assert len(both[attempt_id]) == 2
        for trace in both[attempt_id]:
            check_trace(trace, plan)
    store.close()


def test_an_unreachable_collector_stops_the_run_before_any_attempt(otel_extra: None, tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    result = run_sysmo("run", "--model", "mockllm/control", "--agent", "base_modeling", "--ids",
                       TASKS[0], "--otel-endpoint", f"http://127.0.0.1:{_free_port()}", "-o", str(runs),
                       "--no-progress", env={"SYSMO_HOME": str(tmp_path / "home")})
    assert result.code == 2, result.output
    error = result.stderr[result.stderr.index("error:"):]
    assert "OpenTelemetry endpoint" in error and "unreachable" in error
    assert not runs.exists() or not any(runs.glob("*/results.sqlite"))


def test_the_attribute_names_are_openinferences(otel_extra: None) -> None:
    """sysmo spells the OpenInference names itself (the exporter needs only the SDK); the conventions package of
    the extra says they are right."""
    from openinference.semconv.resource import ResourceAttributes
    from openinference.semconv.trace import OpenInferenceSpanKindValues, SpanAttributes

    from sysmo.export import spans

    assert (spans.SPAN_KIND, spans.INPUT_VALUE, spans.INPUT_MIME, spans.OUTPUT_VALUE, spans.OUTPUT_MIME,
            spans.METADATA, spans.LLM_MODEL, spans.LLM_PROVIDER, spans.LLM_INPUT_MESSAGES, spans.LLM_OUTPUT_MESSAGES,
            spans.LLM_PARAMETERS, spans.TOKENS_PROMPT, spans.TOKENS_COMPLETION, spans.TOKENS_TOTAL, spans.COST_TOTAL,
            spans.TOOL_NAME) == (
        SpanAttributes.OPENINFERENCE_SPAN_KIND, SpanAttributes.INPUT_VALUE, SpanAttributes.INPUT_MIME_TYPE,
        SpanAttributes.OUTPUT_VALUE, SpanAttributes.OUTPUT_MIME_TYPE, SpanAttributes.METADATA,
        SpanAttributes.LLM_MODEL_NAME, SpanAttributes.LLM_PROVIDER, SpanAttributes.LLM_INPUT_MESSAGES,
        SpanAttributes.LLM_OUTPUT_MESSAGES, SpanAttributes.LLM_INVOCATION_PARAMETERS,
        SpanAttributes.LLM_TOKEN_COUNT_PROMPT, SpanAttributes.LLM_TOKEN_COUNT_COMPLETION,
        SpanAttributes.LLM_TOKEN_COUNT_TOTAL, SpanAttributes.LLM_COST_TOTAL, SpanAttributes.TOOL_NAME)
    assert {"AGENT", "CHAIN", "LLM", "TOOL", "EVALUATOR"} <= {k.value for k in OpenInferenceSpanKindValues}
    assert ResourceAttributes.PROJECT_NAME == "openinference.project.name"


def test_a_collector_that_refuses_the_spans_is_one_line_and_the_store_is_untouched(otel_extra: None,
                                                                                     tmp_path: Path) -> None:
    """Something listens at the endpoint but answers 404 (not an OTLP collector): the export says so in one line."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from sysmo.contracts.attempt import Attempt, AttemptStatus
    from sysmo.store import Store

    posts: list[str] = []

    class NotACollector(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server's name
            posts.append(self.path)
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self.send_response(404)
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    store = Store(tmp_path / "runs" / "refused" / "results.sqlite")
    store.save_experiment("refused", {}, {}, True)
    store.save_attempt("refused", Attempt(id="a1", task_id="t/1", agent="base_modeling", model="mockllm/t",
                                          status=AttemptStatus.FAILED), {"kind": "uml_class"})
    store.close()
    before = _rows(tmp_path / "runs" / "refused" / "results.sqlite")
    server = ThreadingHTTPServer(("127.0.0.1", 0), NotACollector)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        result = run_sysmo("export", "otel", "refused", "--runs", str(tmp_path / "runs"), "--endpoint",
                           f"http://127.0.0.1:{server.server_address[1]}")
    finally:
        server.shutdown()
    assert result.code == 2, result.output
    said = " ".join(result.stderr.split())  # one message, wrapped at the terminal's width
    assert said.startswith("error: the OpenTelemetry collector at") and "did not take all the spans" in said
    assert "1 attempt(s)" in said
    assert posts and all(path == "/v1/traces" for path in posts)
    assert _rows(tmp_path / "runs" / "refused" / "results.sqlite") == before


def _rows(path: Path) -> list[str]:
    import sqlite3

    conn = sqlite3.connect(path)
    try:
        return list(conn.iterdump())
    finally:
        conn.close()
