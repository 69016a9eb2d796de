"""Component ids of the Parallelism page (par-...), built with :func:`webapp.ids.make`."""

from webapp.ids import URL, URL_WRITTEN, field_ids, make

__all__ = ["PATH", "PREFIX", "URL", "URL_WRITTEN", "error_id", "field_box_id", "field_id", "make"]

PATH = "/parallelism"  # the page's URL path (its Page spec, and its URL writer writes only there)
PREFIX = "par"
field_id, error_id, field_box_id = field_ids(PREFIX)  # a form field's input, its message slot, its box

SCENARIO = make(PREFIX, "scenario")  # dcc.Store: the checked scenario's dict
URL_SPEC = make(PREFIX, "url-spec")  # dcc.Store: the URL writer's spec (webapp.urlstate.url_spec)
NOTICE = make(PREFIX, "notice")
CARDS = make(PREFIX, "cards")
STEP_TIME = make(PREFIX, "step-time")
STEP_INTERVAL = make(PREFIX, "step-interval")  # the step time's 80 % interval on a preset, under it
BUBBLE = make(PREFIX, "bubble")
MEMORY = make(PREFIX, "memory")
MFU = make(PREFIX, "mfu-achieved")
TIMELINE = make(PREFIX, "timeline")
CLUSTER = make(PREFIX, "cluster")
TEACH = make(PREFIX, "teach")  # the bubble formula, TP bytes, why TP stays in a node
SWEEP_RUN = make(PREFIX, "sweep-run")
SWEEP_CANCEL = make(PREFIX, "sweep-cancel")
SWEEP_STATUS = make(PREFIX, "sweep-status")
SWEEP_TABLE = make(PREFIX, "sweep-table")
SWEEP_CHART = make(PREFIX, "sweep-chart")
