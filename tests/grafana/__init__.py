"""Tests of the Grafana dashboards, the Prometheus rules and ``ragtrace demo --prometheus``."""
