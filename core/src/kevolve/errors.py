"""Errors that tell the user what went wrong and what to do next.

Every error kevolve raises for bad input derives from :class:`KevolveError`, so the CLI can print the message
(which always carries the next step) without a traceback, and library users can catch one type.
"""

from __future__ import annotations


class KevolveError(Exception):
    """Base class: the message is meant for a person and ends with what to do."""


class UnknownOpError(KevolveError):
    pass


class UnknownTargetError(KevolveError):
    pass


class DuplicateNameError(KevolveError):
    """Two plugins register the same target, op, docs pack or synthesizer name; the message names both."""


class TargetUnusableError(KevolveError):
    """The target's plugin is installed, but its toolchain or device is missing on this machine."""


class ProblemError(KevolveError):
    """A problem definition (catalog arguments, callable, KernelBench file) is malformed."""


class KernelFileError(KevolveError):
    """A user-supplied kernel file cannot be read or does not follow the kernel file contract."""


class NoRecipeError(KevolveError):
    """The template synthesizer has nothing to propose for this problem on this target."""


class StoreError(KevolveError):
    pass


class CompileError(KevolveError):
    """A candidate failed to build. Carries the compiler's output verbatim and a command that reproduces it."""

    def __init__(self, message: str, *, log: str = "", repro: str = "") -> None:
        super().__init__(message)
        self.log = log
        self.repro = repro

    def __str__(self) -> str:
        parts = [self.args[0]]
        if self.repro:
            parts.append(f"reproduce with: {self.repro}")
        if self.log:
            parts.append(self.log.rstrip())
        return "\n".join(parts)


class SearchInterrupted(KeyboardInterrupt):
    """Ctrl-C during a search. Still a KeyboardInterrupt (callers that stop on one keep doing so); its message
    says that nothing evaluated was lost and how to continue."""

    def __init__(self, session_id: str) -> None:
        super().__init__(f"interrupted; every evaluated candidate is in the store and "
                         f"`kevolve optimize --resume {session_id}` continues the search")


class ArgumentError(KevolveError):
    """An argument of the Python API (or its command-line spelling) of the wrong type or out of range."""
