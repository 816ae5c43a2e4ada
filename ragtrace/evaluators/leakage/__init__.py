"""Leakage: personal data (``pii_leakage``) and secrets (``sensitive_data``) in a record."""
