"""Component ids of the Collectives page (coll-...), built with :func:`webapp.ids.make`; the
shell's URL ids it writes to come from :mod:`webapp.ids`."""

from webapp.ids import URL, URL_WRITTEN, field_ids, make

__all__ = ["PATH", "PREFIX", "URL", "URL_WRITTEN", "error_id", "field_box_id", "field_id", "make"]

PATH = "/"  # the page's URL path (its Page spec, and its URL writer writes only there)
PREFIX = "coll"
field_id, error_id, field_box_id = field_ids(PREFIX)  # a form field's input, its message slot, its box

COLL_SCENARIO = make(PREFIX, "scenario")  # dcc.Store: the validated scenario (dict) or None
COLL_NOTICE = make(PREFIX, "notice")  # how the run was done (simulated / closed form / refused)
COLL_SUMMARY = make(PREFIX, "summary")
COLL_SIM_TIME = make(PREFIX, "sim-time")
COLL_INTERVAL = make(PREFIX, "interval")  # the 80 % interval on a hardware preset (sim.hardware.uncertainty)
COLL_ANALYTIC_TIME = make(PREFIX, "analytic-time")
COLL_CLOSED_NOTE = make(PREFIX, "closed-note")  # why the closed form is approximate or missing
COLL_BREAKDOWN = make(PREFIX, "breakdown")
COLL_GANTT_RANK = make(PREFIX, "gantt-rank")
COLL_GANTT_LINK = make(PREFIX, "gantt-link")
COLL_COLOR_BY = make(PREFIX, "color-by")
COLL_CROSSOVER = make(PREFIX, "crossover")
COLL_CROSSOVER_DRAWN = make(PREFIX, "crossover-drawn")  # dcc.Store: the layout came with the crossover drawn (layout.first_crossover)
COLL_PLAYER_STORE = make(PREFIX, "player-store")
COLL_TOPOLOGY = make(PREFIX, "topology-graph")
COLL_BUFFERS = make(PREFIX, "buffers-graph")
COLL_STEP = make(PREFIX, "step")
COLL_STEP_LABEL = make(PREFIX, "step-label")
COLL_PLAY = make(PREFIX, "play")
COLL_TICK = make(PREFIX, "tick")
COLL_PREV = make(PREFIX, "prev")
COLL_NEXT = make(PREFIX, "next")
COLL_SPEED = make(PREFIX, "speed")
COLL_DOWNLOAD = make(PREFIX, "download")
COLL_DL_YAML = make(PREFIX, "dl-yaml")
COLL_DL_JSON = make(PREFIX, "dl-json")
COLL_DL_CSV = make(PREFIX, "dl-csv")
COLL_DL_TRACE = make(PREFIX, "dl-trace")
COLL_DL_ERROR = make(PREFIX, "dl-error")
COLL_FIGURE_PICK = make(PREFIX, "figure-pick")
COLL_DL_PNG = make(PREFIX, "dl-png")
COLL_DL_SVG = make(PREFIX, "dl-svg")
COLL_FIGURE_DONE = make(PREFIX, "figure-done")
COLL_JOB = make(PREFIX, "job")  # dcc.Store: a large scenario handed to the background run (or None)
COLL_PROGRESS = make(PREFIX, "progress")  # the progress box (shown while a background run is going)
COLL_PROGRESS_BAR = make(PREFIX, "progress-bar")
COLL_PROGRESS_TEXT = make(PREFIX, "progress-text")
COLL_CANCEL = make(PREFIX, "cancel")
COLL_STOP = make(PREFIX, "stop")  # dcc.Store: set (in the browser) when a new scenario must stop a running background job
COLL_CMP_FIELD = make(PREFIX, "cmp-field")  # side by side: which input the second column changes
COLL_CMP_VALUE = make(PREFIX, "cmp-value")  # ... and to what (empty: no second column)
COLL_CMP_TIMELINE = make(PREFIX, "cmp-timeline")
COLL_CMP_PARTS = make(PREFIX, "cmp-parts")
COLL_CMP_NOTE = make(PREFIX, "cmp-note")
COLL_CMP_ROW = make(PREFIX, "cmp-row")  # the two side-by-side graphs (hidden until a second scenario is picked)
COLL_INTRO = make(PREFIX, "intro")
COLL_REL_ERROR = make(PREFIX, "rel-error")  # number cards
COLL_NCCL_TIME = make(PREFIX, "nccl-time")  # NCCL's model's time of the nccl_* algorithm that ran
COLL_NCCL_NOTE = make(PREFIX, "nccl-note")  # what NCCL picks on how many channels; its model's time beside the DES's, and why they differ
COLL_CHUNKS_LABEL = make(PREFIX, "chunks-label")  # "Chunks k", or "Channels" when an nccl_* algorithm or NCCL's pick runs
COLL_CHUNKS_HINT = make(PREFIX, "chunks-hint")
COLL_MESSAGES = make(PREFIX, "messages")
COLL_WIRE = make(PREFIX, "wire")
COLL_BW = make(PREFIX, "bw")
COLL_URL_NAMES = make(PREFIX, "url-names")  # dcc.Store: the form's field names and the query's defaults (for the URL writer in assets/)
COLL_FORM_NOTE = make(
    PREFIX, "form-note"
)  # what the page made of a link or a choice: unknown keys, an algorithm the op set, what a preset set
COLL_CROSSOVER_NOTE = make(PREFIX, "crossover-note")  # the crossover's sizes not simulated here, and the button that simulates them
COLL_CROSSOVER_MORE = make(PREFIX, "crossover-more")  # ... that button: the missing sizes in the background
COLL_CROSSOVER_JOB = make(PREFIX, "crossover-job")  # dcc.Store: the scenario whose missing crossover sizes run in the background
