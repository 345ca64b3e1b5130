"""Fixtures every test directory can use: the throwaway PostgreSQL cluster (tests/postgres_testing.py)."""

pytest_plugins = ["postgres_testing"]
