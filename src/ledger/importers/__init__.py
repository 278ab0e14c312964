"""Importers of other agent tools' session files: every line accounted for.

:mod:`ledger.importers.claude_code` and :mod:`ledger.importers.codex` each have
``import_sessions(source, root) -> ImportReport``. ``import ledger`` does not load this package.
"""

from ledger.importers._report import Disposition, FileReport, ImportReport, Problem

__all__ = ["Disposition", "FileReport", "ImportReport", "Problem"]
