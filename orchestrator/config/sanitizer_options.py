"""The sanitizer runtimes' option string (`ASAN_OPTIONS`), as their flag parser reads it
(compiler-rt's sanitizer_flag_parser.cpp, gcc's libsanitizer alike): `name=value` pairs
separated by any of space, tab, newline, carriage return, `,` and `:`; a value that starts
with `"` or `'` runs to the same quote, separators and all, and has no escapes. So a value
that holds a separator must be quoted, and one that holds both quotes cannot be passed.

Pure: `split` reads a user's string into its pairs (kept as written, quotes and all), and
`pair` writes csorch's own (a log path under `--out`) so that it reads back exactly.
"""

from __future__ import annotations

SEPARATORS = frozenset(" \t\n\r,:")


class OptionsError(ValueError):
    """A string the runtime's parser would refuse, or a value it cannot carry."""


def split(text: str) -> list[str]:
    """The `name=value` items of an option string, each as written (a quoted value keeps
    its quotes). OptionsError where the runtime would stop: an item without `=`, a quote
    left open, a NUL."""
    if "\0" in text:
        raise OptionsError("it holds a NUL character")
    items: list[str] = []
    i, n = 0, len(text)
    while i < n:
        if text[i] in SEPARATORS:
            i += 1
            continue
        start = i
        while i < n and text[i] != "=" and text[i] not in SEPARATORS:
            i += 1
        if i >= n or text[i] != "=":
            raise OptionsError(f"{text[start:i]!r} has no '=value'")
        i += 1
        if i < n and text[i] in "'\"":
            close = text.find(text[i], i + 1)
            if close < 0:
                raise OptionsError(
                    f"the quote opened in {text[start : i + 1]!r}... is never closed"
                )
            i = close + 1
            if i < n and text[i] not in SEPARATORS:
                raise OptionsError(f"{text[start:i]!r} runs on after its closing quote")
        else:
            while i < n and text[i] not in SEPARATORS:
                i += 1
        items.append(text[start:i])
    return items


def value(item: str) -> tuple[str, str]:
    """(name, value) of one item of `split`, the value's quotes taken off."""
    name, _, raw = item.partition("=")
    if len(raw) >= 2 and raw[0] in "'\"" and raw[-1] == raw[0]:
        raw = raw[1:-1]
    return name, raw


def pair(name: str, text: str) -> str:
    """`name=text` written so that the runtime reads `text` back exactly: bare when it
    holds no separator or quote, else in the quote it does not hold. OptionsError for a
    value holding both quotes, or a NUL (no spelling carries them)."""
    if "\0" in text:
        raise OptionsError(f"{name}: the value holds a NUL character")
    if text and not (set(text) & SEPARATORS) and text[0] not in "'\"":
        return f"{name}={text}"
    for quote in ('"', "'"):
        if quote not in text:
            return f"{name}={quote}{text}{quote}"
    raise OptionsError(
        f"{name}: the value {text!r} holds both ' and \", which the sanitizer's option "
        "parser cannot carry (it quotes with either, and has no escape)"
    )


#: the option variables csorch reads or extends (a run's `env:` may set them)
VARIABLES = ("ASAN_OPTIONS",)


def env_problem(name: str, text: str) -> str:
    """Why a run's `env:` value of `name` would not reach the runtime as written ("" when
    it would, or `name` is no sanitizer's option variable)."""
    if name not in VARIABLES:
        return ""
    try:
        split(text)
    except OptionsError as exc:
        return f"the sanitizer would refuse it: {exc}"
    return ""
