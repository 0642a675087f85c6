"""One registry for every pluggable part: names, lookup, and one error for an unknown name (no Django).

    KINDS = Registry("task kind")
    KINDS.register("sentiment", SentimentKind())          # or as a decorator:  @SCORES.register("loss")
    KINDS["sentiment"]                                    # the same as KINDS.lookup("sentiment")
    KINDS["nope"]   # UnknownName: unknown task kind 'nope'; choose one of: sentiment, nli, hate_speech, qa, ...
    KINDS.names()   # ('sentiment', ...), in registration order

A registry is a `dict` (iteration, `in`, `len`, `.items()`, `.get()` work as for any dict): every list of its
names — a setting's choices, a schema's enum, a page's config — is derived from it, never written out again.
Where a lower layer must name the entries of a registry that lives above it (task settings name context
sampling strategies and hardness scores), the names are written once in a module both can see and the registry
checks that it holds them (`require`).

It lives in the model library because every layer imports `zoo` and `zoo` imports nothing of the site.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, TypeVar, overload

T = TypeVar("T")
_MISSING: Any = object()


class UnknownName(KeyError, ValueError):
    """A name no entry has. A `KeyError` (a dict's missing key) and a `ValueError` (a bad value), so callers of
    either kind catch it; its text is the message itself (a plain `KeyError` would quote it)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class Registry(dict[str, T]):
    """Named entries of one pluggable part. `what` names the part in messages ("serving backend"); `error` builds
    the exception for an unknown name from its message (default `UnknownName`; a registry whose callers expect
    their own error — an HTTP 400, a provider's configuration error — passes that)."""

    def __init__(self, what: str, *, error: Callable[[str], Exception] = UnknownName):
        super().__init__()
        self.what = what
        self.error = error

    @overload
    def register(self, name: str) -> Callable[[T], T]: ...

    @overload
    def register(self, name: str, entry: T, *, replace: bool = False) -> T: ...

    def register(self, name: str, entry: Any = _MISSING, *, replace: bool = False) -> Any:
        """Add `entry` under `name` (returned as given); without `entry`, a decorator that adds what it decorates.
        A name registered twice is a mistake (two parts answering to one name), unless `replace` says it is not."""
        if entry is _MISSING:
            return lambda decorated: self.register(name, decorated, replace=replace)
        if not isinstance(name, str) or not name:
            raise ValueError(f"a {self.what} needs a name (a non-empty string), not {name!r}")
        if name in self and not replace:
            raise ValueError(f"{self.what} {name!r} is registered twice")
        self[name] = entry
        return entry

    def __missing__(self, name: str) -> T:
        raise self.error(self.unknown(name))

    def lookup(self, name: str) -> T:
        """The entry registered as `name`; an unknown name raises the registry's error, which names the choices."""
        return self[name]

    def names(self) -> tuple[str, ...]:
        return tuple(self)

    def unknown(self, name: object) -> str:
        """The one message for a name no entry has."""
        return f"unknown {self.what} {name!r}; choose one of: {', '.join(self) or '(none registered)'}"

    def require(self, names: Iterable[str], *, exactly: bool = False) -> None:
        """Check that every one of `names` (written in a module a lower layer can read) is registered here — and,
        with `exactly`, that nothing else is: a registry and the names a setting accepts can never drift apart.
        Called once, when the registry's module has registered its entries."""
        expected = tuple(names)
        missing = [name for name in expected if name not in self]
        extra = [name for name in self if name not in expected] if exactly else []
        if missing or extra:
            raise RuntimeError(
                f"the {self.what} registry does not match the names its settings accept"
                + (f"; not registered: {', '.join(missing)}" if missing else "")
                + (f"; registered but not accepted: {', '.join(extra)}" if extra else ""))

    def __repr__(self) -> str:
        return f"Registry({self.what!r}, {list(self)})"


__all__ = ["Registry", "UnknownName"]
