"""The test suite (a package: its files import their shared helpers from tests.support)."""
