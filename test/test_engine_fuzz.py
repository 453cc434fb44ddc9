"""Fuzzing the model-file reader and the engine through ``bondsim-ros simulate``.

Random mutations of the packaged YAML models (test/data/models and the example in
docs/engine.md) are simulated in-process for a short time. Every outcome must be a success
(exit 0, CSV written) or a clean refusal (exit 2, a message, no CSV): any other exception, a
traceback on stderr or a case that takes longer than its time bound fails the test.

Bounded and seeded: BONDSIM_FUZZ_CASES (default 12) cases from BONDSIM_FUZZ_SEED (default 15);
``BONDSIM_FUZZ_CASES=500 pytest test/test_engine_fuzz.py`` for a longer run.
"""
import copy
import os
import random
import re
import signal
from pathlib import Path

import pytest
import yaml

from bondsim_ros.cli import main

HERE = Path(__file__).parent
CASES = int(os.environ.get("BONDSIM_FUZZ_CASES", "12"))
SEED = int(os.environ.get("BONDSIM_FUZZ_SEED", "15"))
CASE_SECONDS = 120  # a first numba compile of a new structure takes a few seconds

# values a careless or hostile user might put anywhere
ODD_VALUES = [
    0, -1, 1, 2.5, -1e-300, 1e308, 1e400, float("nan"), "nan", "inf", "", "x", None, True, [], {}, [1, 2],
    {"type": "I"}, "1/0", "q**10**10", "__import__('os').getcwd()", "t", "k", "in_", "out", "self.p",
    "Piecewise((1, t < 0.01), (0, True))", "sin(", "1e999", "a.b.c", 10 ** 20, "-k", "p/0", "☃", "sqrt(-1)", "log(0)",
]
TYPES = ["I", "C", "R", "Se", "Sf", "TF", "GY", "EffortJunction", "FlowJunction", "0", "1", "Input", "Sum",
         "Gain", "Function", "Integrator", "Derivative", "PID", "Node", "Recorder", "Step", "Ramp", "Sine",
         "Constant", "Component", "Bogus"]


def corpus() -> list:
    texts = [(p.name, p.read_text()) for p in sorted((HERE / "data" / "models").glob("*.yaml"))]
    engine_md = (HERE.parent / "docs" / "engine.md").read_text()
    for k, block in enumerate(re.findall(r"```yaml\n(.*?)```", engine_md, re.S)):
        if block.lstrip().startswith("model:"):
            texts.append((f"engine_md_{k}.yaml", block))
    return texts


def _nodes(tree, path=()):
    """Every (container, key) slot in a parsed YAML tree."""
    if isinstance(tree, dict):
        for k, v in tree.items():
            yield tree, k
            yield from _nodes(v, path + (k,))
    elif isinstance(tree, list):
        for i, v in enumerate(tree):
            yield tree, i
            yield from _nodes(v, path + (i,))


def mutate_tree(data, rng):
    data = copy.deepcopy(data)
    slots = list(_nodes(data))
    if not slots:
        return data
    container, key = rng.choice(slots)
    op = rng.randrange(6)
    if op == 0:  # odd value
        container[key] = copy.deepcopy(rng.choice(ODD_VALUES))
    elif op == 1:  # delete
        del container[key]
    elif op == 2 and isinstance(container, dict):  # another element type
        container["type"] = rng.choice(TYPES)
    elif op == 3:  # copy one slot's value onto another
        other, okey = rng.choice(slots)
        container[key] = copy.deepcopy(other[okey])
    elif op == 4 and isinstance(container, list):  # extra entry
        container.append(copy.deepcopy(rng.choice(container) if container else rng.choice(ODD_VALUES)))
    elif op == 5 and isinstance(container[key], list) and len(container[key]) >= 2:  # swap (bond ends)
        container[key][0], container[key][1] = container[key][1], container[key][0]
    else:
        container[key] = copy.deepcopy(rng.choice(ODD_VALUES))
    return data


def mutate_text(text, rng):
    lines = text.splitlines()
    op = rng.randrange(4)
    i = rng.randrange(len(lines))
    if op == 0:
        del lines[i]
    elif op == 1:
        lines.insert(i, lines[rng.randrange(len(lines))])
    elif op == 2:
        line = lines[i]
        j = rng.randrange(len(line) + 1)
        lines[i] = line[:j] + rng.choice(["{", "]", ":", " ", "-", "'", "#", "\t", "*", "&a ", "*a",
                                          "!!python/name:os.system "]) + line[j + 1:]
    else:
        return text[: rng.randrange(len(text))]
    return "\n".join(lines) + "\n"


def make_cases(n, seed):
    rng = random.Random(seed)
    texts = corpus()
    cases = []
    for k in range(n):
        name, text = rng.choice(texts)
        if rng.random() < 0.3:
            mutated = mutate_text(text, rng)
        else:
            data = yaml.safe_load(text)
            for _ in range(rng.randint(1, 3)):
                data = mutate_tree(data, rng)
            try:
                mutated = yaml.safe_dump(data, allow_unicode=True, sort_keys=False)
            except yaml.YAMLError:
                mutated = mutate_text(text, rng)
        cases.append((f"{k:04d}_{name}", mutated))
    return cases


class CaseTimeout(BaseException):
    """Not an Exception: nothing in the code under test may swallow it."""


@pytest.mark.parametrize("name, text", make_cases(CASES, SEED), ids=lambda v: v if len(v) < 40 else None)
def test_mutated_model_is_simulated_or_refused_cleanly(tmp_path, capsys, name, text):
    path = tmp_path / name
    path.write_text(text)
    out = tmp_path / "out.csv"

    def fire(signum, frame):
        raise CaseTimeout(f"{name}: no answer within {CASE_SECONDS} s")

    old = signal.signal(signal.SIGALRM, fire)
    signal.alarm(CASE_SECONDS)
    try:
        rc = main(["simulate", str(path), "--t-end", "0.05", "--dt-out", "0.01", "-q", "--csv", str(out)])
    except CaseTimeout as exc:
        pytest.fail(f"hang: {exc}\n--- model ---\n{text}")
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert rc in (0, 2), (rc, err, text)
    if rc == 0:
        assert out.exists()
    else:
        assert err.startswith("bondsim-ros simulate: error: ") and not out.exists(), err


LAW_TOKENS = ["q", "t", "k", "1", "0", "2.5", "1e308", "10", "+", "-", "*", "/", "**", "%", "^", "(", ")", ",",
              "<", ">=", "==", "&", "|", "~", "not", "and", "sin(", "exp(", "sqrt(", "Piecewise((", "clip(", "max(",
              "True", "pi", "E", ".", "[", "]", "'", "lambda", ":", "__import__", "open(", "x", "=", "if", "else",
              "for", "in", "{", "}", "\\", "@", "//", "1j", "0x1f"]


def test_random_law_text_is_read_or_refused_cleanly():
    """Random token strings through the law parser: a sympy expression or a LawError, never
    another exception; each in bounded time (the whole run is bounded by the alarm)."""
    import sympy as sp

    from bondsim_ros.bondgraph.laws import LawError, parse_law

    rng = random.Random(SEED)
    names = {n: sp.Symbol(n, real=True) for n in ("q", "t", "k")}
    outcomes = {"ok": 0, "refused": 0}

    def fire(signum, frame):
        raise CaseTimeout("law parser took longer than 60 s")

    old = signal.signal(signal.SIGALRM, fire)
    signal.alarm(60)
    try:
        for _ in range(CASES * 100):
            text = " ".join(rng.choice(LAW_TOKENS) for _ in range(rng.randint(1, 12)))
            try:
                expr = parse_law(text, names)
            except LawError:
                outcomes["refused"] += 1
                continue
            assert isinstance(expr, sp.Expr), (text, expr)
            assert expr.free_symbols <= set(names.values()), text
            outcomes["ok"] += 1
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    assert outcomes["ok"] > 0 and outcomes["refused"] > 0, outcomes


# ---------------------------------------------------------------- structured hostile models
# Classes of model files that once ended in a traceback or a hang: keys that are not names,
# nesting past any limit, sources that conflict or leave nothing to integrate, long chains
# (with values given as parameters too), garbage values in a valid structure.
KEY_VALUES = [["a"], {"a": 1}, 1, 2.5, True, None, "", "a b", "☃", [], {}]
ELEMENT_SPECS = ["{type: I, inertia: %s}", "{type: C, capacitance: %s}", "{type: R, resistance: %s}",
                 "{type: Se, effort: %s}", "{type: Sf, flow: %s}"]


def _ladder(rng, n, param):
    kinds = rng.choice(["R", "IRC", "RC", "I", "CR"])
    lines = ["model: chain"] + (["parameters: {k: 1.5}"] if param else [])
    lines += ["components:", "  E: {type: Se, effort: \"sin(t)\"}"]
    bonds = ["  - [E, j0]"]
    for k in range(n):
        kind = "IRC".index(kinds[k % len(kinds)])
        lines.append(f"  j{k}: {{type: {'EffortJunction' if k % 2 == 0 else 'FlowJunction'}}}")
        lines.append(f"  x{k}: " + ELEMENT_SPECS[kind] % ("k" if param else f"{1 + (k % 5) / 4:g}"))
        bonds.append(f"  - [j{k}, x{k}]")
        if k + 1 < n:
            bonds.append(f"  - [j{k}, j{k + 1}]")
    if rng.random() < 0.7:
        lines.append("  load: {type: I, inertia: 1.0}")
        bonds.append(f"  - [j{n - 1}, load]")
    return "\n".join(lines + ["bonds:"] + bonds) + "\n"


def structured_case(rng) -> tuple:
    kind = rng.choice(["key", "deep_definitions", "deep_yaml", "sources", "chain", "garbage"])
    if kind == "key":
        data = yaml.safe_load(_ladder(rng, rng.randint(1, 5), rng.random() < 0.5))
        section = rng.choice(["components", "parameters", "top"])
        target = data if section == "top" else data.setdefault(section, {}) or {}
        if section == "parameters":
            data["parameters"] = target
        bad = copy.deepcopy(rng.choice(KEY_VALUES))
        text = yaml.safe_dump(data, sort_keys=False)
        # PyYAML cannot dump a list or mapping as a key: write that line by hand
        key = yaml.safe_dump(bad, default_flow_style=True).strip().replace("\n...", "") if bad is not None else "~"
        if section == "top":
            text += f"{key}: 1\n"
        elif section == "components":
            text = text.replace("components:\n", f"components:\n  {key}: {{type: I, inertia: 1.0}}\n", 1)
        else:
            text = text.replace("parameters:", "parameters:\n  " + f"{key}: 2.0", 1) if "parameters:" in text \
                else text.replace("model: chain\n", f"model: chain\nparameters:\n  {key}: 2.0\n", 1)
        return kind, text
    if kind == "deep_definitions":
        depth = rng.choice([rng.randint(2, 99), rng.randint(100, 2500)])
        lines = ["model: deep", "definitions:"]
        for i in range(depth - 1):
            lines.append(f"  D{i}: {{ports: {{p: in}}, components: {{x: {{type: D{i + 1}}}}}, "
                         f"bonds: [[self.p, x.p]]}}")
        lines.append(f"  D{depth - 1}: {{ports: {{p: in}}, components: {{m: {{type: I, inertia: 1.0}}}}, "
                     f"bonds: [[self.p, m]]}}")
        lines += ["components:", "  E: {type: Se, effort: 1.0}", "  d: {type: D0}", "bonds: [[E, d.p]]"]
        return kind, "\n".join(lines) + "\n"
    if kind == "deep_yaml":
        depth = rng.randint(50, 3000)
        opener, closer = rng.choice([("[", "]"), ("{a: ", "}")])
        value = opener * depth + "1" + closer * depth
        return kind, rng.choice([f"model: m\ncomponents:\n  a: {{type: I, inertia: {value}}}\n",
                                 f"model: m\nparameters: {{k: {value}}}\ncomponents: {{}}\n",
                                 f"model: m\nbonds: {value}\n"])
    if kind == "sources":
        n_junctions = rng.randint(1, 3)
        lines = ["model: sources", "components:"]
        bonds = []
        for j in range(n_junctions):
            lines.append(f"  j{j}: {{type: {rng.choice(['EffortJunction', 'FlowJunction'])}}}")
            if j:
                bonds.append(f"  - [j{j - 1}, j{j}]")
        for k in range(rng.randint(1, 5)):
            spec = rng.choice(ELEMENT_SPECS) % rng.choice(["1.0", "2", "-1", "0", "sin(t)"])
            lines.append(f"  e{k}: {spec}")
            j = rng.randrange(n_junctions)
            bonds.append(f"  - [e{k}, j{j}]" if ("Se" in spec or "Sf" in spec) else f"  - [j{j}, e{k}]")
        return kind, "\n".join(lines + ["bonds:"] + bonds) + "\n"
    if kind == "chain":
        return kind, _ladder(rng, rng.choice([rng.randint(1, 40), rng.randint(100, 600)]), rng.random() < 0.5)
    data = yaml.safe_load(_ladder(rng, rng.randint(1, 8), rng.random() < 0.5))
    for _ in range(rng.randint(1, 3)):
        data = mutate_tree(data, rng)
    return kind, yaml.safe_dump(data, allow_unicode=True, sort_keys=False)


def make_structured_cases(n, seed):
    rng = random.Random(seed)
    return [(f"{k:04d}_{kind}", text) for k in range(n) for kind, text in [structured_case(rng)]]


@pytest.mark.parametrize("name, text", make_structured_cases(CASES * 2, SEED + 1),
                         ids=lambda v: v if len(v) < 40 else None)
def test_structured_hostile_model_is_built_or_refused_cleanly(tmp_path, name, text):
    """The engine alone (read, equations, elimination, the check that something is left to
    integrate): a reduced model or a ModelError, within the time bound, never another
    exception."""
    from bondsim_ros.bondgraph.core import ModelError, locate
    from bondsim_ros.bondgraph.equations import build_dae
    from bondsim_ros.bondgraph.reduce import reduce_dae, require_unknowns
    from bondsim_ros.bondgraph.yamlmodel import load_model

    path = tmp_path / f"{name}.yaml"
    path.write_text(text)

    def fire(signum, frame):
        raise CaseTimeout(f"{name}: no answer within {CASE_SECONDS} s")

    old = signal.signal(signal.SIGALRM, fire)
    signal.alarm(CASE_SECONDS)
    try:
        model = load_model(path)
        try:
            red = reduce_dae(build_dae(model))
            require_unknowns(red)
        except ModelError as exc:
            exc = locate(model, exc)
            assert exc.where.startswith(str(path)), exc  # named by file (and line, where known)
            return
        assert red.variables
        assert len(red.equations) == len(red.variables)
    except ModelError as exc:
        assert str(exc).startswith(str(path)), exc
        assert "\n" not in str(exc)
    except CaseTimeout as exc:
        pytest.fail(f"hang: {exc}\n--- model ---\n{text[:2000]}")
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


@pytest.mark.parametrize("name, text", make_structured_cases(CASES // 2, SEED + 2),
                         ids=lambda v: v if len(v) < 40 else None)
def test_structured_hostile_model_through_simulate(tmp_path, capsys, name, text):
    """The same classes through `bondsim-ros simulate`: exit 0 and a CSV, or exit 2 and one
    error line; no traceback, no hang."""
    test_mutated_model_is_simulated_or_refused_cleanly(tmp_path, capsys, name, text)
