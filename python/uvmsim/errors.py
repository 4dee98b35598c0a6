"""Exceptions of the uvmsim module.

Every problem with an input file is a TraceError whose message is one line
"<file>: <field>: <message>", worded as the C++ reader words it (docs/trace-format.md), so a
script sees the same diagnosis whichever side read the file.
"""


class UvmsimError(Exception):
    """Base class of every error this module raises on purpose."""


class TraceError(UvmsimError, ValueError):
    """A .uvt file (or metadata meant for one) is corrupt, truncated or invalid."""

    def __init__(self, where, field, message):
        super().__init__(f"{where}: {field}: {message}")
        self.where = where
        self.field = field
        self.detail = message


class SimulationError(UvmsimError):
    """`uvmsim run` failed; `message` is its one-line error, `returncode` its exit status."""

    def __init__(self, message, returncode, command):
        super().__init__(message)
        self.returncode = returncode
        self.command = command
