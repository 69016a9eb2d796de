"""Parse and print sizes, bandwidths and times.

``B`` is bytes and ``b`` bits in every unit (the prefix's case does not matter, the B's does):
sizes ``B``, decimal ``KB MB GB TB`` (1e3...), binary ``KiB MiB GiB TiB`` (1024...), bits ``b Kb
Mb Gb`` (also ``Mbit``); bandwidths the same per second: ``MB/s GB/s GiB/s`` bytes, ``Mb/s Gb/s
Gbit/s Mbps Gbps`` bits, so ``8Mb/s`` is 1 MB/s. A spelling whose B cannot be read (``GBPS``
in capitals, ``GBps``) is refused with both readings, and so is a prefix in lower case before a lone ``b``
(``1gb``, ``64mb``, ``1gib``, ``gb/s``): people write it for bytes, and it would read as bits; write
``GB``, ``GiB`` or ``Gb``. (``gbps`` stays bits, as ``bps`` always is.) A size is at most
:data:`MAX_SIZE_BYTES` (1 PiB, 1024 TiB): beyond it no collective is meant, and the counters of a
run would overflow. Times: ``s ms us ns`` (and ``µs``).

Where a bare number is allowed: a size without a unit is bytes (as nccl-tests reads sizes)
everywhere. A time or bandwidth without a unit is an error wherever a person types it (a CLI
flag, or a short key such as ``latency:`` in a scenario, DDP, sweep or compare file), because
``--latency 5`` silently meaning 5 s is a trap: :func:`require_unit` says so. Only the canonical
keys that carry their unit in the name (``latency_s``, ``bandwidth_Bps``, ``o_s``) and Python
numbers passed to the parsers take a bare number, in seconds or bytes per second. Zero needs no
unit.
"""

from __future__ import annotations

import math
import re

from sim.errors import CollsimError

_PREFIX = {"": 1, "K": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "KI": 2**10, "MI": 2**20, "GI": 2**30, "TI": 2**40}
_PREFIX_NAMES = {"": "", "K": "kilo", "M": "mega", "G": "giga", "T": "tera", "KI": "kibi", "MI": "mebi", "GI": "gibi", "TI": "tebi"}
# a unit: a prefix (k, K, M, G, T, or Ki, Mi, Gi, Ti), then B (bytes) or b / bit (bits); for a
# bandwidth then /s, or ps ("Gbps"); "B" and "b" are told apart by their case, prefixes are not
_UNIT = re.compile(r"^(?P<prefix>(?:[kKmMgGtT][iI]?)?)(?P<base>B|b|bit|bits|byte|bytes|Byte|Bytes)?(?P<rate>/s|ps|PS)?$")
MAX_SIZE_BYTES = 2**50  # 1 PiB: the largest size any field takes (documented above)
TIME_UNITS = {"S": 1.0, "MS": 1e3, "US": 1e6, "NS": 1e9}  # divisors: 5 / 1e6 is exactly 5e-06

_NUMBER = re.compile(r"^\s*([+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)\s*([A-Za-zµμ/]*)\s*$")


def _split(text: str | float | int, what: str, allowed: str) -> tuple[float, str]:
    if isinstance(text, bool):
        raise CollsimError(f"{what}: expected a number with a unit ({allowed}), got {text!r}")
    if isinstance(text, (int, float)):
        return float(text), ""
    match = _NUMBER.match(str(text))
    if not match:
        raise CollsimError(f"{what}: cannot read {text!r}; expected a number with a unit ({allowed})")
    return float(match.group(1)), match.group(2)


def _unit(table: dict[str, float], unit: str, text: object, what: str, allowed: str) -> float:
    key = unit.replace("µ", "u").replace("μ", "u").upper()
    if key not in table:
        raise CollsimError(f"{what}: unknown unit in {text!r}; allowed: {allowed}")
    return table[key]


def _bytes_factor(unit: str, text: object, what: str, allowed: str, rate: bool) -> float:
    """Bytes (per second) in one of ``unit``: ``B`` is bytes and ``b`` bits, in every spelling
    (MB, Mb, Mbit, MiB; MB/s, Mb/s, Mbit/s, Mbps, MiB/s). A spelling whose B cannot be read
    (``GBPS`` in capitals, ``GBps``) is refused with both readings."""
    match = _UNIT.match(unit)
    if not match or (match.group("rate") is not None) != rate or match.group("base") is None:
        raise CollsimError(f"{what}: unknown unit in {text!r}; allowed: {allowed}")
    prefix, base, per = match.group("prefix"), match.group("base"), match.group("rate")
    bits = base[0] == "b"
    if per == "PS" or (per == "ps" and not bits):  # GBPS, GBps: bytes by the B, bits as in Gbps
        raise _ambiguous(text, what, prefix)
    if base == "b" and prefix and prefix == prefix.lower() and per != "ps":  # 1gb: bytes meant, bits read
        raise _lower_case(text, what, prefix, per or "")
    factor = _PREFIX[prefix.upper()]
    return factor / 8 if bits else float(factor)


def _lower_case(text: object, what: str, prefix: str, per: str) -> CollsimError:
    """``1gb`` is gigabits by the letter, but people write it for gigabytes: refuse it, naming
    the three spellings that say which."""
    letter = prefix[0].upper()
    decimal, binary, bits = f"{letter}B{per}", f"{letter}iB{per}", f"{letter}b{per}"
    name = _PREFIX_NAMES[letter]
    return CollsimError(
        f"{what}: {str(text).strip()!r} is ambiguous (lower-case b would be bits); write {decimal} ({name}bytes, 10^{3 * ' KMGT'.index(letter)}), "
        f"{binary} ({_PREFIX_NAMES[letter + 'I']}bytes, 2^{10 * ' KMGT'.index(letter)}) or {bits} ({name}bits)"
    )


def _ambiguous(text: object, what: str, prefix: str) -> CollsimError:
    p = prefix[:1].upper() + prefix[1:].lower()
    name = _PREFIX_NAMES.get(prefix.upper(), "")
    return CollsimError(
        f"{what}: {str(text).strip()!r} is ambiguous: {p}b/s ({name}bits per second) or {p}B/s ({name}bytes per second); "
        f"write one of those (b is bits, B is bytes)"
    )


SIZE_HELP = "B, KB, MB, GB, TB (decimal bytes), KiB, MiB, GiB, TiB (binary) or b, Kb, Mb, Gb (bits), e.g. 64MiB"
BANDWIDTH_HELP = "B/s, KB/s, MB/s, GB/s (decimal bytes), KiB/s, MiB/s, GiB/s (binary) or b/s, Mb/s, Gb/s, Gbit/s, Gbps (bits), e.g. 25GB/s"
TIME_HELP = "s, ms, us, ns, e.g. 5us or 1.5e-6s"


def _is_bare_number(value: object) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, (int, float)):
        return True
    match = _NUMBER.match(str(value))
    return bool(match) and not match.group(2)


def require_unit(value: object, what: str, kind: str) -> None:
    """Raise when a user-typed time (``kind="time"``) or bandwidth (``"bandwidth"``) has no unit.

    Zero is allowed bare (it is zero in every unit); ``None`` and empty strings pass through
    (optional fields). Everything else is left to :func:`parse_time` / :func:`parse_bandwidth`.
    """
    if value is None or value == "" or not _is_bare_number(value):
        return
    if float(value) == 0:
        return
    example = "5us, 2ms or 1s" if kind == "time" else "25GB/s, 800MB/s or 100Gbps"
    raise CollsimError(f"{what}: {str(value).strip()!r} has no unit; give a {kind} such as {example}")


def parse_size(text: str | int | float, what: str = "size") -> int:
    """Bytes in ``text`` ("64MiB", "1.5KB", 4096); a whole number from 0 to :data:`MAX_SIZE_BYTES`."""
    value, unit = _split(text, what, SIZE_HELP)
    factor = _bytes_factor(unit or "B", text, what, SIZE_HELP, rate=False)
    nbytes = value * factor
    if not math.isfinite(nbytes) or nbytes < 0:
        raise CollsimError(f"{what}: must be a finite, non-negative size, got {text!r}")
    if nbytes > MAX_SIZE_BYTES:
        raise CollsimError(f"{what}: {text!r} is beyond the largest size, 1 PiB (1024TiB, {MAX_SIZE_BYTES} bytes)")
    if abs(nbytes - round(nbytes)) > 1e-6 * max(1.0, nbytes):
        raise CollsimError(f"{what}: {text!r} is not a whole number of bytes")
    return int(round(nbytes))


def parse_element_bytes(text: str | int | float, what: str = "bytes per element") -> int:
    """Bytes per element (``optimizer_state_bytes: 8``, ``8B``): a size unit above bytes is
    refused, where ``8GB`` was taken as 8e9 bytes for each element."""
    _, unit = _split(text, what, "a whole number of bytes such as 8")
    if unit not in ("", "B"):
        raise CollsimError(
            f"{what}: {str(text).strip()!r} is a size; this is bytes per parameter element, a whole number such as 8 (Adam in fp32) or 8B"
        )
    return parse_size(text, what)


def parse_bandwidth(text: str | int | float, what: str = "bandwidth") -> float:
    """Bytes per second in ``text`` ("25GB/s", "100Gbps", "1e9")."""
    value, unit = _split(text, what, BANDWIDTH_HELP)
    factor = _bytes_factor(unit or "B/s", text, what, BANDWIDTH_HELP, rate=True)
    return value * factor


def parse_time(text: str | int | float, what: str = "time") -> float:
    """Seconds in ``text`` ("5us", "1.5e-6s", "120ms", 0.001)."""
    value, unit = _split(text, what, TIME_HELP)
    return value / _unit(TIME_UNITS, unit or "s", text, what, TIME_HELP)


MAX_LIST_POINTS = 10_000  # a size range longer than this is refused before anything runs (sim.collective.budget)


def parse_size_list(text: str, what: str = "sizes") -> list[int]:
    """A comma list ("1MiB,4MiB") or a geometric range "START:STOP:xFACTOR" ("4KiB:64MiB:x4")."""
    text = str(text).strip()
    if ":" in text:
        parts = text.split(":")
        if len(parts) != 3 or not parts[2].lower().startswith("x"):
            raise CollsimError(f"{what}: a range is START:STOP:xFACTOR (e.g. 4KiB:64MiB:x4), got {text!r}")
        start, stop = parse_size(parts[0], what), parse_size(parts[1], what)
        try:
            factor = float(parts[2][1:])
        except ValueError:
            raise CollsimError(f"{what}: FACTOR in START:STOP:xFACTOR must be a number such as x2, got {parts[2]!r}") from None
        if start <= 0 or stop < start or not factor > 1 or not math.isfinite(factor):
            raise CollsimError(f"{what}: need 0 < START <= STOP and FACTOR > 1, got {text!r}")
        count = int(math.log(stop / start) / math.log(factor) + 1e-9) + 1
        if count > MAX_LIST_POINTS:
            least = (stop / start) ** (1 / (MAX_LIST_POINTS - 1))
            raise CollsimError(
                f"{what}: {text!r} has {count:,} points, beyond the limit of {MAX_LIST_POINTS:,}; "
                f"use a factor of at least x{least:.4g} (e.g. {parts[0]}:{parts[1]}:x2)"
            )
        sizes, size = [], float(start)
        while size <= stop * (1 + 1e-12):
            sizes.append(int(round(size)))
            size *= factor
        return sizes
    items = [item for item in text.split(",") if item.strip()]
    if not items:
        raise CollsimError(f"{what}: empty list; give a comma list (1MiB,4MiB) or a range START:STOP:xFACTOR (4KiB:64MiB:x4)")
    if len(items) > MAX_LIST_POINTS:
        raise CollsimError(f"{what}: {len(items):,} sizes, beyond the limit of {MAX_LIST_POINTS:,}")
    sizes = []
    for item in items:
        try:
            sizes.append(parse_size(item, what))
        except CollsimError as error:
            raise CollsimError(f"{error}; {what} is a comma list (1MiB,4MiB) or a range START:STOP:xFACTOR (4KiB:64MiB:x4)") from None
    return sizes


def format_size(nbytes: float) -> str:
    """Binary units for sizes, as PyTorch and nccl-tests users read them: 64 MiB."""
    for unit, factor in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if abs(nbytes) >= factor:
            return f"{nbytes / factor:.4g} {unit}"
    return f"{nbytes:.4g} B"


def format_bandwidth(bytes_per_s: float) -> str:
    for unit, factor in (("TB/s", 1e12), ("GB/s", 1e9), ("MB/s", 1e6), ("KB/s", 1e3)):
        if abs(bytes_per_s) >= factor:
            return f"{bytes_per_s / factor:.4g} {unit}"
    return f"{bytes_per_s:.4g} B/s"


def format_time(seconds: float) -> str:
    if seconds == 0:
        return "0 s"
    for unit, factor in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if abs(seconds) >= factor:
            return f"{seconds / factor:.4g} {unit}"
    return f"{seconds / 1e-9:.4g} ns"
