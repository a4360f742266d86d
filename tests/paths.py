"""Where the tests find the repository's files (one definition for every test folder)."""

from __future__ import annotations

from pathlib import Path

#: The repository root (the folder holding ``pyproject.toml``).
REPO = Path(__file__).resolve().parents[1]
