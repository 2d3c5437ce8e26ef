"""How one option is declared: its ``Setting`` (ini name, flag, reader, whether a child pytest gets it) and
the readers of option text. The table of options itself is ``plugin.options.AccelOptions``."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, final

import pytest

from pytest_accel.core.validation import integer_text, number_text, parse_output_path

__all__ = [
    "Reader",
    "Setting",
    "above_one",
    "at_least_zero",
    "boolean",
    "choice",
    "chosen",
    "declared",
    "ini_setting",
    "integer",
    "output",
    "positive",
    "switch",
]

Reader = Callable[[Any], Any]  # an option's text -> its value; ValueError quoting the text says what is wrong


def positive(text: Any) -> float:
    return number_text(text)


def at_least_zero(text: Any) -> float:
    return number_text(text, zero_allowed=True)


def above_one(text: Any) -> float:
    value = number_text(text)
    if value <= 1:
        raise ValueError(f"{text!r} must be greater than 1")
    return value


def integer(minimum: int) -> Reader:
    return lambda text: integer_text(text, minimum)


def boolean(text: Any) -> bool:
    word = str(text).strip().lower()
    if word not in ("true", "false", "1", "0", "yes", "no"):
        raise ValueError(f"{word!r}; use true or false")
    return word in ("true", "1", "yes")


def choice(choices: tuple[str, ...]) -> Reader:
    def read(text: Any) -> str:
        value = str(text)
        if value not in choices:
            raise ValueError(f"{value!r}; choose one of {', '.join(choices)}")
        return value

    return read


@final
@dataclass(frozen=True)
class Setting:
    """One option, declared once: its ini setting, its command-line flag, how its text is read, and
    whether a child pytest gets this run's value (as an ini override)."""

    ini: str | None = None  # the ini name; None: a flag only
    ini_help: str = ""
    default: str | None = None  # the ini default, as an ini file writes it
    flag: str | None = None  # the command-line flag; None: an ini setting only
    flag_help: str = ""
    read: Reader | None = None  # the ini text (and the flag's) -> value; None: the flag is a switch
    flag_read: Reader | None = None  # the flag's reader where it differs from the ini's
    choices: tuple[str, ...] | None = None  # the flag's choices (argparse lists them)
    metavar: str | None = None
    child: bool = False  # a child pytest gets this run's value as an ini override
    implied_by: str | None = None  # a switch also set by another option's (--accel-prune implies --accel-stale)
    resolve: Callable[[pytest.Config], Any] | None = None  # replaces "the flag, else the ini" where both mean more

    @property
    def dest(self) -> str:
        """Where argparse keeps the flag's value (``config.option.<dest>``)."""
        assert self.flag is not None
        return self.flag.lstrip("-").replace("-", "_")

    def declare(self, group: pytest.OptionGroup, parser: pytest.Parser) -> None:
        """Register the flag in ``group`` and the ini setting with ``parser``."""
        if self.flag is not None:
            group.addoption(self.flag, **self.flag_arguments())
        if self.ini is not None:
            shown = f" (default: {self.default})" if self.default else ""
            parser.addini(self.ini, self.ini_help + shown, default=self.default)

    def flag_arguments(self, help_suffix: str = "") -> dict[str, Any]:
        """``addoption``'s keywords for this flag (another spelling of it passes the same, ``--device``)."""
        arguments: dict[str, Any] = {"dest": self.dest, "help": self.flag_help + help_suffix}
        reader = self.flag_read or self.read
        if self.choices is not None:
            arguments.update(choices=self.choices, default=None)
        elif reader is None:
            arguments.update(action="store_true")
        elif reader is not str:
            arguments.update(type=_argparse_type(reader), default=None)
        else:
            arguments.update(default=None)
        if self.metavar is not None:
            arguments["metavar"] = self.metavar
        return arguments

    def value(self, config: pytest.Config) -> Any:
        """This run's value: the flag's when given, else the ini's; a bad ini value is a usage error naming it."""
        if self.resolve is not None:
            return self.resolve(config)
        given = getattr(config.option, self.dest) if self.flag is not None else None
        if given or self.ini is None:
            return bool(given) if self.read is None and self.choices is None else given
        assert self.read is not None
        raw = config.getini(self.ini)
        try:
            return self.read(raw)
        except ValueError as error:
            raise pytest.UsageError(f"ini option {self.ini} = {error}") from None


def _argparse_type(reader: Reader) -> Callable[[str], Any]:
    """``reader`` as argparse's ``type=``: its ``ValueError`` becomes the message argparse shows."""

    def read(text: str) -> Any:
        try:
            return reader(text)
        except ValueError as error:
            raise argparse.ArgumentTypeError(str(error)) from None

    return read


def declared(**declaration: Any) -> dict[str, Setting]:
    """The metadata of a field of ``AccelOptions``: the ``Setting`` that declares it (see ``SETTINGS``)."""
    return {"setting": Setting(**declaration)}


def switch(flag: str, flag_help: str, implied_by: str | None = None) -> dict[str, Setting]:
    """A flag that is on or off (``store_true``), with no ini setting."""
    return declared(flag=flag, flag_help=flag_help, implied_by=implied_by)


def chosen(
    flag: str, choices: tuple[str, ...], flag_help: str, ini: str, ini_help: str, default: str, child: bool = False
) -> dict[str, Setting]:
    """One of ``choices``, from the flag, else the ini setting (whose ``default`` is one of them)."""
    return declared(
        flag=flag, choices=choices, flag_help=flag_help, ini=ini, ini_help=ini_help, default=default,
        read=choice(choices), child=child,
    )  # fmt: skip


def output(flag: str, metavar: str, flag_help: str, read: Reader = parse_output_path) -> dict[str, Setting]:
    """A file (or with ``read=parse_output_folder`` a folder) this run writes, checked before it measures."""
    return declared(flag=flag, read=read, metavar=metavar, flag_help=flag_help)


def ini_setting(ini: str, default: str, read: Reader, ini_help: str, child: bool = True) -> dict[str, Setting]:
    """A setting of the ini file only; by default a child pytest gets this run's value."""
    return declared(ini=ini, default=default, read=read, ini_help=ini_help, child=child)
