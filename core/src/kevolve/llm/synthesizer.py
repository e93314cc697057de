"""The LLM synthesizer: one request per candidate, built by the prompt builder, answered by a provider.

Failures are data. A request that fails after the provider's retries, an answer without usable code, an answer
cut off by the token limit: each becomes a candidate carrying ``error``, which the search records as a failed
node whose reason the next prompt quotes. Only a configuration error (no key, a rejected key, an unknown model)
stops the search, because no later request could succeed. Every candidate carries its trace: the prompt as sent,
the raw answer and the tokens it cost.

No request is paid for twice. An answer repeating a kernel already evaluated comes back as a failed candidate
(``duplicate: ...``), so the search records it with the tokens it cost, and the next request feeds it back ("this
kernel was already evaluated: its result ...; propose a different kernel"). A prompt that was sent before is never
sent again byte for byte (it says which attempt it is). One request, one recorded candidate.
"""

from __future__ import annotations

import hashlib

from kevolve.llm.client import ChatClient, ChatRequest, LLMConfigError, LLMError, LLMSettings
from kevolve.llm.parse import MalformedAnswer, extract_kernel
from kevolve.llm.prompt import build_prompt
from kevolve.synthesis.base import Candidate, Context, Synthesizer, source_hash
from kevolve.synthesis.tunable import TUNABLE, knobs

#: stop reasons providers use for an answer cut off by the token limit
CUT_OFF = ("max_tokens", "length")


class LLMSynthesizer(Synthesizer):
    #: every request costs money: a model that keeps repeating itself ends the search after this many
    #: expansions in a row that bring nothing new
    patience = 3

    def __init__(self, client: ChatClient, settings: LLMSettings) -> None:
        self.client = client
        self.settings = settings
        self.name = f"{client.provider}:{client.model}"
        self.tokens_used = 0
        #: a configuration error met after some candidates of a batch came back: raised at the next proposal,
        #: so the answers already paid for are evaluated first
        self._fatal: LLMConfigError | None = None
        #: digests of every request sent (system, user, temperature): none is sent twice
        self._sent: set[str] = set()
        #: source hash -> what became of that kernel, for feeding a repeated answer back
        self._known: dict[str, str] = {}
        #: the feedback on a repeated answer, appended to the next request
        self._repeat_note = ""

    def stop_reason(self) -> str:
        if self.settings.tokens and self.tokens_used >= self.settings.tokens:
            return f"token budget spent: {self.tokens_used} of {self.settings.tokens} tokens used"
        return ""

    def replay(self, candidate: Candidate) -> None:
        if candidate.synthesizer == self.name:
            self.tokens_used += _usage_total(candidate.trace)

    def propose(self, context: Context) -> list[Candidate]:
        if self._fatal is not None:
            raise self._fatal
        language = context.parent.language if context.parent is not None else context.target.languages[0]
        candidates: list[Candidate] = []
        while len(candidates) < context.n and not self.stop_reason():
            try:
                candidates += self._request(context, language, context.n - len(candidates))
            except LLMConfigError as exc:
                if not candidates:
                    raise
                self._fatal = exc
                break
        return candidates

    def _request(self, context: Context, language: str, wanted: int) -> list[Candidate]:
        """One request for up to ``wanted`` completions (as many as the client returns for one prompt), each a
        candidate; the request's token counts go with the first, the others' traces share its prompt."""
        self._learn(context)
        prompt = build_prompt(context, language, self.settings.context_chars)
        user = self._unsent(prompt.system, prompt.user + self._repeat_note)
        self._repeat_note = ""
        trace: dict[str, object] = {"provider": self.client.provider, "model": self.client.model,
                                    "memory_op": context.memory_op, "prompt": {**prompt.to_dict(), "user": user}}
        n = max(1, min(wanted, self.client.choices_per_request))
        try:
            completion = self.client.complete(ChatRequest(prompt.system, user, self.settings.max_tokens,
                                                          self.settings.temperature, n))
        except LLMError as exc:
            trace["usage"] = {"input_tokens": 0, "output_tokens": 0, "attempts": exc.attempts}
            return [self._failed(context, language, trace,
                                 f"the {self.client.provider} request failed after {exc.attempts} attempt(s): {exc}")]
        self.tokens_used += completion.input_tokens + completion.output_tokens
        answers = [(completion.text, completion.stop_reason), *completion.more][:n]
        candidates = []
        for i, (text, stop_reason) in enumerate(answers):
            usage = ({"input_tokens": completion.input_tokens, "output_tokens": completion.output_tokens,
                      "attempts": completion.attempts} if i == 0 else
                     {"input_tokens": 0, "output_tokens": 0, "attempts": 0})
            own = {**trace, "response": text, "usage": usage, "stop_reason": stop_reason, "choice": i}
            candidates.append(self._answer(context, language, own, text, stop_reason))
        return candidates

    def _failed(self, context: Context, language: str, trace: dict, error: str, source: str = "") -> Candidate:
        return Candidate(source, language, synthesizer=self.name, error=error,
                         note=f"{context.memory_op} by {self.client.model}", trace=trace)

    def _answer(self, context: Context, language: str, trace: dict, text: str, stop_reason: str) -> Candidate:
        """One completion as a candidate: its kernel, or a failed node saying why it has none (malformed, cut
        off, a repeat of a kernel already evaluated)."""
        failed = lambda error, source="": self._failed(context, language, trace, error, source)
        try:
            source, prose = extract_kernel(text, language, context.form(language))
        except MalformedAnswer as exc:
            cut = " (the answer was cut off at the token limit: write a shorter kernel)" \
                if stop_reason in CUT_OFF else ""
            return failed(f"malformed answer: {exc}{cut}", text)
        known = self._known.get(source_hash(source))
        if known is not None:
            self._repeat_note = (f"\n\n## Your last answer repeated a kernel already evaluated\nThis kernel was "
                                 f"already evaluated: {known}. Propose a different kernel.")
            return failed(f"duplicate: the answer repeats a kernel already evaluated ({known})", source)
        self._known[source_hash(source)] = "proposed earlier in this session"
        parameters = {name: value for name, (value, _) in knobs(source).items()}
        return Candidate(source, language, parameters=parameters, recipe=TUNABLE if parameters else "",
                         synthesizer=self.name, trace=trace,
                         note=(prose.splitlines()[0][:200] if prose else f"{context.memory_op} by {self.client.model}"))

    def _learn(self, context: Context) -> None:
        """What the tree knows about the kernels this context shows, by source."""
        items = [*context.history, *(i for i in (context.parent, context.best) if i is not None)]
        for item in items:
            if item.source:
                result = (f"node {item.node_id}, {item.status}"
                          + (f", {item.fitness:.2f}x" if item.fitness else "")
                          + (f": {item.reason}" if item.reason else ""))
                self._known[source_hash(item.source)] = result

    def _unsent(self, system: str, user: str) -> str:
        """``user``, or, when that exact request was sent before, ``user`` marked as a later attempt: a repeated
        request buys the same answer again at full price."""
        attempt = 1
        candidate = user
        while (digest := _digest(system, candidate, self.settings.temperature)) in self._sent:
            attempt += 1
            candidate = (f"{user}\n\n(Attempt {attempt} at this request: earlier answers to it are already in the "
                         "tree; take a different approach.)")
        self._sent.add(digest)
        return candidate

def make_llm_synthesizer(client_class: type[ChatClient], option: str) -> LLMSynthesizer:
    """What a provider plugin registers: ``registry.add("anthropic", lambda o: make_llm_synthesizer(C, o))``,
    where ``o`` is ``MODEL[,option=value...]``. The client is built (and its key or endpoint checked) when the
    synthesizer is selected, before any search starts."""
    model, settings = LLMSettings.parse(option)
    return LLMSynthesizer(client_class(model, settings), settings)


def _digest(system: str, user: str, temperature: float) -> str:
    return hashlib.sha256(f"{temperature!r}\0{system}\0{user}".encode()).hexdigest()


def _usage_total(trace: dict) -> int:
    usage = trace.get("usage") or {}
    return int(usage.get("input_tokens", 0)) + int(usage.get("output_tokens", 0))
