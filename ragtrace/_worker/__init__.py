"""``ragtrace worker``: the evaluation tier that reads a Redis stream, on any machine.

``service`` runs one worker (consumer, pipeline, sinks, shared limits), ``health`` says whether
it is reading and acknowledging, ``monitor`` polls the stream's state into gauges, ``inspect``
looks at a queue and its dead letters, ``cli`` is the command line; ``serving`` holds what
the worker and ``ragtrace ingest`` share (their options, settings and metrics endpoint).
"""
