"""Turning an LLM's answer into kernel source, or into the reason it cannot be one.

The answer must carry the whole kernel file in a fenced code block. What counts as the file's entry point is
the language's kernel file contract, which the backend's toolchain spells (``Toolchain.form``), so that a
malformed answer is caught here, with a reason the next prompt can quote, instead of as a confusing build
failure.
"""

from __future__ import annotations

import ast
import re

from kevolve.backend.toolchain import LanguageForm


class MalformedAnswer(ValueError):
    """The answer has no usable kernel; the message says why, in words a retry can act on."""


_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+#-]*)[^\n]*\n(.*?)(?:```|\Z)", re.DOTALL)


def fence(form: LanguageForm, language: str) -> str:
    """The fence tag prompts ask for."""
    return (form.fences or (language,))[0]


def extract_kernel(answer: str, language: str, form: LanguageForm) -> tuple[str, str]:
    """(source, the prose around it), ``form`` being the language's (its toolchain's). Raises
    :class:`MalformedAnswer`."""
    if not answer.strip():
        raise MalformedAnswer("the answer was empty")
    blocks = [(tag.lower(), body) for tag, body in _FENCE.findall(answer)]
    if not blocks:
        raise MalformedAnswer("the answer has no fenced code block; put the whole kernel file in one "
                              f"```{fence(form, language)} block")
    fitting = [body for tag, body in blocks if not tag or not form.fences or tag in form.fences or tag == language]
    if not fitting:
        tags = ", ".join(sorted({tag for tag, _ in blocks}))
        raise MalformedAnswer(f"the answer's code is tagged {tags}, not {language}; write the kernel in {language}")
    # the longest block is the file; smaller ones are usually usage snippets
    source = max(fitting, key=len).strip() + "\n"
    prose = _FENCE.sub("", answer).strip()
    if form.entry and not re.search(form.entry, source):
        raise MalformedAnswer(f"the code has no entry point: the {language} kernel file contract wants "
                              f"{form.entry_words}")
    if form.python:
        try:
            ast.parse(source)
        except SyntaxError as exc:
            raise MalformedAnswer(f"the code is not valid Python: {exc.msg} at line {exc.lineno}") from None
    return source, prose
