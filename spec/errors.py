"""The one error type for bad input: it names the field, the value and what is allowed."""

from __future__ import annotations


class SpecError(ValueError):
    """Invalid input. `field` is a dotted path such as `model.tables[3].rows`."""

    def __init__(self, field: str, value: object, allowed: str) -> None:
        self.field = field
        self.value = value
        self.allowed = allowed
        super().__init__(f"{field} = {value!r}: {allowed}")

    def within(self, prefix: str) -> SpecError:
        """The same error with `prefix` put in front of the field path."""
        joined = f"{prefix}.{self.field}" if self.field and not self.field.startswith("[") else (
            f"{prefix}{self.field}")
        return SpecError(joined, self.value, self.allowed)


def require(ok: bool, field: str, value: object, allowed: str) -> None:
    """Raise SpecError(field, value, allowed) unless `ok`."""
    if not ok:
        raise SpecError(field, value, allowed)


def require_int_range(field: str, value: object, lo: int, hi: int | None = None) -> None:
    """An int (not bool) in [lo, hi]; hi None means unbounded."""
    allowed = f"an integer >= {lo}" if hi is None else f"an integer in [{lo}, {hi}]"
    ok = isinstance(value, int) and not isinstance(value, bool)
    ok = ok and value >= lo and (hi is None or value <= hi)
    require(ok, field, value, allowed)


def require_between(field: str, value: object, lo: float, hi: float, unit: str) -> None:
    """A number in [lo, hi] (a rate or a time a machine can have)."""
    ok = isinstance(value, int | float) and not isinstance(value, bool)
    require(ok and lo <= value <= hi, field, value, f"{unit} in [{lo:g}, {hi:g}]")


def require_positive(field: str, value: object) -> None:
    """A finite number > 0."""
    ok = isinstance(value, int | float) and not isinstance(value, bool)
    ok = ok and value == value and value > 0 and value != float("inf")
    require(ok, field, value, "a finite number > 0")
