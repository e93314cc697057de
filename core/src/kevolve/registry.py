"""Registries handed to the registration hooks: targets (with their backend) and synthesizers."""

from __future__ import annotations

import difflib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kevolve.errors import KevolveError, UnknownTargetError
from kevolve.target import TargetSpec

if TYPE_CHECKING:
    from kevolve.backend.base import Backend
    from kevolve.backend.toolchain import LanguageForm
    from kevolve.synthesis.base import Synthesizer


@dataclass(frozen=True)
class RegisteredTarget:
    spec: TargetSpec
    backend: Backend
    plugin: str

    def language_forms(self) -> dict[str, LanguageForm]:
        """How the kernel files of each language the target builds look, as the backend's toolchains say."""
        return {language: self.backend.toolchain(self.spec, language).form for language in self.spec.languages}


class TargetRegistry:
    def __init__(self) -> None:
        self._targets: dict[str, RegisteredTarget] = {}
        self._aliases: dict[str, str] = {}
        self.current_plugin = ""

    def add(self, spec: TargetSpec, backend: Backend) -> None:
        if spec.name in self._targets:
            other = self._targets[spec.name].plugin
            raise KevolveError(f"target {spec.name!r} is registered by both {other!r} and {self.current_plugin!r}")
        self._targets[spec.name] = RegisteredTarget(spec, backend, self.current_plugin)
        for alias in (spec.name, *spec.aliases):
            self._aliases[alias.lower()] = spec.name

    def names(self) -> list[str]:
        return sorted(self._targets)

    def all(self) -> list[RegisteredTarget]:
        return [self._targets[n] for n in self.names()]

    def resolve(self, name: str, known_elsewhere: Callable[[str], str | None] = lambda n: None) -> RegisteredTarget:
        key = self._aliases.get(name.lower())
        if key is not None:
            return self._targets[key]
        distribution = known_elsewhere(name)
        installed = ", ".join(self.names()) or "none"
        if distribution:
            raise UnknownTargetError(
                f"target {name!r} is not installed: `pip install {distribution}` provides it "
                f"(installed targets: {installed})."
            )
        close = difflib.get_close_matches(name.lower(), list(self._aliases), n=3)
        hint = f" Did you mean {', '.join(close)}?" if close else ""
        raise UnknownTargetError(
            f"unknown target {name!r}.{hint} Installed targets: {installed}. Targets come from plugin "
            "distributions (`pip install kevolve-cpu` for the CPU); `kevolve targets` lists what is installed."
        )


SynthesizerFactory = Callable[[str], "Synthesizer"]


class SynthesizerRegistry:
    def __init__(self, known_elsewhere: Callable[[str], str | None] = lambda n: None) -> None:
        self._factories: dict[str, SynthesizerFactory] = {}
        #: the distribution that would provide a synthesizer that is not installed
        self.known_elsewhere = known_elsewhere

    def add(self, name: str, factory: SynthesizerFactory) -> None:
        self._factories[name] = factory

    def names(self) -> list[str]:
        return sorted(self._factories)

    def create(self, selector: str) -> Synthesizer:
        """``NAME[:OPTION]``, or several joined by ``+`` to share one search (see :mod:`kevolve.synthesis.mixed`)."""
        if "+" in selector:
            from kevolve.synthesis.mixed import MixedSynthesizer

            parts = [self.create(part.strip()) for part in selector.split("+")]
            return MixedSynthesizer(parts, tuners={p.name for p in parts if p.name == "template"})
        name, _, option = selector.partition(":")
        if name not in self._factories:
            provides = self.known_elsewhere(name)
            install = f" `pip install {provides}` provides it." if provides else ""
            raise KevolveError(
                f"unknown synthesizer {name!r};{install} available: {', '.join(self.names())}. "
                "Select one as NAME or NAME:OPTION, e.g. `--synthesizer template` or "
                "`--synthesizer anthropic:claude-sonnet-4-5`."
            )
        return self._factories[name](option)
