"""Stored experiments in the formats other tools read: OpenTelemetry traces with OpenInference attributes
(``spans`` plans them, ``otel`` sends them; Phoenix, Langfuse, Jaeger) and inspect_ai eval logs
(``inspect_log``). Everything here reads what the store holds; nothing writes to it."""
