"""The inputs of ``collsim sim hang`` as :class:`sim.fields.FieldInfo` entries, registered as
the "hang" field table (``sim.fields.fields_of("hang")``): the command builds its options from
them with :func:`sim.cli_fields.field_option`, and an explorer page's form takes labels, help,
units and bounds from the same entries."""

from __future__ import annotations

import functools

from sim.fields import FieldInfo, register

__all__ = ["FIELDS"]

_CALL = "call: its index in the rank's program, from 0"
F = functools.partial(FieldInfo, commands=("hang",))  # every input is a flag of collsim sim hang
FIELDS: dict[str, FieldInfo] = {
    info.name: info
    for info in (
        F(
            "timeout_s",
            "Process-group timeout",
            "how long a rank waits in a call before NCCL's watchdog or gloo gives up (init_process_group's or new_group's timeout; torch's default: 600 s NCCL, 1800 s gloo)",
            short="timeout",
            unit="s",
            low=1e-3,
            high=1e7,
            kind="float",
        ),
        F("skip", "Skip a call", f"RANK:CALL: that rank skips that call ({_CALL})", kind="repeated"),
        F("resize", "Resize a call", "RANK:CALL:COUNT: that call has COUNT elements on that rank", kind="repeated"),
        F(
            "dtype",
            "Change a dtype",
            "RANK:CALL:DTYPE: that call has another dtype on that rank (float32, float16, bfloat16, float64, int64, int32, uint8)",
            kind="repeated",
        ),
        F("swap", "Swap two calls", "RANK:CALL:CALL: that rank issues the two calls in the other order", kind="repeated"),
        F("dies", "A rank dies", "RANK:CALL, or RANK:TIME into a DDP step (e.g. 1:50ms): that rank's process exits there", kind="repeated"),
        F(
            "stalls",
            "A rank stalls",
            "RANK:CALL, or RANK:TIME into a DDP step: that rank stops issuing calls there, for ever",
            kind="repeated",
        ),
        F(
            "unused_param",
            "Unused parameter",
            "RANK:NAME (a DDP step): that parameter gets no gradient on that rank",
            short="unused-param",
            kind="repeated",
        ),
    )
}
del F

register("hang", "sim.hang.programs", "Programs", FIELDS)
