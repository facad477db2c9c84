"""Integers spelled out in English words and in Chinese numerals (the targets of the numbers tasks).

English follows the plain American style without "and" or hyphens, so every word is one target
token: 1984 -> "one thousand nine hundred eighty four".

Chinese follows the standard reading rules:

* digits are grouped by four (个, 万, 亿, 万亿), each group read with 千/百/十;
* a run of zeros inside the number is read as a single 零, trailing zeros are silent
  (10005 -> 一万零五, 1010 -> 一千零一十, 100000 -> 十万);
* a leading 一十 is shortened to 十 (10 -> 十, 15 -> 十五, 100000 -> 十万) but not elsewhere
  (110 -> 一百一十);
* 2 is always 二 (二千, 二万) rather than the colloquial 两, so the mapping stays one-to-one.
"""

from __future__ import annotations

_ONES = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
         "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen",
         "nineteen"]
_TENS = ["", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]
_SCALES = ["", "thousand", "million", "billion", "trillion"]

EN_MAX = 10 ** 15 - 1
ZH_MAX = 10 ** 16 - 1


def _check(n: int, hi: int) -> int:
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"expected an int, got {type(n).__name__}")
    if not 0 <= n <= hi:
        raise ValueError(f"number {n} outside the supported range 0..{hi}")
    return n


def _en_below_1000(n: int) -> list[str]:
    words = []
    hundreds, rest = divmod(n, 100)
    if hundreds:
        words += [_ONES[hundreds], "hundred"]
    if rest >= 20:
        words.append(_TENS[rest // 10])
        if rest % 10:
            words.append(_ONES[rest % 10])
    elif rest:
        words.append(_ONES[rest])
    return words


def english_words(n: int) -> list[str]:
    """``n`` (0 <= n < 10**15) as a list of English words: 21 -> ["twenty", "one"]."""
    _check(n, EN_MAX)
    if n == 0:
        return ["zero"]
    groups = []
    while n:
        n, g = divmod(n, 1000)
        groups.append(g)
    words: list[str] = []
    for scale in range(len(groups) - 1, -1, -1):
        g = groups[scale]
        if g:
            words += _en_below_1000(g)
            if _SCALES[scale]:
                words.append(_SCALES[scale])
    return words


def number_to_english(n: int) -> str:
    """``n`` in English words joined by spaces: 1984 -> "one thousand nine hundred eighty four"."""
    return " ".join(english_words(n))


_ZH_DIGITS = "零一二三四五六七八九"
_ZH_UNITS = ["", "十", "百", "千"]
_ZH_GROUPS = ["", "万", "亿", "万亿"]


def _zh_group(g: int) -> str:
    """A group 1..9999 read on its own, with internal zeros as one 零 and trailing zeros silent."""
    out = []
    pending_zero = False
    for pos in range(3, -1, -1):
        d = (g // 10 ** pos) % 10
        if d == 0:
            pending_zero = bool(out)  # only zeros *after* a written digit matter
            continue
        if pending_zero:
            out.append("零")
            pending_zero = False
        out.append(_ZH_DIGITS[d] + _ZH_UNITS[pos])
    return "".join(out)


def number_to_chinese(n: int) -> str:
    """``n`` (0 <= n < 10**16) in Chinese numerals: 1984 -> "一千九百八十四",
    10005 -> "一万零五"."""
    _check(n, ZH_MAX)
    if n == 0:
        return "零"
    groups = []
    while n:
        n, g = divmod(n, 10000)
        groups.append(g)
    out = ""
    zero_gap = False
    for i in range(len(groups) - 1, -1, -1):
        g = groups[i]
        if g == 0:
            # a whole zero group becomes (at most) one 零 before the next group
            zero_gap = bool(out)
            continue
        # A lower group with leading zeros (g < 1000) or after an empty group starts with 零.
        if out and (zero_gap or g < 1000):
            out += "零"
        out += _zh_group(g) + _ZH_GROUPS[i]
        zero_gap = False
    if out.startswith("一十"):
        out = out[1:]
    return out
