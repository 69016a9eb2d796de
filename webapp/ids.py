"""Component ids, in one place, so layouts, callbacks and browser tests agree."""

# shell
URL = "url"
PAGE = "page"
NAV = "nav"
URL_WRITTEN = "url-written"  # dcc.Store: the query a page last wrote (anything else in the URL is Back/Forward)
ROUTE_REQUEST = "route-request"  # dcc.Store: a path and query the page container must be built for
ROUTE_BUILT = "route-built"  # dcc.Store: the path and query whose page the layout already carries (app.built_route)

# collectives page: each form field has an error slot next to it (error_id(field))


def field_id(field: str, page: str = "coll") -> str:
    """A form field's input."""
    return f"{page}-{field}"


def error_id(field: str, page: str = "coll") -> str:
    """The message slot under a form field's input."""
    return f"{page}-{field}-error"


def field_box_id(field: str, page: str = "coll") -> str:
    """The box around a form field (label, input, message, hint): hidden when it does not apply."""
    return f"field-{field}" if page == "coll" else f"{page}-field-{field}"


def nav_id(page_name: str) -> str:
    """A page's link in the navigation bar."""
    return f"nav-{page_name}"


COLL_SCENARIO = "coll-scenario"  # dcc.Store: the validated scenario (dict) or None
COLL_NOTICE = "coll-notice"  # how the run was done (simulated / closed form / refused)
COLL_SUMMARY = "coll-summary"
COLL_SIM_TIME = "coll-sim-time"
COLL_INTERVAL = "coll-interval"  # the 80 % interval on a hardware preset (sim.hardware.uncertainty)
COLL_ANALYTIC_TIME = "coll-analytic-time"
COLL_CLOSED_NOTE = "coll-closed-note"  # why the closed form is approximate or missing
COLL_BREAKDOWN = "coll-breakdown"
COLL_GANTT_RANK = "coll-gantt-rank"
COLL_GANTT_LINK = "coll-gantt-link"
COLL_COLOR_BY = "coll-color-by"
COLL_CROSSOVER = "coll-crossover"
COLL_CROSSOVER_DRAWN = "coll-crossover-drawn"  # dcc.Store: the layout came with the crossover drawn (layout.first_crossover)
COLL_PLAYER_STORE = "coll-player-store"
COLL_TOPOLOGY = "coll-topology-graph"
COLL_BUFFERS = "coll-buffers-graph"
COLL_STEP = "coll-step"
COLL_STEP_LABEL = "coll-step-label"
COLL_PLAY = "coll-play"
COLL_TICK = "coll-tick"
COLL_PREV = "coll-prev"
COLL_NEXT = "coll-next"
COLL_SPEED = "coll-speed"
COLL_DOWNLOAD = "coll-download"
COLL_DL_YAML = "coll-dl-yaml"
COLL_DL_JSON = "coll-dl-json"
COLL_DL_CSV = "coll-dl-csv"
COLL_DL_TRACE = "coll-dl-trace"
COLL_DL_ERROR = "coll-dl-error"
COLL_FIGURE_PICK = "coll-figure-pick"
COLL_DL_PNG = "coll-dl-png"
COLL_DL_SVG = "coll-dl-svg"
COLL_FIGURE_DONE = "coll-figure-done"
COLL_JOB = "coll-job"  # dcc.Store: a large scenario handed to the background run (or None)
COLL_PROGRESS = "coll-progress"  # the progress box (shown while a background run is going)
COLL_PROGRESS_BAR = "coll-progress-bar"
COLL_PROGRESS_TEXT = "coll-progress-text"
COLL_CANCEL = "coll-cancel"
COLL_STOP = "coll-stop"  # dcc.Store: set (in the browser) when a new scenario must stop a running background job
COLL_CMP_FIELD = "coll-cmp-field"  # side by side: which input the second column changes
COLL_CMP_VALUE = "coll-cmp-value"  # ... and to what (empty: no second column)
COLL_CMP_TIMELINE = "coll-cmp-timeline"
COLL_CMP_PARTS = "coll-cmp-parts"
COLL_CMP_NOTE = "coll-cmp-note"
COLL_CMP_ROW = "coll-cmp-row"  # the two side-by-side graphs (hidden until a second scenario is picked)
COLL_INTRO = "coll-intro"
COLL_REL_ERROR = "coll-rel-error"  # number cards
COLL_NCCL_TIME = "coll-nccl-time"  # NCCL's model's time of the nccl_* algorithm that ran
COLL_NCCL_NOTE = "coll-nccl-note"  # what NCCL picks on how many channels; its model's time beside the DES's, and why they differ
COLL_CHUNKS_LABEL = "coll-chunks-label"  # "Chunks k", or "Channels" when an nccl_* algorithm or NCCL's pick runs
COLL_CHUNKS_HINT = "coll-chunks-hint"
COLL_MESSAGES = "coll-messages"
COLL_WIRE = "coll-wire"
COLL_BW = "coll-bw"
COLL_URL_NAMES = "coll-url-names"  # dcc.Store: the form's field names and the query's defaults (for the URL writer in assets/)

# DDP page
DDP_UPLOAD = "ddp-upload"
DDP_UPLOAD_STORE = "ddp-upload-store"
DDP_BUCKET_SLIDER = "ddp-bucket-slider"
DDP_SCENARIO = "ddp-scenario"
DDP_NOTICE = "ddp-notice"
DDP_SUMMARY = "ddp-summary"
DDP_TIMELINE = "ddp-timeline"
DDP_OVERHEAD = "ddp-overhead"
DDP_STRATEGIES = "ddp-strategies"
DDP_HARDWARE_CAPTION = "ddp-hardware-caption"  # the picked preset, what it sets, its sources
DDP_EXPLAIN = "ddp-explain"  # captions per curve, what b* assumes, why the simulated best differs
DDP_DOWNLOAD = "ddp-download"
DDP_DL_JSON = "ddp-dl-json"
DDP_DL_CSV = "ddp-dl-csv"
DDP_DL_TRACE = "ddp-dl-trace"
DDP_BUCKET_LABEL = "ddp-bucket-label"
DDP_UPLOAD_INFO = "ddp-upload-info"
DDP_INTRO = "ddp-intro"
DDP_STRATEGY_WORDS = "ddp-strategy-words"  # what naive, flat, overlap and bucketed do
DDP_COMPUTE = "ddp-compute"  # where the compute times come from (typed, or FLOPs at the MFU)
DDP_OW_USED = "ddp-ow-used"  # the o and w the results used, beside the boxes (a preset's refit)
# DDP page number cards
DDP_STEP_TIME = "ddp-step-time"
DDP_BACKWARD_END = "ddp-backward-end"
DDP_COMM_END = "ddp-comm-end"
DDP_OVERHEAD_VALUE = "ddp-overhead-value"
DDP_BUCKETS = "ddp-buckets"
DDP_BEST = "ddp-best"  # the caps within 1 % of the best overhead
DDP_BSTAR = "ddp-bstar"
# DDP page, training-step section (FSDP / ZeRO strategies)
TRAIN_SCENARIO = "ddp-train-scenario"
TRAIN_NOTICE = "ddp-train-notice"
TRAIN_SUMMARY = "ddp-train-summary"
TRAIN_TIMELINE = "ddp-train-timeline"
TRAIN_STRATEGIES = "ddp-train-strategies"
TRAIN_MEMORY = "ddp-train-memory"
TRAIN_CAPTION = "ddp-train-caption"
TRAIN_INTRO = "ddp-train-intro"
TRAIN_STEP = "ddp-train-step"
TRAIN_EXPOSED = "ddp-train-exposed"
TRAIN_COMM = "ddp-train-comm"
TRAIN_PEAK = "ddp-train-peak"
TRAIN_ACTIVATIONS = "ddp-train-activations"
TRAIN_UNITS = "ddp-train-units"

# compare page
CMP_NOTICE = "cmp-notice"
CMP_RUNS = "cmp-runs"
CMP_STAT = "cmp-stat"
CMP_FIT = "cmp-fit"
CMP_RESIDUALS = "cmp-residuals"
CMP_SIM_VS_MEASURED = "cmp-sim-vs-measured"
CMP_TABLE = "cmp-table"
CMP_DDP = "cmp-ddp"
CMP_ALGORITHM = "cmp-algorithm"
CMP_INTRO = "cmp-intro"
CMP_CARDS = "cmp-cards"
CMP_O = "cmp-o"
CMP_W = "cmp-w"
CMP_POINTS = "cmp-points"
CMP_RMS = "cmp-rms"
CMP_ERROR_TABLE = "cmp-error-table"
CMP_DDP_CONFIG = "cmp-ddp-config"
CMP_DDP_NOTE = "cmp-ddp-note"
CMP_DDP_OVERLAY = "cmp-ddp-overlay"

# Collectives page, appended (issue 36)
COLL_FORM_NOTE = "coll-form-note"  # what the page made of a link or a choice: unknown keys, an algorithm the op set, what a preset set
COLL_CROSSOVER_NOTE = "coll-crossover-note"  # the crossover's sizes not simulated here, and the button that simulates them
COLL_CROSSOVER_MORE = "coll-crossover-more"  # ... that button: the missing sizes in the background
COLL_CROSSOVER_JOB = "coll-crossover-job"  # dcc.Store: the scenario whose missing crossover sizes run in the background

# Sim vs measured page, appended (issue 33: held out by default, GPU logs beside the gloo runs)
CMP_SPLIT = "cmp-split"  # which part o and w are fitted on (the rest predicted)
CMP_SPLIT_SHOWN = "cmp-split-shown"  # the split in words: sizes / launches fitted and predicted
CMP_SCOPE = "cmp-scope"  # what the comparison shows and does not show
CMP_COVERAGE = "cmp-coverage"  # card: predicted points inside their interval
CMP_HELD_ERROR = "cmp-held-error"  # card: median |error| of the predicted points
CMP_GPU = "cmp-gpu"  # dropdown: preset and which of its nccl-tests logs is fitted
CMP_GPU_NOTE = "cmp-gpu-note"
CMP_GPU_FIG = "cmp-gpu-fig"
CMP_GPU_TABLE = "cmp-gpu-table"
