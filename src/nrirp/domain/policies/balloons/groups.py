"""``groupBy``: the key a container's group is named by, expanded against the container.

``${key}`` and ``$key`` are replaced by the key's value (``key`` as in match expressions:
``pod/labels/app``, ``namespace``, ...); a bare key runs to the next ``$`` or the end; ``$$`` is a
literal ``$``. A key that does not resolve leaves the container without a group to join
(``reference-balloons.md`` §3.3, same-group).
"""

from __future__ import annotations

from nrirp.domain.matching import ContainerKeys, key_value
from nrirp.domain.model import Container, Pod


def expand_group(template: str, container: Container, pod: Pod | None) -> str | None:
    """The expanded key, or ``None`` when some key does not resolve."""
    keys = ContainerKeys(container, pod)
    out: list[str] = []
    i, n = 0, len(template)
    while i < n:
        char = template[i]
        if char != "$":
            j = template.find("$", i)
            j = n if j < 0 else j
            out.append(template[i:j])
            i = j
            continue
        if template.startswith("$$", i):
            out.append("$")
            i += 2
            continue
        if template.startswith("${", i):
            end = template.find("}", i)
            if end < 0:  # refused by the config; read as a bare key
                key, i = template[i + 1 :], n
            else:
                key, i = template[i + 2 : end], end + 1
        else:
            end = template.find("$", i + 1)
            end = n if end < 0 else end
            key, i = template[i + 1 : end], end
        value = key_value(keys, key)
        if value is None:
            return None
        out.append(value)
    return "".join(out)
