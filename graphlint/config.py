"""Effective options: command-line flags over graphlint.toml / [tool.graphlint], over defaults.

The configuration file is found by walking up from the first model's folder (then from the
working directory): in each folder ``graphlint.toml`` or ``.graphlint.toml`` wins, then a
``pyproject.toml`` that has a ``[tool.graphlint]`` table. ``--config FILE`` names it
explicitly. Paths in the file (baseline, suppressions, model globs) are relative to the
file's folder. Every key is checked: an unknown key is an error naming the closest valid
one. ``graphlint config`` prints the effective values and where each came from.

    [tool.graphlint]
    target = ["trt@10.15"]
    select = ["GL0", "GL1", "drift"]
    ignore = ["GL0004"]
    fail-level = "warning"
    baseline = "graphlint-baseline.json"
    suppressions = "graphlint-suppressions.toml"
    source-root = "."

    [tool.graphlint.severity]
    GL0003 = "error"

    [tool.graphlint.target-options.trt]
    pad-multiple = 16

    [tool.graphlint.shapes]
    "models/bert*.onnx" = ["input_ids:1x1,8x128,16x512"]
"""

from __future__ import annotations

import copy
import dataclasses
import difflib
import fnmatch
import json
import os
import subprocess
from dataclasses import dataclass, field
from typing import Any

from graphlint.errors import UsageError
from graphlint.fsutil import read_toml
from graphlint.lint import LintOptions
from graphlint.registry import find_rule, load_rules, rule_matches
from graphlint.registry import select as select_rules
from graphlint.rule import Severity
from graphlint.shapes_spec import Profile, parse_profiles
from graphlint.target import Target

CONFIG_NAMES = ("graphlint.toml", ".graphlint.toml", "pyproject.toml")
SUPPRESSIONS_NAME = "graphlint-suppressions.toml"

# Top-level keys and the type each must have ("list" accepts a single string too).
TOP_KEYS: dict[str, str] = {
    "target": "list",
    "select": "list",
    "ignore": "list",
    "severity": "table",
    "fail-level": "str",
    "baseline": "str",
    "suppressions": "str",
    "suppress": "array",
    "target-options": "table",
    "shapes": "table",
    "source-root": "str",
    "pipeline": "tables",  # a deployment folder's stages and edges (graphlint.pipeline.detect reads it)
    "confirm": "table",  # --confirm's settings (graphlint.confirm.options)
}
ALIASES = {"targets": "target"}
SUPPRESS_KEYS = {"model": "str", "rule": "str", "node": "str", "target": "str", "reason": "str"}


def repo_root(explicit: str | None) -> str:
    if explicit:
        return explicit
    try:
        out = subprocess.run(["git", "rev-parse", "--show-toplevel"], capture_output=True, text=True, timeout=5)
        if out.returncode == 0 and out.stdout.strip():
            return out.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        pass
    return os.getcwd()


# --------------------------------------------------------------------------- discovery

def _table_of(path: str, doc: dict[str, Any]) -> tuple[dict[str, Any] | None, str]:
    """The graphlint table of a config document and how to name it in messages."""
    if os.path.basename(path) == "pyproject.toml":
        tool = doc.get("tool", {})
        return (tool.get("graphlint") if isinstance(tool, dict) else None), "tool.graphlint"
    return doc, ""


def find_config(start_dirs: list[str]) -> str | None:
    """The nearest configuration file above any of ``start_dirs`` (tried in order)."""
    for start in start_dirs:
        folder = os.path.abspath(start)
        while True:
            for name in CONFIG_NAMES:
                path = os.path.join(folder, name)
                if os.path.isfile(path):
                    if name != "pyproject.toml":
                        return path
                    table, _ = _table_of(path, read_toml(path))
                    if table is not None:
                        return path
            parent = os.path.dirname(folder)
            if parent == folder:
                break
            folder = parent
    return None


# --------------------------------------------------------------------------- validation

def _suggest(key: str, valid: list[str], otherwise: str = "") -> str:
    close = difflib.get_close_matches(key, valid, n=1, cutoff=0.5)
    if close:
        return f" (did you mean {close[0]!r}?)"
    return f" ({otherwise})" if otherwise else f" (valid keys: {', '.join(sorted(valid))})"


def _rule_words() -> list[str]:
    """Everything a rule selector may name: ids, names, families."""
    rules = load_rules()
    return [r.id for r in rules] + [r.name for r in rules] + sorted({r.family_name() for r in rules})


SEE_RULES = "see 'graphlint rules'"


def _norm_key(key: str) -> str:
    return key.replace("_", "-")


def _check_type(where: str, value: Any, kind: str) -> Any:
    if kind == "list":
        if isinstance(value, str):
            return [value]
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise UsageError(f"{where}: expected a string or a list of strings")
        return value
    if kind == "str" and not isinstance(value, str):
        raise UsageError(f"{where}: expected a string")
    if kind == "table" and not isinstance(value, dict):
        raise UsageError(f"{where}: expected a table")
    if kind == "tables" and not (isinstance(value, dict) or (
            isinstance(value, list) and all(isinstance(v, dict) for v in value))):
        raise UsageError(f"{where}: expected a table ([...]) or an array of tables ([[...]])")
    if kind == "array" and not (isinstance(value, list) and all(isinstance(v, dict) for v in value)):
        raise UsageError(f"{where}: expected an array of tables ([[...]])")
    return value


def _target_option_types() -> dict[str, type]:
    """Option names (kebab-case) that target profiles define, with the type of their values."""
    from graphlint.target import _profiles

    types: dict[str, type] = {}
    for profiles in _profiles().values():
        for prof in profiles:
            tables = [prof.get("options", {}), *prof.get("devices", {}).values()]
            for table in tables:
                for k, v in table.items():
                    types.setdefault(_norm_key(k), type(v))
    return types


@dataclass
class Suppression:
    """Silence findings of ``rule`` on nodes matching ``node`` in models matching ``model``."""

    rule: str  # rule id, id prefix or name; "*" for every rule
    reason: str
    model: str = "*"  # glob, relative to ``base``
    node: str = "*"  # glob over the node's name (or the value's name)
    target: str = "*"  # target name glob: trt, ort, openvino
    base: str = "."  # folder the model glob is relative to
    origin: str = ""  # file (and entry number) it came from, for messages
    used: int = 0


def parse_suppressions(entries: list[Any], origin: str, base: str) -> list[Suppression]:
    """Validate ``[[suppress]]`` entries: unknown keys and a missing reason are errors."""
    known = _rule_words()
    out = []
    for i, entry in enumerate(entries, 1):
        where = f"{origin}: suppress entry {i}"
        if not isinstance(entry, dict):
            raise UsageError(f"{where}: expected a table")
        fields: dict[str, str] = {}
        for key, value in entry.items():
            k = _norm_key(key)
            if k not in SUPPRESS_KEYS:
                raise UsageError(f"{where}: unknown key {key!r}{_suggest(k, list(SUPPRESS_KEYS))}")
            fields[k] = _check_type(f"{where}: {key}", value, "str").strip()
        if not fields.get("rule"):
            raise UsageError(f"{where}: 'rule' is required (a rule id such as GL1001, or '*')")
        if not fields.get("reason"):
            raise UsageError(f"{where}: 'reason' is required: say why this finding is acceptable")
        rule = fields["rule"]
        if not any(rule_matches(r, rule) for r in load_rules()):
            raise UsageError(f"{where}: rule {rule!r} matches no installed rule{_suggest(rule, known, SEE_RULES)}")
        out.append(Suppression(rule=rule, reason=fields["reason"], model=fields.get("model", "*"),
                               node=fields.get("node", "*"), target=fields.get("target", "*"),
                               base=base, origin=f"{origin} #{i}"))
    return out


def load_suppression_file(path: str) -> list[Suppression]:
    doc = read_toml(path)
    for key in doc:
        if _norm_key(key) != "suppress":
            raise UsageError(f"{path}: unknown key {key!r}{_suggest(_norm_key(key), ['suppress'])}")
    entries = _check_type(f"{path}: suppress", doc.get("suppress", []), "array")
    return parse_suppressions(entries, path, os.path.dirname(os.path.abspath(path)))


# --------------------------------------------------------------------------- effective configuration

@dataclass
class Effective:
    """The resolved configuration and where each value came from."""

    file: str | None = None
    table: str = ""
    values: dict[str, Any] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)

    def set(self, key: str, value: Any, source: str) -> None:
        self.values[key] = value
        self.sources[key] = source

    def file_source(self, key: str) -> str:
        rel = os.path.relpath(self.file) if self.file else "?"
        return f"{rel} [{self.table + '.' if self.table else ''}{key}]".replace("[.", "[")


def match_glob(path: str, pattern: str, base: str) -> bool:
    """Match a model path against a glob relative to ``base`` (also tried on the path as given)."""
    absolute = os.path.abspath(path)
    rel = os.path.relpath(absolute, base).replace(os.sep, "/")
    candidates = {path.replace(os.sep, "/"), rel, absolute.replace(os.sep, "/")}
    pat = pattern.replace("**/", "*")  # fnmatch's * already crosses folders
    return any(fnmatch.fnmatch(c, pattern) or fnmatch.fnmatch(c, pat) for c in candidates)


def target_with_options(target: Target, overrides: dict[str, Any]) -> Target:
    """A copy of ``target`` whose options (and current device's options) include ``overrides``."""
    if not overrides:
        return target
    prof = copy.deepcopy(target.profile)
    prof.setdefault("options", {}).update(overrides)
    if target.device:
        prof.setdefault("devices", {}).setdefault(target.device, {}).update(overrides)
    return dataclasses.replace(target, profile=prof)


def effective_config(
    *,
    targets: list[str],
    select: list[str],
    ignore: list[str],
    shapes: list[str],
    config_path: str | None,
    repo_root: str | None,
    models: list[str] | None = None,
    fail_level: str | None = None,
    baseline: str | None = None,
    precision: str | None = None,
    input_ranges: list[str] | None = None,
    source_root: str | None = None,
    confirm: bool | None = None,
) -> Effective:
    """The effective options: the command line's values over the configuration file's over defaults."""
    eff = Effective()
    conf = _read_configuration(eff, config_path, models)
    base = os.path.dirname(eff.file) if eff.file else os.getcwd()
    _selection(eff, conf, targets, select, ignore, fail_level)
    _severities(eff, conf)
    _target_options(eff, conf, precision, input_ranges or [])
    _shape_profiles(eff, conf, shapes, base)
    _baseline_and_suppressions(eff, conf, baseline, base)
    _confirm(eff, conf, confirm)
    eff.set("root", globals()["repo_root"](repo_root), "command line --repo-root" if repo_root else
            "default (git root or working directory)")
    _source_root(eff, conf, source_root, base)
    return eff


def _confirm(eff: Effective, conf: dict[str, Any], flag: bool | None) -> None:
    """``[confirm]``: whether models are run on the installed engines after the rules, and how."""
    from graphlint.confirm.options import parse

    table = conf.get("confirm", {})
    enabled, opts = parse(table, eff.file_source("confirm") if table else "confirm")
    if flag is not None:
        eff.set("confirm", flag, "command line --confirm")
    else:
        eff.set("confirm", enabled, eff.file_source("confirm") if "enabled" in table else "default")
    eff.values["_confirm"] = opts


def _source_root(eff: Effective, conf: dict[str, Any], source_root: str | None, base: str) -> None:
    """Where findings' Python source files are looked for (graphlint.analysis.origins)."""
    if source_root:
        eff.set("source-root", os.path.abspath(source_root), "command line --source-root")
    elif "source-root" in conf:
        eff.set("source-root", os.path.normpath(os.path.join(base, conf["source-root"])),
                eff.file_source("source-root"))
    else:
        eff.set("source-root", eff.values["root"], "default (the root)")


def _read_configuration(eff: Effective, config_path: str | None, models: list[str] | None) -> dict[str, Any]:
    """The configuration file's graphlint table, its keys normalised and checked (empty without a file)."""
    if config_path:
        if not os.path.isfile(config_path):
            raise UsageError(f"configuration file {config_path!r} does not exist")
        eff.file = os.path.abspath(config_path)
    else:
        starts = [os.path.dirname(os.path.abspath(m)) for m in (models or [])[:1]] + [os.getcwd()]
        eff.file = find_config(starts)
    table: dict[str, Any] = {}
    if eff.file:
        doc = read_toml(eff.file)
        found, eff.table = _table_of(eff.file, doc)
        if found is None:
            raise UsageError(f"{eff.file}: no [tool.graphlint] table")
        table = found
    conf: dict[str, Any] = {}
    for key, value in table.items():
        k = ALIASES.get(_norm_key(key), _norm_key(key))
        if k not in TOP_KEYS:
            full = f"{eff.table}.{key}" if eff.table else key
            raise UsageError(f"{eff.file}: unknown key {full!r}{_suggest(k, list(TOP_KEYS))}")
        conf[k] = _check_type(f"{eff.file}: {key}", value, TOP_KEYS[k])
    return conf


def _pick(eff: Effective, conf: dict[str, Any], key: str, cli_value: Any, cli_flag: str, default: Any) -> None:
    if cli_value:
        eff.set(key, cli_value, f"command line {cli_flag}")
    elif key in conf:
        eff.set(key, conf[key], eff.file_source(key))
    else:
        eff.set(key, default, "default")


def _selection(eff: Effective, conf: dict[str, Any], targets: list[str], select: list[str], ignore: list[str],
               fail_level: str | None) -> None:
    """Targets, rule selection and the fail level, each checked."""
    from graphlint.target import resolve

    _pick(eff, conf, "target", list(targets), "--target", [])
    if not eff.values["target"]:
        eff.sources["target"] += " (trt for .onnx, openvino for .xml)"
    for spec in eff.values["target"]:
        resolve(spec)  # unknown targets fail here, naming the spec
    _pick(eff, conf, "select", list(select), "--select", [])
    _pick(eff, conf, "ignore", list(ignore), "--ignore", [])
    rules = load_rules()
    for key in ("select", "ignore"):
        if eff.file and eff.sources[key] == eff.file_source(key):
            for sel in eff.values[key]:
                try:
                    select_rules(rules, [sel], None)
                except UsageError:
                    raise UsageError(f"{eff.file}: {key} {sel!r} matches no rule"
                                     f"{_suggest(sel, _rule_words(), SEE_RULES)}") from None
    _pick(eff, conf, "fail-level", fail_level, "--fail-level", "error")
    try:
        Severity.parse(eff.values["fail-level"])
    except ValueError as e:
        raise UsageError(f"{eff.sources['fail-level']}: {e}") from None


def _severities(eff: Effective, conf: dict[str, Any]) -> None:
    """Severity overrides: rule id or name -> severity."""
    rules = load_rules()
    overrides: dict[str, Severity] = {}
    for key, value in conf.get("severity", {}).items():
        rule = find_rule(key)
        if rule is None:
            known = [r.id for r in rules] + [r.name for r in rules]
            raise UsageError(f"{eff.file}: severity: no rule {key!r}{_suggest(key, known, SEE_RULES)}")
        if not isinstance(value, str):
            raise UsageError(f"{eff.file}: severity.{key}: expected info, warning or error")
        try:
            overrides[rule.id] = Severity.parse(value)
        except ValueError as e:
            raise UsageError(f"{eff.file}: severity.{key}: {e}") from None
    eff.set("severity", overrides, eff.file_source("severity") if overrides else "default")


def _target_options(eff: Effective, conf: dict[str, Any], precision: str | None, input_ranges: list[str]) -> None:
    """Per-target options, checked against the options target profiles define; ``--precision``
    and ``--input-range`` on top, for every target."""
    from graphlint.target import target_names

    types = _target_option_types()
    topts: dict[str, dict[str, Any]] = {}
    for name, table_ in conf.get("target-options", {}).items():
        tname = name.split("@")[0].lower()
        if tname not in target_names():
            raise UsageError(f"{eff.file}: target-options: unknown target {name!r}"
                             f"{_suggest(tname, target_names())}")
        if not isinstance(table_, dict):
            raise UsageError(f"{eff.file}: target-options.{name}: expected a table")
        for key, value in table_.items():
            k = _norm_key(key)
            if k not in types:
                raise UsageError(f"{eff.file}: target-options.{name}: unknown option {key!r}"
                                 f"{_suggest(k, list(types))}")
            want = types[k]
            if type(value) is not want and not (want is float and isinstance(value, int)):
                raise UsageError(f"{eff.file}: target-options.{name}.{key}: expected {want.__name__}, "
                                 f"got {type(value).__name__}")
            topts.setdefault(name.lower(), {})[k.replace("-", "_")] = value
    from_cli = _cli_target_options(precision, input_ranges)
    for name in (target_names() if from_cli else []):  # the command line applies to every target
        merged = topts.setdefault(name, {})
        ranges = {**merged.get("input_ranges", {}), **from_cli.get("input_ranges", {})}
        merged.update(from_cli)
        if ranges:
            merged["input_ranges"] = ranges
    source = "command line" if from_cli else eff.file_source("target-options") if topts else "default"
    eff.set("target-options", topts, source)


def _shape_profiles(eff: Effective, conf: dict[str, Any], shapes: list[str], base: str) -> None:
    """Shape profiles: per model glob from the file, the command line's on top (for every model)."""
    globbed: list[tuple[str, dict[str, Profile]]] = []
    for glob, specs in conf.get("shapes", {}).items():
        specs = _check_type(f"{eff.file}: shapes.{glob!r}", specs, "list")
        try:
            globbed.append((glob, parse_profiles(specs)))
        except UsageError as e:
            raise UsageError(f"{eff.file}: shapes.{glob!r}: {e}") from None
    eff.set("shapes", {g: [_profile_text(p) for p in profs.values()] for g, profs in globbed},
            eff.file_source("shapes") if globbed else "default")
    cli_shapes = parse_profiles(shapes)
    if cli_shapes:
        eff.set("shapes (all models)", [_profile_text(p) for p in cli_shapes.values()], "command line --shapes")
    eff.values["_shape_globs"] = (globbed, cli_shapes, base)


def _baseline_and_suppressions(eff: Effective, conf: dict[str, Any], baseline: str | None, base: str) -> None:
    """The baseline and suppressions (paths relative to the configuration file)."""
    if baseline:
        eff.set("baseline", baseline, "command line --baseline")
    elif "baseline" in conf:
        eff.set("baseline", os.path.normpath(os.path.join(base, conf["baseline"])), eff.file_source("baseline"))
    else:
        eff.set("baseline", None, "default (none)")
    supp: list[Suppression] = []
    supp_file = None
    if "suppressions" in conf:
        supp_file = os.path.normpath(os.path.join(base, conf["suppressions"]))
        if not os.path.isfile(supp_file):
            raise UsageError(f"{eff.file_source('suppressions')}: suppression file {supp_file!r} does not exist")
        eff.sources["suppressions"] = eff.file_source("suppressions")
    elif os.path.isfile(os.path.join(base, SUPPRESSIONS_NAME)):
        supp_file = os.path.join(base, SUPPRESSIONS_NAME)
        eff.sources["suppressions"] = f"found next to {'the configuration' if eff.file else 'the working directory'}"
    else:
        eff.sources["suppressions"] = "default (none)"
    eff.values["suppressions"] = supp_file
    if supp_file:
        supp.extend(load_suppression_file(supp_file))
    if "suppress" in conf:
        inline = parse_suppressions(conf["suppress"], eff.file_source("suppress"), base)
        supp.extend(inline)
        eff.set("suppress", [f"{s.rule} model={s.model} node={s.node}: {s.reason}" for s in inline],
                eff.file_source("suppress"))
    eff.values["_suppressions"] = supp


def _profile_text(p: Profile) -> str:
    dims = [("x".join(map(str, s)) or "scalar") for s in p.shapes()]
    return f"{p.name}:{dims[0]}" if p.min == p.opt == p.max else f"{p.name}:{','.join(dims)}"


def _per_model(eff: Effective):
    """The per-model hook LintOptions.per_model: shape profiles by glob and per-target options."""
    globbed, cli_shapes, base = eff.values["_shape_globs"]
    topts: dict[str, dict[str, Any]] = eff.values["target-options"]

    def hook(path: str, target: Target) -> tuple[Target, dict[str, Any]]:
        extra: dict[str, Any] = {}
        if globbed:
            profiles: dict[str, Profile] = {}
            for glob, profs in globbed:
                if match_glob(path, glob, base):
                    profiles.update(profs)
            profiles.update(cli_shapes)
            extra["shapes"] = profiles
        overrides = dict(topts.get(target.name, {}))
        overrides.update(topts.get(f"{target.name}@{target.version}", {}))
        return target_with_options(target, overrides), extra

    return hook


def options_from(eff: Effective) -> LintOptions:
    opts = LintOptions(
        targets=list(eff.values["target"]),
        select=list(eff.values["select"]),
        ignore=list(eff.values["ignore"]),
        severity_overrides=dict(eff.values["severity"]),
        root=eff.values["root"],
        source_root=eff.values["source-root"],
        fail_level=Severity.parse(eff.values["fail-level"]).label,
        baseline=eff.values["baseline"],
    )
    opts.rule_options["shapes"] = eff.values["_shape_globs"][1]
    opts.suppressions = list(eff.values["_suppressions"])
    opts.per_model = _per_model(eff)
    opts.confirm = eff.values["_confirm"] if eff.values["confirm"] else None
    return opts


def resolve_options(*, targets, select, ignore, shapes, config_path, repo_root: str | None,
                    models: list[str] | None = None, source_root: str | None = None,
                    precision: str | None = None, input_ranges: list[str] | None = None,
                    confirm: bool | None = None) -> LintOptions:
    return options_from(effective_config(targets=targets, select=select, ignore=ignore, shapes=shapes,
                                         config_path=config_path, repo_root=repo_root, models=models,
                                         source_root=source_root, precision=precision, input_ranges=input_ranges,
                                         confirm=confirm))


def parse_input_range(text: str) -> tuple[str, list[float]]:
    """``NAME:LO,HI`` (``--input-range pixel_values:-3,3``) -> (name, [lo, hi])."""
    name, sep, rest = text.rpartition(":")
    parts = rest.split(",")
    try:
        lo, hi = (float(p) for p in parts) if len(parts) == 2 else (None, None)
    except ValueError:
        lo = hi = None
    if not sep or not name or lo is None or hi is None or not lo <= hi:
        raise UsageError(f"--input-range {text!r}: expected NAME:LO,HI with LO <= HI (e.g. pixel_values:-3,3)")
    return name, [lo, hi]


def _cli_target_options(precision: str | None, input_ranges: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if precision:
        out["precision"] = precision
    if input_ranges:
        out["input_ranges"] = dict(parse_input_range(t) for t in input_ranges)
    return out


# --------------------------------------------------------------------------- graphlint config

def render_effective(eff: Effective, fmt: str = "text") -> str:
    public = {k: v for k, v in eff.values.items() if not k.startswith("_")}
    if fmt == "json":
        doc = {"file": eff.file, "values": {k: {"value": _jsonable(v), "source": eff.sources.get(k, "")}
                                            for k, v in public.items()}}
        return json.dumps(doc, indent=2) + "\n"
    lines = [f"# configuration file: {eff.file + (' [' + eff.table + ']' if eff.table else '') if eff.file else 'none'}"]
    rows = [(k, json.dumps(_jsonable(v)), eff.sources.get(k, "")) for k, v in public.items()]
    width = max(len(k) for k, _, _ in rows)
    vwidth = min(60, max(len(v) for _, v, _ in rows))
    for k, v, src in rows:
        lines.append(f"{k:<{width}} = {v:<{vwidth}}  # {src}")
    return "\n".join(lines) + "\n"


def _jsonable(v: Any) -> Any:
    if isinstance(v, Severity):
        return v.label
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    return v
