"""`--help` that reads at 80 columns: an option's value is named as Click always named it
(PATH, TEXT, INTEGER; the choices for a choice; nothing for a flag), not as a Python type
(`<bool>`, `<list[str]>`, `<int range>`), and a verb's help is unwrapped from its
docstring's line breaks, so the verb list wraps at the terminal's edge, not mid-sentence
where the source line ended."""

from __future__ import annotations

import re
import shutil

from typer.core import TyperArgument, TyperOption

try:  # Typer from 0.2x on carries its own copy of Click; before, it used Click's
    from typer.core import _click
except ImportError:  # pragma: no cover (the Typer a GPU host has installed)
    import click as _click  # type: ignore[no-redef]

#: a line break inside a paragraph: not before a blank line, an indent or a list item
_INNER_BREAK = re.compile(r"(?<!\n)\n(?![\n\s]|[-*] )")


def unwrap(text: str) -> str:
    """`text` with the line breaks inside its paragraphs made spaces."""
    return _INNER_BREAK.sub(" ", text)


#: Python's type names as Click named a value
_NAMES = {"str": "TEXT", "int": "INTEGER", "float": "FLOAT", "bool": "BOOLEAN"}


def _metavar(param: TyperOption) -> str:
    if param.is_flag or param.count:
        return ""  # a flag takes no value
    desc = getattr(param, "type_descriptor", None)
    if desc is None:  # a Typer that still uses Click: the option holds Click's type
        return _click_metavar(param.type)
    if desc.is_choice and desc.choices is not None:
        return "[" + "|".join(str(getattr(c, "value", c)) for c in desc.choices) + "]"
    if desc.is_path:
        return "PATH"
    name = desc.ranged_type_name if desc.is_ranged else param.bare_type()
    name = name.removeprefix("list[").removesuffix("]")
    return _NAMES.get(name, name.upper())


def _click_metavar(kind: object) -> str:
    """A value's name from Click's parameter type (Choice, Path, IntRange, STRING...)."""
    choices = getattr(kind, "choices", None)
    if choices is not None:
        return "[" + "|".join(str(getattr(c, "value", c)) for c in choices) + "]"
    name = str(getattr(kind, "name", "text"))
    if name in ("path", "filename", "file"):
        return "PATH"
    return name.removesuffix(" range").upper()  # IntRange: its bounds are in the help


def tidy(command: _click.Command, ctx: _click.Context | None = None) -> _click.Command:
    """`command` with plain metavars on its options and unwrapped help (in place); with
    `ctx`, its --help option too (made per context)."""
    params = list(command.params)
    if ctx is not None and (shown := command.get_help_option(ctx)) is not None:
        params.append(shown)
    for param in params:
        if isinstance(param, TyperOption) and param.metavar is None:
            param.metavar = _metavar(param)
        elif isinstance(param, TyperArgument):  # its name says what it is: no type after
            param.display_type_rich = _no_type  # type: ignore[method-assign]
    if ctx is None and not getattr(command, "_csorch_tidy", False):
        # a verb's --help option is made in the verb's own context: plain on the way out
        made = command.get_help_option

        def plain_help(ctx: _click.Context) -> _click.Option | None:
            option = made(ctx)
            if option is not None and option.metavar is None:
                option.metavar = ""
            return option

        command.get_help_option = plain_help  # type: ignore[method-assign]
        command._csorch_tidy = True  # type: ignore[attr-defined]
    if narrow():  # Click's plain layout wraps every word; Rich's option table crops
        command.rich_markup_mode = None  # type: ignore[attr-defined]
    if command.help:
        command.help = unwrap(command.help)
        if not command.short_help:  # the verb list: its first sentence, whole, wrapped
            command.short_help = first_sentence(command.help)
    return command


def _no_type(ctx: _click.Context) -> str:
    return ""


def first_sentence(text: str) -> str:
    """The first sentence of `text`'s first paragraph."""
    paragraph = text.strip().split("\n\n", 1)[0]
    head, dot, _ = paragraph.partition(". ")
    return head + "." if dot else paragraph


#: below this width the option table leaves its help column a few words wide
PLAIN_BELOW = 100


def narrow() -> bool:
    """Whether the terminal (COLUMNS, else its size) is too narrow for Rich's panels."""
    return shutil.get_terminal_size((PLAIN_BELOW, 24)).columns < PLAIN_BELOW
