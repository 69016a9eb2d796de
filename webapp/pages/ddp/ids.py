"""Component ids of the DDP buckets page (ddp-...), built with :func:`webapp.ids.make`; the
shell's URL ids it writes to come from :mod:`webapp.ids`."""

from webapp.ids import URL, URL_WRITTEN, field_ids, make

__all__ = ["PATH", "PREFIX", "URL", "URL_WRITTEN", "error_id", "field_box_id", "field_id", "make"]

PATH = "/ddp"  # the page's URL path (its Page spec, and its URL writer writes only there)
PREFIX = "ddp"
field_id, error_id, field_box_id = field_ids(PREFIX)  # a form field's input, its message slot, its box

DDP_UPLOAD = make(PREFIX, "upload")
DDP_UPLOAD_STORE = make(PREFIX, "upload-store")
DDP_BUCKET_SLIDER = make(PREFIX, "bucket-slider")
DDP_SCENARIO = make(PREFIX, "scenario")
DDP_NOTICE = make(PREFIX, "notice")
DDP_SUMMARY = make(PREFIX, "summary")
DDP_TIMELINE = make(PREFIX, "timeline")
DDP_OVERHEAD = make(PREFIX, "overhead")
DDP_STRATEGIES = make(PREFIX, "strategies")
DDP_HARDWARE_CAPTION = make(PREFIX, "hardware-caption")  # the picked preset, what it sets, its sources
DDP_EXPLAIN = make(PREFIX, "explain")  # captions per curve, what b* assumes, why the simulated best differs
DDP_DOWNLOAD = make(PREFIX, "download")
DDP_DL_JSON = make(PREFIX, "dl-json")
DDP_DL_CSV = make(PREFIX, "dl-csv")
DDP_DL_TRACE = make(PREFIX, "dl-trace")
DDP_BUCKET_LABEL = make(PREFIX, "bucket-label")
DDP_UPLOAD_INFO = make(PREFIX, "upload-info")
DDP_INTRO = make(PREFIX, "intro")
DDP_STRATEGY_WORDS = make(PREFIX, "strategy-words")  # what naive, flat, overlap and bucketed do
DDP_COMPUTE = make(PREFIX, "compute")  # where the compute times come from (typed, or FLOPs at the MFU)
DDP_OW_USED = make(PREFIX, "ow-used")  # the o and w the results used, beside the boxes (a preset's refit)
DDP_STEP_TIME = make(PREFIX, "step-time")
DDP_BACKWARD_END = make(PREFIX, "backward-end")
DDP_COMM_END = make(PREFIX, "comm-end")
DDP_OVERHEAD_VALUE = make(PREFIX, "overhead-value")
DDP_BUCKETS = make(PREFIX, "buckets")
DDP_BEST = make(PREFIX, "best")  # the caps within 1 % of the best overhead
DDP_BSTAR = make(PREFIX, "bstar")
TRAIN_SCENARIO = make(PREFIX, "train-scenario")
TRAIN_NOTICE = make(PREFIX, "train-notice")
TRAIN_SUMMARY = make(PREFIX, "train-summary")
TRAIN_TIMELINE = make(PREFIX, "train-timeline")
TRAIN_STRATEGIES = make(PREFIX, "train-strategies")
TRAIN_MEMORY = make(PREFIX, "train-memory")
TRAIN_CAPTION = make(PREFIX, "train-caption")
TRAIN_INTRO = make(PREFIX, "train-intro")
TRAIN_STEP = make(PREFIX, "train-step")
TRAIN_EXPOSED = make(PREFIX, "train-exposed")
TRAIN_COMM = make(PREFIX, "train-comm")
TRAIN_PEAK = make(PREFIX, "train-peak")
TRAIN_ACTIVATIONS = make(PREFIX, "train-activations")
TRAIN_UNITS = make(PREFIX, "train-units")
DDP_URL_SPEC = make(PREFIX, "url-spec")  # dcc.Store: the URL writer's spec (webapp.urlstate.url_spec)
