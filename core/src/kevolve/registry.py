"""The registries handed to the registration hooks: targets, catalog ops, docs packs and synthesizers.

They share one policy for names: a name (or alias) that a second plugin registers is an error naming both
plugins, and nothing of the second entry is added. Each registry remembers which plugin added each entry, so
that a plugin whose registration fails half-way is withdrawn whole, and so that a name which a plugin that failed
to load would have provided is reported as that plugin's failure, never as "not installed".
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, Generic, TypeVar

import tomllib

from kevolve.errors import DuplicateNameError, KevolveError, UnknownOpError, UnknownTargetError
from kevolve.knowledge import KnowledgeBase, disabled_packs, pack_files, parse_passage
from kevolve.target import TargetSpec

if TYPE_CHECKING:
    from kevolve.backend.base import Backend
    from kevolve.backend.toolchain import LanguageForm
    from kevolve.problems.catalog import OpDef
    from kevolve.synthesis.base import Synthesizer

Entry = TypeVar("Entry")

#: name -> the distribution that would provide it if it were installed (None: no known one)
KnownElsewhere = Callable[[str], "str | None"]


@dataclass
class PluginFailure:
    """A plugin that is installed but failed to import or to register. It contributes nothing: what it had
    registered before failing is withdrawn."""

    plugin: str
    error: str
    detail: str
    #: the distribution whose entry point it is (None for a module named in ``KEVOLVE_PLUGINS``)
    distribution: str | None = None
    #: (kind, spelling) of every name it had registered before it failed, so asking for one names this failure
    withdrawn: set[tuple[str, str]] = field(default_factory=set)


#: who added an entry that no plugin's hook added (a test or a script calling ``add`` itself)
NOT_A_PLUGIN = "code outside any plugin"


@dataclass
class RegistrationLog:
    """What the registries of one plugin manager share: the plugin whose hooks run now, and the failed ones."""

    current: str = NOT_A_PLUGIN
    failures: list[PluginFailure] = field(default_factory=list)


class Registry(Generic[Entry]):
    """Named entries with aliases, each remembering the plugin that added it. The four registries below add what
    their hook needs (``add`` with its own arguments, a lookup with its own advice)."""

    #: what one entry is called in messages
    kind: ClassVar[str] = "entry"

    def __init__(self, log: RegistrationLog | None = None, known_elsewhere: KnownElsewhere = lambda name: None
                 ) -> None:
        self.log = log if log is not None else RegistrationLog()
        #: the distribution that would provide a name that is not registered (core's known_backends.toml)
        self.known_elsewhere = known_elsewhere
        self._entries: dict[str, Entry] = {}
        self._plugins: dict[str, str] = {}
        #: folded spelling (a name or an alias) -> name
        self._spellings: dict[str, str] = {}

    @staticmethod
    def fold(spelling: str) -> str:
        """How two spellings compare: exactly (targets ignore case)."""
        return spelling

    def _put(self, name: str, entry: Entry, aliases: Iterable[str] = ()) -> None:
        """Add ``entry`` as ``name`` and its aliases for the plugin registering now. The one duplicate policy: a
        spelling that already means an entry is an error naming both plugins, and nothing of ``entry`` is added
        (a plugin must not shadow another's name, nor the order of entry points decide which one wins)."""
        spellings = (name, *aliases)
        for spelling in spellings:
            taken = self._spellings.get(self.fold(spelling))
            if taken is not None:
                alias = "" if self.fold(taken) == self.fold(spelling) else f" (an alias of {taken!r})"
                raise DuplicateNameError(f"{self.kind} {spelling!r}{alias} is registered by both "
                                         f"{self._plugins[taken]!r} and {self.log.current!r}")
        self._entries[name] = entry
        self._plugins[name] = self.log.current
        for spelling in spellings:
            self._spellings[self.fold(spelling)] = name

    def _find(self, spelling: str) -> Entry | None:
        name = self._spellings.get(self.fold(spelling))
        return None if name is None else self._entries[name]

    def names(self) -> list[str]:
        return sorted(self._entries)

    def __contains__(self, spelling: str) -> bool:
        return self.fold(spelling) in self._spellings

    def withdraw(self, plugin: str) -> set[str]:
        """Remove every entry ``plugin`` added (its registration failed part-way); the spellings they had."""
        names = {name for name, owner in self._plugins.items() if owner == plugin}
        gone = {spelling for spelling, name in self._spellings.items() if name in names}
        for name in names:
            del self._entries[name], self._plugins[name]
        for spelling in gone:
            del self._spellings[spelling]
        return gone

    def _unknown(self, spelling: str, error: type[KevolveError], advice: str) -> KevolveError:
        """The error for a spelling that names nothing here, the most specific reason first: a plugin that
        provides it failed to load; a distribution that provides it is not installed; it is misspelt."""
        distribution = self.known_elsewhere(spelling)
        for failure in self.log.failures:
            if (self.kind, self.fold(spelling)) in failure.withdrawn or (
                    distribution is not None and failure.distribution == distribution):
                return error(f"{self.kind} {spelling!r} comes from the plugin {failure.plugin}, which is installed "
                             f"but failed to load: {failure.error}. `kevolve targets` lists every plugin that "
                             "failed; fix or reinstall it.")
        if distribution is not None:
            return error(f"{self.kind} {spelling!r} is not installed: `pip install {distribution}` provides it. "
                         f"{advice}")
        close = difflib.get_close_matches(self.fold(spelling), list(self._spellings), n=3)
        hint = f" Did you mean {', '.join(close)}?" if close else ""
        failed = "".join(f" The plugin {f.plugin} failed to load ({f.error}); it may provide it."
                         for f in self.log.failures)
        return error(f"unknown {self.kind} {spelling!r}.{hint} {advice}{failed}")


# --- hardware ------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class RegisteredTarget:
    spec: TargetSpec
    backend: Backend
    plugin: str

    def language_forms(self) -> dict[str, LanguageForm]:
        """How the kernel files of each language the target builds look, as the backend's toolchains say."""
        return {language: self.backend.toolchain(self.spec, language).form for language in self.spec.languages}


class TargetRegistry(Registry[RegisteredTarget]):
    """Targets with the backend that serves each; names and aliases ignore case. Handed to
    ``kevolve_register_targets``."""

    kind = "target"

    @staticmethod
    def fold(spelling: str) -> str:
        return spelling.lower()

    def add(self, spec: TargetSpec, backend: Backend) -> None:
        self._put(spec.name, RegisteredTarget(spec, backend, self.log.current), spec.aliases)

    def all(self) -> list[RegisteredTarget]:
        return [self._entries[name] for name in self.names()]

    def resolve(self, name: str) -> RegisteredTarget:
        found = self._find(name)
        if found is None:
            raise self._unknown(name, UnknownTargetError, (
                f"Installed targets: {', '.join(self.names()) or 'none'}. Targets come from plugin distributions "
                "(`pip install kevolve-cpu` for the CPU); `kevolve targets` lists what is installed."))
        return found


# --- problems ------------------------------------------------------------------------------------------------

class OpRegistry(Registry["OpDef"]):
    """Catalog ops by name and alias. Handed to ``kevolve_register_ops``."""

    kind = "op"

    def add(self, op: OpDef) -> None:
        self._put(op.name, op, op.aliases)

    def get(self, name: str) -> OpDef:
        found = self._find(name)
        if found is None:
            raise self._unknown(name, UnknownOpError, (
                "`kevolve ops` lists the catalog; a PyTorch module can be given as a KernelBench-format file "
                "(PROBLEM.py with class Model, get_inputs, get_init_inputs)."))
        return found


# --- knowledge -----------------------------------------------------------------------------------------------

class DocsRegistry(Registry["Traversable | Path"]):
    """Docs packs by name; their passages go into a knowledge base. Handed to ``kevolve_register_docs``."""

    kind = "docs pack"

    def __init__(self, knowledge: KnowledgeBase | None = None, log: RegistrationLog | None = None) -> None:
        super().__init__(log)
        self.knowledge = knowledge if knowledge is not None else KnowledgeBase()
        #: files of a pack whose front matter could not be read, one message each
        self.errors: list[str] = []
        #: packs left out by ``KEVOLVE_DISABLE_DOCS_PACKS``
        self.disabled: list[str] = []

    @property
    def packs(self) -> list[str]:
        return self.names()

    def add_pack(self, name: str, root: Traversable | Path) -> None:
        if name in disabled_packs():
            self.disabled.append(name)
            return
        self._put(name, root)
        passages = []
        for path, entry in pack_files(root):
            try:
                passages.append(parse_passage(name, path, entry.read_text(encoding="utf-8")))
            except (ValueError, tomllib.TOMLDecodeError) as exc:
                self.errors.append(str(exc))
        self.knowledge.add(passages)

    def withdraw(self, plugin: str) -> set[str]:
        gone = super().withdraw(plugin)
        self.knowledge.drop(gone)
        return gone


# --- synthesis -----------------------------------------------------------------------------------------------

SynthesizerFactory = Callable[[str], "Synthesizer"]


class SynthesizerRegistry(Registry[SynthesizerFactory]):
    """Synthesizer factories by name. Handed to ``kevolve_register_synthesizers``."""

    kind = "synthesizer"

    def add(self, name: str, factory: SynthesizerFactory) -> None:
        self._put(name, factory)

    def create(self, selector: str) -> Synthesizer:
        """``NAME[:OPTION]``, or several joined by ``+`` to share one search (see :mod:`kevolve.synthesis.mixed`)."""
        if "+" in selector:
            from kevolve.synthesis.mixed import MixedSynthesizer

            parts = [self.create(part.strip()) for part in selector.split("+")]
            return MixedSynthesizer(parts, tuners={p.name for p in parts if p.name == "template"})
        name, _, option = selector.partition(":")
        factory = self._find(name)
        if factory is None:
            raise self._unknown(name, KevolveError, (
                f"Available: {', '.join(self.names())}. Select one as NAME or NAME:OPTION, e.g. "
                "`--synthesizer template` or `--synthesizer anthropic:claude-sonnet-4-5`."))
        return factory(option)
