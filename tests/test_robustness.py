"""Kept only for test_session.py's ``from test_robustness import files_under, train_args``; both
now live in conftest.py. Its tests moved to the nouns they test (see docs/development.md)."""

from conftest import files_under, train_args

__all__ = ["files_under", "train_args"]
