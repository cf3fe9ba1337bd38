"""Roman numerals, both ways."""

_NUMERALS = [(1000, "M"), (900, "CM"), (500, "D"), (400, "CD"), (100, "C"), (90, "XC"),
             (50, "L"), (40, "XL"), (10, "X"), (9, "IX"), (5, "V"), (4, "IV"), (1, "I")]


def to_roman(n: int) -> str:
    """Writes 1 <= n <= 3999 in Roman numerals."""
    if not 1 <= n <= 3999:
        raise ValueError(f"{n} is outside 1..3999")
    out = []
    for value, letters in _NUMERALS:
        count, n = divmod(n, value)
        out.append(letters * count)
    return "".join(out)


def from_roman(s: str) -> int:
    """Reads Roman numerals written as to_roman writes them."""
    n, i = 0, 0
    for value, letters in _NUMERALS:
        while s.startswith(letters, i):
            n, i = n + value, i + len(letters)
    if i != len(s) or to_roman(n) != s:
        raise ValueError(f"{s!r} is not a Roman numeral")
    return n
