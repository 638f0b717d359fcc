"""vlasim from Python: scenarios loaded, edited, simulated; the registries; a card's graph.

    import vlasim
    s = vlasim.load("scenarios/default.yaml")     # a file, a YAML string or a dict
    s.set("workload.0.rate_hz", 40)
    r = vlasim.simulate(s, seed=1)
    r["throughput_hz"], r["latency"]["p99_s"]     # report.json's fields
    r.requests                                     # requests.csv's rows (numpy record array)

Errors in a scenario, a card or an argument raise vlasim.ConfigError (a ValueError) whose
.file, .line and .key say where. Long calls (simulate, execute, compare, compare_trace,
calibrate) release the GIL; Ctrl-C stops them and raises vlasim.Interrupted (a
KeyboardInterrupt) whose .report holds what ran. Queue, batch and partition policies written
in Python (register_queue_policy, register_batch_policy, register_partition_policy) drive the
simulator and the real runtime as the built-in ones do.
"""

import csv
import io
import json
import math
import os

import numpy as np


def _installed_data_dir():
    """P/share/vlasim of an install (the package in P/lib/python3.X/dist-packages/vlasim), or None."""
    here = os.path.dirname(os.path.abspath(__file__))
    share = os.path.normpath(os.path.join(here, "..", "..", "..", "..", "share", "vlasim"))
    return share if os.path.isdir(os.path.join(share, "cards")) else None


# An installed module takes its cards, catalog and kernel fit from its prefix, as the installed
# command does (scenarios/config/data_dir.h); VLASIM_DATA_DIR, when set, wins.
if not os.environ.get("VLASIM_DATA_DIR") and _installed_data_dir():
    os.environ["VLASIM_DATA_DIR"] = _installed_data_dir()

from . import _vlasim  # noqa: E402
from ._vlasim import ConfigError, PlacementSpec  # noqa: E402

__all__ = ["ConfigError", "Interrupted", "Report", "Scenario", "load", "simulate", "registries",
           "graph", "configure", "requests_array", "register_queue_policy", "register_batch_policy",
           "register_partition_policy", "PlacementSpec", "leaderboard", "roofline", "csv_array", "execute",
           "compare", "compare_trace", "calibrate"]


class Interrupted(KeyboardInterrupt):
    """Ctrl-C stopped a long call; .report is what it returns for what ran: a partial report
    (its "partial" says why), a comparison of what ran, or the profile of what was measured."""

    def __init__(self, report, what="simulation"):
        super().__init__(f"{what} interrupted; .report covers what ran")
        self.report = report


class Report(dict):
    """report.json as a dict, with requests.csv's rows as .requests (a numpy record array, or
    a pandas DataFrame when pandas is installed and frames=True was asked for)."""

    requests = None


class Scenario:
    """A scenario document, checked whenever it is made or changed."""

    def __init__(self, core):
        self._core = core

    @property
    def file(self):
        """The file it was read from, or "<string>" / "<dict>"."""
        return self._core.file

    @property
    def name(self):
        return self._core.name

    def set(self, key, value):
        """Sets a dotted key ("workload.0.rate_hz"; numbers index lists) to a single value.
        A change that breaks the scenario raises ConfigError and leaves it as it was."""
        self._core.set(key, _scalar_text(value, key))
        return self

    def yaml(self):
        """The document as YAML text."""
        return self._core.yaml()

    def copy(self):
        return Scenario(self._core.copy())

    def __repr__(self):
        return f"vlasim.Scenario({self.name!r} from {self.file!r})"


def _scalar_text(value, key):
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float, str, np.integer, np.floating)):
        return repr(value.item()) if isinstance(value, np.generic) else str(value)
    raise TypeError(f"{key}: a scenario key takes a number, a string or a bool, not {type(value).__name__}")


def _yaml_lines(value, indent, out):
    """Block YAML of a dict/list of scalars (strings written JSON-quoted, which YAML reads)."""
    pad = "  " * indent
    if isinstance(value, dict):
        if not value:
            out.append(pad + "{}")
        for k, v in value.items():
            if isinstance(v, (dict, list)) and v:
                out.append(f"{pad}{json.dumps(str(k))}:")
                _yaml_lines(v, indent + 1, out)
            else:
                out.append(f"{pad}{json.dumps(str(k))}: {_yaml_scalar(v)}")
    elif isinstance(value, (list, tuple)):
        if not value:
            out.append(pad + "[]")
        for v in value:
            if isinstance(v, (dict, list)) and v:
                sub = []
                _yaml_lines(v, indent + 1, sub)
                out.append(pad + "- " + sub[0].lstrip())
                out.extend(sub[1:])
            else:
                out.append(f"{pad}- {_yaml_scalar(v)}")
    else:
        out.append(pad + _yaml_scalar(value))


def _yaml_scalar(v):
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    if isinstance(v, (float, np.floating)):
        v = float(v)
        if math.isnan(v):
            return ".nan"
        if math.isinf(v):
            return ".inf" if v > 0 else "-.inf"
        return repr(v)
    if isinstance(v, dict):
        return "{}"
    if isinstance(v, (list, tuple)):
        return "[]"
    return json.dumps(str(v))


def dict_to_yaml(d):
    """The YAML text load() reads a dict as (one key a line, so errors name a useful line)."""
    if not isinstance(d, dict):
        raise TypeError(f"a scenario dict must be a dict, not {type(d).__name__}")
    out = []
    _yaml_lines(d, 0, out)
    return "\n".join(out) + "\n"


def load(source, name=None):
    """A scenario from a file path (str or os.PathLike naming a file, or ending in .yaml/.yml),
    YAML text, or a dict. `name` stands for the file in errors of text and dicts."""
    if isinstance(source, Scenario):
        return source.copy()
    if isinstance(source, dict):
        return Scenario(_vlasim.load_text(dict_to_yaml(source), name or "<dict>"))
    if isinstance(source, os.PathLike):
        return Scenario(_vlasim.load_file(os.fspath(source)))
    if not isinstance(source, str):
        raise TypeError(f"load() takes a path, YAML text or a dict, not {type(source).__name__}")
    if "\n" not in source and (source.endswith((".yaml", ".yml")) or os.path.isfile(source)):
        return Scenario(_vlasim.load_file(source))
    return Scenario(_vlasim.load_text(source, name or "<string>"))


_INT_FIELDS = {"request": np.int64, "cut": np.int64}
_STR_FIELDS = {"model", "stream"}
_BOOL_FIELDS = {"met"}


def requests_array(csv_text):
    """requests.csv's text as a numpy record array of the same columns: request and cut
    integers (cut -1 where empty), model and stream strings, met bool, the rest float64
    seconds (NaN where empty)."""
    rows = list(csv.reader(io.StringIO(csv_text)))
    header, body = rows[0], rows[1:]
    cols = list(zip(*body)) if body else [() for _ in header]
    arrays = []
    for name, col in zip(header, cols):
        if name in _STR_FIELDS:
            arrays.append(np.array(col, dtype=str) if col else np.array([], dtype="U1"))
        elif name in _BOOL_FIELDS:
            arrays.append(np.array([c == "1" for c in col], dtype=bool))
        elif name in _INT_FIELDS:
            arrays.append(np.array([int(c) if c else -1 for c in col], dtype=np.int64))
        else:
            arrays.append(np.array([float(c) if c else math.nan for c in col], dtype=np.float64))
    return np.rec.fromarrays(arrays, names=header)


def _as_frame(rec, frames):
    if not frames:
        return rec
    try:
        import pandas
    except ImportError:
        return rec
    return pandas.DataFrame.from_records(rec)


def simulate(scenario, seed=None, max_wall_s=0, trace_limit=20000, requests=True, frames=False):
    """Simulates a scenario (a Scenario, or what load() takes) as `vlasim simulate` does and
    returns its Report: report.json's fields, with .requests (requests.csv's rows). The GIL is
    released while it runs. Ctrl-C stops it and raises Interrupted carrying the partial
    report; max_wall_s > 0 stops it after that many seconds with a partial report (its
    "partial" says why). requests=False leaves .requests None (faster for long runs);
    frames=True gives it as a pandas DataFrame where pandas is installed."""
    sc = scenario if isinstance(scenario, Scenario) else load(scenario)
    out = _vlasim.simulate(sc._core, -1 if seed is None else int(seed), float(max_wall_s), int(trace_limit),
                           bool(requests))
    report = Report(json.loads(out.report_json))
    if requests:
        report.requests = _as_frame(requests_array(out.requests_csv), frames)
    if out.interrupted:
        raise Interrupted(report)
    return report


def execute(scenario, seed=None, executor="onednn", warmup=2, max_wall_s=0, requests=True, frames=False):
    """Runs a scenario's workload for real on this machine's executors, as `vlasim execute`
    does, and returns its Report (mode "execute"; the same fields as simulate's), with
    .requests, .devices (each unit's executor) and .failed / .first_error (requests whose
    executor failed). The GIL is released; Ctrl-C stops it and raises Interrupted with the
    partial report; max_wall_s > 0 stops it after that many seconds."""
    sc = scenario if isinstance(scenario, Scenario) else load(scenario)
    out = _vlasim.execute(sc._core, -1 if seed is None else int(seed), str(executor), int(warmup),
                          float(max_wall_s), bool(requests))
    report = Report(json.loads(out.report_json))
    if requests:
        report.requests = _as_frame(requests_array(out.requests_csv), frames)
    report.devices, report.failed, report.first_error = list(out.devices), out.failed, out.first_error
    if out.interrupted:
        raise Interrupted(report)
    return report


def _comparison(files, frames):
    """A comparison's files (`vlasim compare -o`'s text files by path) as compare() returns it."""
    result = json.loads(files["compare.json"])
    result["markdown"] = files["compare.md"]
    for mode, key in (("simulate", "predicted"), ("execute", "measured")):
        if mode + "/report.json" not in files:
            continue
        report = Report(json.loads(files[mode + "/report.json"]))
        report.requests = _as_frame(requests_array(files[mode + "/requests.csv"]), frames)
        result[key] = report
        for section in ("streams", "control"):
            if f"{mode}/{section}.csv" in files:
                result.setdefault(section, {})[mode] = _as_frame(csv_array(files[f"{mode}/{section}.csv"]), frames)
    if "drift.json" in files:
        result["drift"] = json.loads(files["drift.json"])
    result["files"] = dict(files)
    return result


def compare_trace(scenario, trace, inference="", margin=0.10, seed=None, frames=False):
    """`vlasim compare --trace`: the scenario's first model predicted beside a PyTorch profiler
    trace (.json or .json.gz; one inference per `inference` record_function range, found when
    ""): compare.json as a dict, with "markdown" (compare.md: it begins with what the measured
    side is), "predicted" (the prediction's Report, with .requests) and "files" (the text files
    `vlasim compare --trace -o` writes, by path). The GIL is released; Ctrl-C stops the
    prediction and raises Interrupted whose .report is the comparison of what it ran."""
    sc = scenario if isinstance(scenario, Scenario) else load(scenario)
    out = _vlasim.compare_trace(sc._core, os.fspath(trace), inference, float(margin), -1 if seed is None else int(seed))
    result = _comparison(out.files, frames)
    if out.interrupted:
        raise Interrupted(result, "comparison")
    return result


def compare(scenario, seed=None, executor="onednn", warmup=2, margin=0.10, max_wall_s=0, frames=False):
    """`vlasim compare`: the scenario simulated, then run for real here, and the two compared;
    what `vlasim compare -o` writes, as data. Returns compare.json as a dict, with
      "markdown": compare.md (the end-to-end, per-stage and per-op-kind tables, the KS and
        TOST verdicts, then the control, streaming, drift and co-run sections);
      "predicted" / "measured": each run's Report (report.json), with .requests;
      "drift": drift.json (the machine's speed over the run, the service-time sensitivity,
        the co-run slowdowns);
      "streams" / "control": {"simulate": rows, "execute": rows} of streams.csv / control.csv
        (record arrays), only where the scenario has streaming or control streams;
      "files": every text file the command writes (plots and trace.json aside), by path.
    The GIL is released; Ctrl-C during the real run raises Interrupted whose .report is the
    comparison of what ran; max_wall_s > 0 stops the real run after that many seconds."""
    sc = scenario if isinstance(scenario, Scenario) else load(scenario)
    out = _vlasim.compare(sc._core, -1 if seed is None else int(seed), str(executor), int(warmup), float(margin),
                          float(max_wall_s))
    result = _comparison(out.files, frames)
    if out.interrupted:
        raise Interrupted(result, "comparison")
    return result


def calibrate(scenarios=(), out="profile.json", device="epyc-2vcpu", grid="quick", reps=5, threads=None,
              dtypes=None, in_context=False, args=(), quiet=True):
    """`vlasim calibrate`: operators profiled on this machine's executor into the device profile
    `out` (the scenarios' every op shape, and the shape grid `grid`: none, quick or full), run
    by the command's own code; `args` adds any other of its options (e.g. ["--base", P]).
    Returns the profile as a dict. The GIL is released; Ctrl-C stops it before the next
    measurement and raises Interrupted whose .report is the profile of what was measured (the
    sections so far, no host entry or in-context pass), which `out` then holds too."""
    argv = [os.fspath(s) for s in ([scenarios] if isinstance(scenarios, (str, os.PathLike)) else scenarios)]
    argv += ["-o", os.fspath(out), "--device", device, "--grid", grid, "--reps", str(int(reps))]
    if threads:
        argv += ["--threads", ",".join(str(int(n)) for n in threads)]
    if dtypes:
        argv += ["--dtypes", ",".join(dtypes)]
    if in_context:
        argv.append("--in-context")
    if quiet:
        argv.append("-q")
    argv += [str(a) for a in args]
    status, interrupted = _vlasim.calibrate_command(argv)
    if status != 0 and not interrupted:
        raise RuntimeError(f"vlasim calibrate exited with status {status}")
    with open(out) as f:
        profile = json.load(f)
    if interrupted:
        raise Interrupted(profile, "calibration")
    return profile


def registries():
    """Every registry by family (cost_models, stacks, gpu_sharing, queue_policies, ...): a list of
    {name, description, params: [{name, default (None: required), description}]}; also the
    graph passes and the model cards' names."""
    return _vlasim.registries()


def graph(card, views=0, prompt=-1, chunk=0, steps=0, batch=0, dtype="", frames=False):
    """A card's operator graph at its defaults (or the given shape): totals, and .ops one row per
    op (name, kind, fn, stage, component, step, block, m, n, k, heads, q_len, kv_len, rows,
    width, flops, bytes_read, bytes_written, weight_bytes) as a numpy record array."""
    g = _vlasim.graph(card, views, prompt, chunk, steps, batch, dtype)
    ops = g.pop("ops")
    names = list(ops)
    g["ops"] = _as_frame(np.rec.fromarrays([np.asarray(ops[n]) for n in names], names=names), frames)
    return g


def configure(catalog=None, cards=None, profile=None):
    """The hardware catalog and cards folders, and a device profile replacing every scenario's
    cost model (the command's --catalog, --cards, --profile); None keeps the folder, and no
    profile."""
    _vlasim.configure(catalog or "", cards or "", profile or "")


_policies = {}  # name -> factory: kept alive here while the C++ registry refers to it


def register_queue_policy(name, policy, description=""):
    """Registers a queue policy written in Python under `name`, which a scenario's
    `policies: {queue: NAME}` then selects, in the simulator as in the real runtime.

    `policy` is a class, made afresh for every run (its state is the run's), whose
    pick(view) returns an index into view.queue; or a function pick(view) (stateless).
    `view` (read-only): now (s), unit, busy_fraction, queue (WorkItems in arrival order at the
    unit: request, model, plan, stream, segment, kind, arrival, ready, deadline, estimate,
    batch, sms). An exception in pick, or a pick that is not an index into the queue, stops
    the run and is raised by simulate(). A built-in policy's name is refused (ValueError)."""
    if isinstance(policy, type):
        def factory():
            return policy().pick
    elif callable(policy):
        def factory():
            return policy
    else:
        raise TypeError(f"a queue policy is a class with pick(view) or a function, not {type(policy).__name__}")
    _vlasim.register_queue_policy(name, factory, _first_line(policy, description))
    _policies["queue " + name] = factory


def _param_list(params):
    """A policy's declared parameters, {name: description} or {name: (description, default)},
    as (name, description, default text) triples."""
    out = []
    for name, spec in (params or {}).items():
        description, default = (spec if isinstance(spec, (tuple, list)) else (spec, ""))
        out.append((str(name), str(description), "" if default is None else str(default)))
    return out


def _first_line(policy, description):
    return description or (policy.__doc__ or "").strip().split("\n")[0]


def register_batch_policy(name, policy, description="", params=None):
    """Registers a batching policy written in Python under `name`, which a scenario's
    `policies: {batching: NAME}` (or `{name: NAME, params: {...}}`) then selects, in the
    simulator as in the real runtime (scheduler/policy.h BatchPolicy).

    `policy` is a class, made with the scenario's params as keyword arguments whenever a
    scenario is loaded or run (its state is the run's), with
      form(view, lead, max_batch): the batch a free unit runs around view.queue[lead] (the
        item the queue policy picked): a list of indices into view.queue, the lead first, at
        most max_batch, every item of the lead's plan and kind (WorkItem.kind, or .segment
        where kind is -1); or (indices, size) to run it at `size` (padding included);
      and optionally (attributes or methods; C++'s defaults otherwise):
        sizes(max_batch): the increasing batch sizes form may run at, what a plan costs
          (default 1, 2, 4, ... below max_batch, and max_batch: dynamic's); a list alone
          runs at the smallest of them that holds it;
        default_size: the batch size of units that declare none (default 1);
        per_step: True schedules the action expert step by step (continuous batching);
        step_overhead_seconds: host seconds before each such step (default 0).
    Or a function form(view, lead, max_batch) (no parameters, the defaults).
    `params`: the parameters the scenario may give, {name: description} or {name:
    (description, default)}. An exception in the policy, or a batch form may not return (an
    index outside the queue, twice, an item of another plan or kind, more than max_batch, a
    size not in sizes), stops the run and is raised by the call. A built-in name is refused."""
    if isinstance(policy, type):
        def factory(p):
            return policy(**p)
    elif callable(policy):
        form = policy

        class _Form:
            pass

        def factory(p):
            f = _Form()
            f.form = form
            return f
    else:
        raise TypeError(f"a batch policy is a class with form(view, lead, max_batch) or a function, not "
                        f"{type(policy).__name__}")
    _vlasim.register_batch_policy(name, factory, _first_line(policy, description), _param_list(params))
    _policies["batch " + name] = factory


def register_partition_policy(name, policy, description="", params=None):
    """Registers a partition policy written in Python under `name`, which a model's
    `partition: {name: NAME, params: {...}}` then selects, in the simulator as in the real
    runtime (scheduler/partition.h PartitionPolicy).

    `policy` is a class, made with the partition's params as keyword arguments, with
      stage: the stage it cuts ("vision", "prefix", "action", "decode"; attribute or method);
      cut: the blocks before its cut (attribute or method);
      rules_at(blocks, cut): the placement of a model whose cut stage has `blocks` blocks, cut
        after block `cut` (its own, or a dynamic zone's candidate): a list of
        vlasim.PlacementSpec(stage, device, first_block=-1, last_block=-1), later rules
        overriding earlier ones; raises ValueError when the cut does not fit (the scenario's
        ConfigError at its partition).
    Devices are "dev" or "dev.unit"; params named `first` and `second` are checked as
    devices when the scenario is loaded, as block_split's are. `params` declares what the
    scenario may give, as for register_batch_policy. Any other exception is raised by the
    call that planned the scenario. A built-in name is refused."""
    if not isinstance(policy, type):
        raise TypeError(f"a partition policy is a class with stage, cut and rules_at(blocks, cut), not "
                        f"{type(policy).__name__}")

    def factory(p):
        return policy(**p)
    _vlasim.register_partition_policy(name, factory, _first_line(policy, description), _param_list(params))
    _policies["partition " + name] = factory


def csv_array(csv_text):
    """A CSV's text (header first) as a numpy record array: a column of whole numbers int64, of
    numbers float64 (NaN where empty), else strings."""
    rows = list(csv.reader(io.StringIO(csv_text)))
    header, body = rows[0], rows[1:]
    cols = list(zip(*body)) if body else [() for _ in header]
    arrays = []
    for col in cols:
        arrays.append(_column(col))
    return np.rec.fromarrays(arrays, names=header) if header else np.rec.array([])


def _column(col):
    try:
        return np.array([int(c) for c in col], dtype=np.int64)
    except ValueError:
        pass
    try:
        return np.array([float(c) if c else math.nan for c in col], dtype=np.float64)
    except ValueError:
        return np.array(col, dtype=str)


def _model_args(model, views, prompt, chunk, steps, batch, dtype, cost_model, stack):
    return dict(model=model or "", views=views, prompt=prompt, chunk=chunk, steps=steps, batch=batch,
                dtype=dtype or "", cost_model=cost_model or "", stack=stack or "")


def leaderboard(what, devices=None, min_hz=10, lifetime_years=3, utilisation=0.5, usd_per_kwh=0.15,
                idle_fraction=0.3, model=None, views=0, prompt=-1, chunk=0, steps=0, batch=0, dtype=None,
                cost_model=None, stack=None, frames=False):
    """`vlasim leaderboard`: a card (or a model of a scenario file, `model`) predicted on each
    catalog GPU (or `devices`): {"rows": leaderboard.csv's rows as a record array, "csv",
    "markdown"}. The shape arguments are the command's options (0 / -1: the default)."""
    out = _vlasim.leaderboard(os.fspath(what), devices=list(devices or []), min_hz=min_hz,
                              lifetime_years=lifetime_years, utilisation=utilisation, usd_per_kwh=usd_per_kwh,
                              idle_fraction=idle_fraction,
                              **_model_args(model, views, prompt, chunk, steps, batch, dtype, cost_model, stack))
    out["rows"] = _as_frame(csv_array(out["csv"]), frames)
    return out


def roofline(what, device=None, model=None, views=0, prompt=-1, chunk=0, steps=0, batch=0, dtype=None,
             cost_model=None, stack=None, frames=False):
    """`vlasim roofline`: a card alone on `device` (or a scenario file as it is) per device,
    stage and operator class: {"rows": roofline.csv's rows as a record array, "csv", "markdown"}."""
    out = _vlasim.roofline(os.fspath(what), device=device or "",
                           **_model_args(model, views, prompt, chunk, steps, batch, dtype, cost_model, stack))
    out["rows"] = _as_frame(csv_array(out["csv"]), frames)
    return out
