"""Text from outside, made safe for a person's terminal.

Names that ragtrace prints come from outside: app and evaluator names, session ids, file
names, stream names, the text of a request. A control character in one (an ``ESC [ 31 m``
colour, an ``ESC ] 52`` clipboard write, a ``\\r`` that overwrites the line, a C1 ``CSI``)
would reach the terminal of whoever runs ``ragtrace review``, ``ragtrace report`` or ``ragtrace
eval``. ``printable`` writes each C0 and C1 control character (and DEL) as a visible ``\\xNN``
escape instead, keeping only those the layout asks for (``keep="\\n"`` for a multi-line table)::

    out.write(printable(f"app {item.app}  session {item.session_id}\\n", keep="\\n"))
"""

from __future__ import annotations

import re

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def printable(text: object, keep: str = "") -> str:
    """``text`` with every C0/C1 control character and DEL written ``\\xNN``, but those in
    ``keep`` (``"\\n"``, ``"\\n\\t"``: the ones the printed layout itself uses)."""
    value = text if isinstance(text, str) else str(text)
    return _CONTROL.sub(lambda m: m[0] if m[0] in keep else f"\\x{ord(m[0]):02x}", value)
