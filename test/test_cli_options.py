"""An option that takes one value, given twice, is refused by name for every sub-command: argparse
alone keeps the last one and drops the other silently (`fit --params kv --params kw` fitted kw
only, `simulate --csv a.csv --csv b.csv` wrote b.csv only). Repeatable options (--param) and
flags given twice stay accepted."""
import argparse

import pytest

from bondsim_ros.cli import build_parser, main

REPEATABLE = (argparse._AppendAction, argparse._AppendConstAction, argparse._ExtendAction)


def _single_valued():
    """(command, action) of every option of every sub-command that takes a value once."""
    out = []
    for command, parser in build_parser().command_parsers.items():
        for action in parser._actions:
            if action.option_strings and action.nargs != 0 and not isinstance(action, REPEATABLE):
                out.append((command, action))
    return out


SINGLE = _single_valued()


def _values(action):
    choices = list(action.choices or [])
    return (str(choices[0]), str(choices[-1])) if choices else ("1", "2")


def test_the_options_are_found():
    commands = {command for command, _ in SINGLE}
    assert {"simulate", "fit", "sweep", "bag2csv", "draw", "cache"} <= commands, commands
    assert ("simulate", "--csv") in {(c, a.option_strings[-1]) for c, a in SINGLE}


@pytest.mark.parametrize("command,action", SINGLE, ids=[f"{c} {a.option_strings[-1]}" for c, a in SINGLE])
def test_a_single_valued_option_given_twice_is_refused_by_name(capsys, command, action):
    first, second = _values(action)
    options = action.option_strings
    with pytest.raises(SystemExit) as stop:
        build_parser(command).parse_args([command, options[0], first, options[-1], second])
    err = capsys.readouterr().err.strip().splitlines()
    assert stop.value.code == 2
    assert err[-1].startswith(f"bondsim-ros {command}: error: argument {'/'.join(options)}: given twice"), err


@pytest.mark.parametrize("argv,option", [
    (["simulate", "dc_motor", "--csv", "a.csv", "--csv", "b.csv"], "--csv"),
    (["simulate", "dc_motor", "--csv=a.csv", "--cs", "b.csv"], "--csv"),  # = form, then an abbreviation
    (["fit", "dc_motor", "d.csv", "--params", "kv", "--params", "kw", "--outputs", "w"], "--params"),
    (["fit", "dc_motor", "d.csv", "--params", "kv", "--outputs", "w", "--json", "j1.json", "--json", "j2.json"],
     "--json"),
    (["sweep", "dc_motor", "--outputs", "X", "--outputs", "Y"], "--outputs"),
    (["bag2csv", "bag", "-o", "a.csv", "--output", "b.csv"], "-o/--output"),
])
def test_the_command_stops_before_any_work(tmp_path, monkeypatch, capsys, argv, option):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as stop:
        main(argv)
    err = capsys.readouterr().err.strip().splitlines()
    assert stop.value.code == 2
    assert f"error: argument {option}: given twice" in err[-1], err
    assert list(tmp_path.iterdir()) == []  # no output, neither the first nor the last


def test_flags_and_repeatable_options_may_come_again():
    args = build_parser("simulate").parse_args(["simulate", "m", "-q", "--quiet", "--no-cache", "--no-cache",
                                                "--param", "a=1", "--param", "b=2"])
    assert args.quiet and args.no_cache and args.param == ["a=1", "b=2"]
    assert not any(name.startswith("_") for name in vars(args))  # parsing's own record is not left in
