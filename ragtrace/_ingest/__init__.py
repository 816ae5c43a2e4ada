"""``ragtrace ingest``: rebuild RAG records from OTLP spans of any instrumentation and evaluate
them (receiver -> trace assembly -> mappers -> the pipeline). See ``ragtrace._ingest.service``."""
